#include "linux/seccomp_net.h"

#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <vector>

namespace runboard::seccomp {
namespace {

#if defined(__x86_64__)
constexpr uint32_t kArch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
constexpr uint32_t kArch = AUDIT_ARCH_AARCH64;
#else
constexpr uint32_t kArch = 0;  // no filter for this architecture: the jail refuses to start runs
#endif

// Declared here because the distribution's headers may predate the kernel (values from the UAPI).
constexpr int kTcpFastOpen = 23;
constexpr int kTcpFastOpenConnect = 30;
constexpr unsigned kPidfdThread = O_EXCL;  // PIDFD_THREAD, Linux 6.9
constexpr uint32_t kX32SyscallBit = 0x40000000;
constexpr unsigned long kWaitKillableRecv = 1UL << 5;  // SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV, Linux 5.19
#ifndef SECCOMP_IOCTL_NOTIF_ID_VALID
#define SECCOMP_IOCTL_NOTIF_ID_VALID SECCOMP_IOW(2, __u64)
#endif

std::string Errno(const std::string& what) { return what + ": " + std::strerror(errno); }

// A BPF program with named jump targets (classic BPF jumps are relative and forward only).
class Program {
 public:
  void Load(uint32_t offset) { code_.push_back(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offset)); }
  void And(uint32_t k) { code_.push_back(BPF_STMT(BPF_ALU | BPF_AND | BPF_K, k)); }
  void Return(uint32_t action) { code_.push_back(BPF_STMT(BPF_RET | BPF_K, action)); }
  // Jumps to `label` when the accumulator matches k (op: BPF_JEQ, BPF_JGE, BPF_JSET), else falls through.
  void JumpIf(uint16_t op, uint32_t k, const std::string& label) {
    jumps_.push_back({code_.size(), label});
    code_.push_back(BPF_JUMP(BPF_JMP | op | BPF_K, k, 0, 0));
  }
  void Label(const std::string& name) { labels_[name] = code_.size(); }
  // The finished program, or an empty one if a jump is backward or too long.
  std::vector<sock_filter> Finish() {
    for (const auto& j : jumps_) {
      auto it = labels_.find(j.label);
      if (it == labels_.end() || it->second <= j.at || it->second - j.at - 1 > 255) return {};
      code_[j.at].jt = static_cast<uint8_t>(it->second - j.at - 1);
    }
    return code_;
  }

 private:
  struct Jump {
    size_t at;
    std::string label;
  };
  std::vector<sock_filter> code_;
  std::vector<Jump> jumps_;
  std::map<std::string, size_t> labels_;
};

// The low 32 bits of syscall argument i: the kernel reads these arguments as int/unsigned, so the upper
// half (which a caller may fill with anything) must not decide. Both supported ABIs are little-endian.
constexpr uint32_t Arg(int i) { return offsetof(seccomp_data, args) + 8 * i; }

constexpr uint32_t Refuse(int e) { return SECCOMP_RET_ERRNO | (e & SECCOMP_RET_DATA); }

std::vector<sock_filter> BuildFilter(const NetPolicy& policy) {
  using Cases = std::initializer_list<std::pair<uint32_t, const char*>>;
  Program p;
  // Jumps to the label of the first case whose value the accumulator holds; else falls through.
  auto jumpTable = [&p](Cases cases) {
    for (const auto& [value, label] : cases) p.JumpIf(BPF_JEQ, value, label);
  };
  // The same on the word at `offset`, loaded first.
  auto dispatch = [&](uint32_t offset, Cases cases) {
    p.Load(offset);
    jumpTable(cases);
  };
  // A block `label` that allows the call when `offset` holds one of `allowed`, and refuses it otherwise.
  auto allowOnly = [&](const char* label, uint32_t offset, std::initializer_list<uint32_t> allowed) {
    p.Label(label);
    p.Load(offset);
    for (uint32_t value : allowed) p.JumpIf(BPF_JEQ, value, "allow");
    p.Return(Refuse(EACCES));
  };

  dispatch(offsetof(seccomp_data, arch), {{kArch, "native"}});
  p.Return(SECCOMP_RET_KILL_PROCESS);
  p.Label("native");
  p.Load(offsetof(seccomp_data, nr));
#if defined(__x86_64__)
  p.JumpIf(BPF_JGE, kX32SyscallBit, "kill");
#endif
  jumpTable({{__NR_socket, "socket"},
             {__NR_sendto, "sendto"},
             {__NR_sendmmsg, "sendmmsg"},
             {__NR_sendmsg, "sendmsg"},
             {__NR_connect, "connect"},
             {__NR_setsockopt, "setsockopt"},
             {__NR_listen, "listen"},
             {__NR_io_uring_setup, "io-uring"},
             {__NR_io_uring_enter, "io-uring"},
             {__NR_io_uring_register, "io-uring"}});
  p.Return(SECCOMP_RET_ALLOW);

  p.Label("socket");
  dispatch(Arg(0), {{AF_UNIX, "allow"}, {AF_NETLINK, "allow"}, {AF_INET, "inet"}, {AF_INET6, "inet"}});
  p.Return(Refuse(EACCES));
  p.Label("inet");
  p.Load(Arg(1));
  p.And(~static_cast<uint32_t>(SOCK_NONBLOCK | SOCK_CLOEXEC));
  p.JumpIf(BPF_JEQ, SOCK_STREAM, "stream");
  if (policy.udp) p.JumpIf(BPF_JEQ, SOCK_DGRAM, "dgram");
  p.Return(Refuse(EACCES));
  allowOnly("stream", Arg(2), {0, IPPROTO_TCP});
  if (policy.udp) allowOnly("dgram", Arg(2), {0, IPPROTO_UDP});

  // TCP Fast Open would send data without connect(), past what the proxy rules see. In the fallback an
  // address a send names goes to the broker (a filter cannot read it), as connect() does.
  const uint32_t broker = policy.brokerConnect ? SECCOMP_RET_USER_NOTIF : SECCOMP_RET_ALLOW;
  p.Label("sendto");
  p.Load(Arg(3));
  p.JumpIf(BPF_JSET, MSG_FASTOPEN, "deny");
  p.Load(Arg(4));  // the address: a 64-bit pointer, both halves
  p.JumpIf(BPF_JEQ, 0, "sendto-low-0");
  p.Return(broker);
  p.Label("sendto-low-0");
  p.Load(Arg(4) + 4);
  p.JumpIf(BPF_JEQ, 0, "allow");
  p.Return(broker);
  p.Label("sendmsg");
  p.Load(Arg(2));
  p.JumpIf(BPF_JSET, MSG_FASTOPEN, "deny");
  p.Return(broker);
  p.Label("sendmmsg");
  p.Load(Arg(3));
  p.JumpIf(BPF_JSET, MSG_FASTOPEN, "deny");
  p.Return(policy.brokerConnect ? Refuse(ENOSYS) : SECCOMP_RET_ALLOW);
  p.Label("connect");
  p.Return(policy.brokerConnect || policy.brokerAbstract ? SECCOMP_RET_USER_NOTIF : SECCOMP_RET_ALLOW);

  p.Label("setsockopt");
  dispatch(Arg(1), {{IPPROTO_TCP, "tcp-option"}});
  p.Return(SECCOMP_RET_ALLOW);
  p.Label("tcp-option");
  dispatch(Arg(2), {{kTcpFastOpen, "deny"}, {kTcpFastOpenConnect, "deny"}});
  p.Return(SECCOMP_RET_ALLOW);

  p.Label("listen");
  p.Return(SECCOMP_RET_USER_NOTIF);
  p.Label("io-uring");
  p.Return(Refuse(EPERM));
  p.Label("deny");
  p.Return(Refuse(EACCES));
  p.Label("allow");
  p.Return(SECCOMP_RET_ALLOW);
  p.Label("kill");
  p.Return(SECCOMP_RET_KILL_PROCESS);
  return p.Finish();
}

// One byte, with room for one passed fd, as sendmsg and recvmsg take it.
struct FdMessage {
  char byte = 0;
  iovec iov{&byte, 1};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg{};
  FdMessage() {
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
  }
  FdMessage(const FdMessage&) = delete;
  FdMessage& operator=(const FdMessage&) = delete;
};

bool SendFd(int channel, int fd) {
  FdMessage m;
  msghdr& msg = m.msg;
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  memcpy(CMSG_DATA(c), &fd, sizeof fd);
  ssize_t n;
  do n = sendmsg(channel, &msg, MSG_NOSIGNAL);
  while (n < 0 && errno == EINTR);
  return n == 1;
}

// The fd sent over `channel`; -1 at EOF (or a message without one), -2 when nothing is there yet.
int ReceiveFd(int channel) {
  FdMessage m;
  msghdr& msg = m.msg;
  ssize_t n;
  do n = recvmsg(channel, &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
  while (n < 0 && errno == EINTR);
  if (n < 0 && errno == EAGAIN) return -2;
  cmsghdr* c = n > 0 ? CMSG_FIRSTHDR(&msg) : nullptr;
  if (!c || c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) return -1;
  int fd;
  memcpy(&fd, CMSG_DATA(c), sizeof fd);
  return fd;
}

// The fd whose number the child `child` wrote on `channel`, taken from it (pidfd_getfd; the child waits for
// the answer byte); -1 at EOF or when it cannot be taken, -2 when nothing is there yet.
int TakeFd(int channel, pid_t child) {
  int number;
  ssize_t n;
  do n = recv(channel, &number, sizeof number, MSG_DONTWAIT);
  while (n < 0 && errno == EINTR);
  if (n < 0 && errno == EAGAIN) return -2;
  if (n != static_cast<ssize_t>(sizeof number)) return -1;
  int pidfd = static_cast<int>(syscall(SYS_pidfd_open, child, 0));
  int fd = pidfd < 0 ? -1 : static_cast<int>(syscall(SYS_pidfd_getfd, pidfd, number, 0));
  if (pidfd >= 0) close(pidfd);
  char ack = fd >= 0 ? 'y' : 'n';
  if (send(channel, &ack, 1, MSG_NOSIGNAL) != 1 && fd >= 0) {
    close(fd);
    fd = -1;
  }
  return fd;
}

}  // namespace

// The notification names a thread; its own pidfd (Linux 6.9+)
// sees its file table even if it unshared it, older kernels take the thread group's leader.
int PidfdOf(pid_t tid) {
  int fd = static_cast<int>(syscall(SYS_pidfd_open, tid, 0));
  if (fd >= 0 || (errno != EINVAL && errno != ENOENT)) return fd;  // not a leader: EINVAL, ENOENT since 6.9
  fd = static_cast<int>(syscall(SYS_pidfd_open, tid, kPidfdThread));
  if (fd >= 0 || errno != EINVAL) return fd;
  char path[64], buf[1024];
  snprintf(path, sizeof path, "/proc/%d/status", tid);
  int status = open(path, O_RDONLY | O_CLOEXEC);
  if (status < 0) return -1;
  ssize_t n = read(status, buf, sizeof buf - 1);
  close(status);
  const char* tgid = n > 0 ? (buf[n] = 0, strstr(buf, "\nTgid:")) : nullptr;
  if (!tgid) return -1;
  return static_cast<int>(syscall(SYS_pidfd_open, atoi(tgid + 6), 0));
}

std::string ListenBroker::Open() {
  if (kArch == 0) return "no seccomp filter for this architecture (network rules beyond Landlock)";
  int fds[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds) < 0) return Errno("socketpair");
  channel_ = fds[0];
  peer_ = fds[1];
  return "";
}

std::string ListenBroker::ConfineSelf(const NetPolicy& policy) {
  close(channel_);
  channel_ = -1;
  std::vector<sock_filter> code = BuildFilter(policy);
  if (code.empty()) return "seccomp filter: a jump out of range";
  sock_fprog prog{static_cast<unsigned short>(code.size()), code.data()};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) return Errno("prctl(NO_NEW_PRIVS)");
  // A caller waiting for its answer is not woken by other signals once the jail has its call (Linux 5.19):
  // a connect or send the jail made must not be made again by the restarted call.
  const bool brokered = policy.brokerConnect || policy.brokerAbstract;
  unsigned long flags = SECCOMP_FILTER_FLAG_NEW_LISTENER | (brokered ? kWaitKillableRecv : 0);
  int listener = static_cast<int>(syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags, &prog));
  if (listener < 0 && errno == EINVAL && (flags & kWaitKillableRecv))
    listener = static_cast<int>(syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog));
  if (listener < 0) return Errno("seccomp(SET_MODE_FILTER)");
  // With the connect broker sendmsg() is the broker's already, and the broker has no listener yet: the
  // child names the fd and waits until the jail took it (pidfd_getfd) instead of sending it.
  bool sent;
  if (policy.brokerConnect) {
    char ack = 0;
    sent = write(peer_, &listener, sizeof listener) == static_cast<ssize_t>(sizeof listener);
    ssize_t n;
    do n = sent ? read(peer_, &ack, 1) : -1;
    while (n < 0 && errno == EINTR);
    if (sent && ack != 'y') errno = EPERM, sent = false;
  } else {
    sent = SendFd(peer_, listener);
  }
  int saved = errno;
  close(listener);
  close(peer_);
  peer_ = -1;
  errno = saved;
  if (sent) return "";
  // Without namespaces the jail must take the run's sockets (pidfd_getfd), the listener first: where it
  // may not (Yama's kernel.yama.ptrace_scope 2 or 3 for a supervisor that is not root), say so.
  if (policy.brokerConnect)
    return Errno(
        "the jail could not take the network filter's listener from the run (pidfd_getfd; with "
        "kernel.yama.ptrace_scope 2 or 3 only root may, and runs without user namespaces need it)");
  return Errno("passing the seccomp listener to the jail");
}

void ListenBroker::ParentSide() {
  if (peer_ >= 0) close(peer_);
  peer_ = -1;
}

void ListenBroker::Serve(short revents) {
  if (listener_ < 0) {  // the child's message: the notification fd, or EOF if it never got that far
    if (channel_ < 0) return;
    int fd = child_ > 0 ? TakeFd(channel_, child_) : ReceiveFd(channel_);
    if (fd == -2) return;
    listener_ = fd;
    close(channel_);
    channel_ = -1;
    return;
  }
  if (revents & POLLIN) Answer();
  else if (revents & (POLLHUP | POLLERR | POLLNVAL)) {  // no process left that uses the filter
    close(listener_);
    listener_ = -1;
  }
}

void ListenBroker::Answer() {
  // The kernel's structures may be larger than the ones we were compiled with.
  static seccomp_notif_sizes sizes{};
  if (!sizes.seccomp_notif && syscall(SYS_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &sizes) < 0)
    sizes = {sizeof(seccomp_notif), sizeof(seccomp_notif_resp), sizeof(seccomp_data)};
  std::vector<char> reqBuf(std::max<size_t>(sizes.seccomp_notif, sizeof(seccomp_notif)));
  std::vector<char> respBuf(std::max<size_t>(sizes.seccomp_notif_resp, sizeof(seccomp_notif_resp)));
  auto* req = reinterpret_cast<seccomp_notif*>(reqBuf.data());
  auto* resp = reinterpret_cast<seccomp_notif_resp*>(respBuf.data());
  if (ioctl(listener_, SECCOMP_IOCTL_NOTIF_RECV, req) < 0) return;  // the caller is gone (or a signal took it)
  if (IsConnectCall(req->data.nr)) return AnswerConnect(listener_, *req, rules_);
  resp->id = req->id;
  int error = 0;
  int pidfd = req->data.nr == __NR_listen ? PidfdOf(static_cast<pid_t>(req->pid)) : -1;
  if (req->data.nr != __NR_listen) error = ENOSYS;
  else if (pidfd < 0) error = errno == ESRCH ? ESRCH : EPERM;
  // The pid could have been reused between the notification and pidfd_open: only a still pending
  // notification proves the pidfd is the caller's.
  else if (ioctl(listener_, SECCOMP_IOCTL_NOTIF_ID_VALID, &req->id) < 0) error = ESRCH;
  else {
    int sock = static_cast<int>(syscall(SYS_pidfd_getfd, pidfd, static_cast<int>(req->data.args[0]), 0));
    int domain = 0;
    socklen_t len = sizeof domain;
    if (sock < 0) error = errno == EBADF ? EBADF : EPERM;
    else if (getsockopt(sock, SOL_SOCKET, SO_DOMAIN, &domain, &len) < 0) error = errno;
    else if (domain == AF_INET || domain == AF_INET6) error = EACCES;
    else if (listen(sock, static_cast<int>(req->data.args[1])) < 0) error = errno;
    if (sock >= 0) close(sock);
  }
  if (pidfd >= 0) close(pidfd);
  resp->error = -error;
  resp->val = 0;
  resp->flags = 0;
  ioctl(listener_, SECCOMP_IOCTL_NOTIF_SEND, resp);  // ENOENT: the caller was interrupted; it will ask again
}

}  // namespace runboard::seccomp
