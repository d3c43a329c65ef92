#include "linux/seccomp_connect.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <pthread.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "linux/seccomp_net.h"

#ifndef SECCOMP_IOCTL_NOTIF_ID_VALID
#define SECCOMP_IOCTL_NOTIF_ID_VALID SECCOMP_IOW(2, __u64)
#endif

namespace runboard::seccomp {
namespace {

constexpr int kMaxCalls = 64;             // calls answered at once; more wait for none (EAGAIN)
constexpr size_t kMaxData = 1 << 20;      // bytes of one send copied (a stream send is cut there)
constexpr size_t kMaxControl = 64 << 10;  // ancillary data of one sendmsg (the kernel's optmem is smaller)
constexpr size_t kMaxIov = 1024;
constexpr size_t kMaxPassedFds = 253;  // SCM_MAX_FD          // UIO_MAXIOV
constexpr size_t kPathOffset = offsetof(sockaddr_un, sun_path);
std::atomic<int> gCalls{0};

// The layout of struct msghdr as the kernel reads it from a 64-bit caller (both supported ABIs).
struct UserMsghdr {
  uint64_t name;
  int32_t namelen;
  int32_t pad;
  uint64_t iov;
  uint64_t iovlen;
  uint64_t control;
  uint64_t controllen;
  int32_t flags;
};
struct UserIovec {
  uint64_t base;
  uint64_t len;
};

// Copies n bytes at `addr` of the calling thread `tid` into `out`: 0, or the errno to answer.
int ReadMem(pid_t tid, uint64_t addr, void* out, size_t n) {
  if (n == 0) return 0;
  iovec local{out, n}, remote{reinterpret_cast<void*>(addr), n};
  ssize_t got = process_vm_readv(tid, &local, 1, &remote, 1, 0);
  if (got == static_cast<ssize_t>(n)) return 0;
  return got >= 0 || errno == EFAULT ? EFAULT : errno == ESRCH ? ESRCH : EPERM;
}

bool Below(const std::string& path, const std::string& tree) {
  if (tree == "/") return true;
  return path == tree ||
         (path.size() > tree.size() && path.compare(0, tree.size(), tree) == 0 && path[tree.size()] == '/');
}

// The socket `path` names for the caller `tid` (relative: from its working directory), opened O_PATH into
// *out when it is one the run may reach: 0, or the errno to answer. No /proc magic links are followed
// (/proc/self would be the jail's), and the check is of where that very inode lies.
int OpenAllowed(pid_t tid, const std::string& path, const ConnectRules& rules, int* out) {
  int dir = AT_FDCWD;
  if (path.empty()) return ENOENT;
  if (path[0] != '/') {
    char cwd[64];
    snprintf(cwd, sizeof cwd, "/proc/%d/cwd", tid);
    dir = open(cwd, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (dir < 0) return errno == ENOENT ? ESRCH : EACCES;
  }
  open_how how{};
  how.flags = O_PATH | O_CLOEXEC;
  how.resolve = RESOLVE_NO_MAGICLINKS;
  int fd = static_cast<int>(syscall(SYS_openat2, dir, path.c_str(), &how, sizeof how));
  int e = errno;
  if (dir != AT_FDCWD) close(dir);
  if (fd < 0) return e == ELOOP || e == EXDEV ? EACCES : e;
  struct stat st {};
  char link[64], real[4096];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  ssize_t n = fstat(fd, &st) == 0 ? readlink(link, real, sizeof real - 1) : -1;
  int error = 0;
  if (n <= 0 || !S_ISSOCK(st.st_mode)) error = ECONNREFUSED;  // what connecting to a non-socket says
  else {
    std::string where(real, n);
    bool allowed = false;
    for (const auto& t : rules.trees) allowed = allowed || Below(where, t);
    for (const auto& s : rules.sockets) allowed = allowed || where == s;
    if (!allowed) error = EACCES;
  }
  if (error) {
    close(fd);
    return error;
  }
  *out = fd;
  return 0;
}

// What one call needs, copied out of the caller before the call is made.
struct Call {
  int listener = -1;
  seccomp_notif req{};
  const ConnectRules* rules = nullptr;
  int pidfd = -1, sock = -1, target = -1;  // target: the O_PATH socket a pathname address resolved to
  std::vector<int> passed;                 // the run's fds sent along (SCM_RIGHTS), taken
  bool dontWait = false;                   // made in the jail's loop: a send must not block
  ~Call() {
    for (int fd : {pidfd, sock, target})
      if (fd >= 0) close(fd);
    for (int fd : passed) close(fd);
    if (listener >= 0) close(listener);
  }
};

// The address the kernel is to see, in *addr/*len: a pathname Unix one becomes /proc/self/fd/N of the
// checked socket. `raw`: as the caller gave it. 0, or the errno to answer.
int Address(Call* c, const std::vector<char>& raw, sockaddr_storage* addr, socklen_t* len) {
  memset(addr, 0, sizeof *addr);
  memcpy(addr, raw.data(), raw.size());
  *len = static_cast<socklen_t>(raw.size());
  int domain = 0;
  socklen_t dl = sizeof domain;
  if (getsockopt(c->sock, SOL_SOCKET, SO_DOMAIN, &domain, &dl) < 0) return errno;
  auto* un = reinterpret_cast<sockaddr_un*>(addr);
  if (domain != AF_UNIX || raw.size() <= kPathOffset || un->sun_family != AF_UNIX || un->sun_path[0] == 0)
    return 0;  // not a path: the kernel (and Landlock, for the jail) judges it as it is
  std::string path(un->sun_path, strnlen(un->sun_path, raw.size() - kPathOffset));
  int error = OpenAllowed(static_cast<pid_t>(c->req.pid), path, *c->rules, &c->target);
  if (error) return error;
  memset(un->sun_path, 0, sizeof un->sun_path);
  int n = snprintf(un->sun_path, sizeof un->sun_path, "/proc/self/fd/%d", c->target);
  *len = static_cast<socklen_t>(kPathOffset + n + 1);
  return 0;
}

// Whether a caller's address is an X display's abstract name (`@/tmp/.X11-unix/X<N>`, which libxcb tries
// before the display's path socket, falling back only on ECONNREFUSED or ENOENT).
bool IsDisplayName(const std::vector<char>& raw) {
  static constexpr char kPrefix[] = "/tmp/.X11-unix/X";
  constexpr size_t kAt = kPathOffset + 1, kLength = sizeof kPrefix - 1;
  sa_family_t family = 0;
  if (raw.size() <= kAt + kLength) return false;
  memcpy(&family, raw.data(), sizeof family);
  return family == AF_UNIX && raw[kPathOffset] == 0 && memcmp(raw.data() + kAt, kPrefix, kLength) == 0;
}

// The caller's address argument (`ptr`, `size`), copied.
int ReadAddress(Call* c, uint64_t ptr, uint64_t size, std::vector<char>* raw) {
  if (size > sizeof(sockaddr_storage) || static_cast<int64_t>(static_cast<int32_t>(size)) < 0) return EINVAL;
  raw->resize(size);
  return ReadMem(static_cast<pid_t>(c->req.pid), ptr, raw->data(), size);
}

// The socket's type, for how a send longer than kMaxData is taken (a stream's is cut, others refused).
bool IsStream(int sock) {
  int type = 0;
  socklen_t len = sizeof type;
  return getsockopt(sock, SOL_SOCKET, SO_TYPE, &type, &len) == 0 && type == SOCK_STREAM;
}

// Still the caller's call: the pid was not reused while we read from it.
bool StillPending(const Call& c) {
  uint64_t id = c.req.id;
  return ioctl(c.listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &id) == 0;
}

// A send that failed EPIPE raises SIGPIPE in the caller unless it asked not to (the jail's own send
// never does: MSG_NOSIGNAL).
void PipeSignal(const Call& c, int flags, long result, int error) {
  if (result < 0 && error == EPIPE && !(flags & MSG_NOSIGNAL)) kill(static_cast<pid_t>(c.req.pid), SIGPIPE);
}

// connect(fd, addr, len): *val / the errno.
int DoConnect(Call* c, long* val) {
  const auto& a = c->req.data.args;
  std::vector<char> raw;
  int error = ReadAddress(c, a[1], a[2] & 0xffffffffu, &raw);
  sockaddr_storage addr;
  socklen_t len;
  if (!error) error = Address(c, raw, &addr, &len);
  if (error) return error;
  if (!StillPending(*c)) return ESRCH;
  *val = connect(c->sock, reinterpret_cast<sockaddr*>(&addr), len);
  error = *val < 0 ? errno : 0;
  // An X display's abstract name out of the run's reach is answered as one no one listens on (decision 134).
  return error == EPERM && IsDisplayName(raw) ? ECONNREFUSED : error;
}

// sendto(fd, buf, size, flags, addr, len) with an address (the filter lets the others through).
int DoSendto(Call* c, long* val) {
  const auto& a = c->req.data.args;
  const int flags = static_cast<int>(a[3]);
  if (flags & MSG_FASTOPEN) return EACCES;
  size_t size = a[2];
  if (size > kMaxData) {
    if (!IsStream(c->sock)) return EMSGSIZE;
    size = kMaxData;
  }
  std::vector<char> data(size), raw;
  int error = ReadMem(static_cast<pid_t>(c->req.pid), a[1], data.data(), size);
  if (!error) error = ReadAddress(c, a[4], a[5] & 0xffffffffu, &raw);
  sockaddr_storage addr;
  socklen_t len;
  if (!error) error = Address(c, raw, &addr, &len);
  if (error) return error;
  if (!StillPending(*c)) return ESRCH;
  *val = sendto(c->sock, data.data(), size, flags | MSG_NOSIGNAL | (c->dontWait ? MSG_DONTWAIT : 0),
                reinterpret_cast<sockaddr*>(&addr), len);
  error = *val < 0 ? errno : 0;
  PipeSignal(*c, flags, *val, error);
  return error;
}

// sendmsg(fd, msg, flags): every one (the filter cannot see whether it names an address), its descriptors
// (SCM_RIGHTS) taken from the caller and sent as the same open files.
int DoSendmsg(Call* c, long* val) {
  const auto& a = c->req.data.args;
  const pid_t tid = static_cast<pid_t>(c->req.pid);
  const int flags = static_cast<int>(a[2]);
  if (flags & MSG_FASTOPEN) return EACCES;
  UserMsghdr m{};
  int error = ReadMem(tid, a[1], &m, sizeof m);
  if (error) return error;
  if (m.iovlen > kMaxIov) return EMSGSIZE;
  std::vector<UserIovec> iov(m.iovlen);
  error = ReadMem(tid, m.iov, iov.data(), iov.size() * sizeof(UserIovec));
  if (error) return error;
  size_t total = 0;
  for (const auto& v : iov) {
    if (v.len > static_cast<uint64_t>(SSIZE_MAX) - total) return EINVAL;  // as the kernel says
    total += v.len;
  }
  if (total > kMaxData && !IsStream(c->sock)) return EMSGSIZE;
  std::vector<char> data(std::min(total, kMaxData));
  size_t at = 0;
  for (const auto& v : iov) {
    size_t n = std::min<size_t>(v.len, data.size() - at);
    if (n && (error = ReadMem(tid, v.base, data.data() + at, n))) return error;
    at += n;
  }
  std::vector<char> raw;
  sockaddr_storage addr;
  socklen_t len = 0;
  if (m.name && m.namelen) {
    error = ReadAddress(c, m.name, static_cast<uint32_t>(m.namelen), &raw);
    if (!error) error = Address(c, raw, &addr, &len);
    if (error) return error;
  }
  if (m.controllen > kMaxControl) return ENOBUFS;
  std::vector<uint64_t> control((m.controllen + 7) / 8);  // aligned for cmsghdr
  if (m.control && m.controllen) {
    if ((error = ReadMem(tid, m.control, control.data(), m.controllen))) return error;
  }
  msghdr out{};
  iovec one{data.data(), data.size()};
  out.msg_iov = &one;
  out.msg_iovlen = 1;
  if (len) out.msg_name = &addr, out.msg_namelen = len;
  if (m.control && m.controllen) {
    out.msg_control = control.data();
    out.msg_controllen = m.controllen;
    const char* end = reinterpret_cast<const char*>(control.data()) + m.controllen;
    for (cmsghdr* h = CMSG_FIRSTHDR(&out); h; h = CMSG_NXTHDR(&out, h)) {
      // Each header within what was copied (the caller's lengths are not to be trusted).
      if (h->cmsg_len < sizeof(cmsghdr) || h->cmsg_len > static_cast<size_t>(end - reinterpret_cast<char*>(h)))
        return EINVAL;
      // The caller's credentials (GDBus sends them to authenticate): the kernel takes only the sender's
      // own pid, and the sender is the jail now (the peer sees the jail's pid, as after its connect()).
      if (h->cmsg_level == SOL_SOCKET && h->cmsg_type == SCM_CREDENTIALS && h->cmsg_len >= CMSG_LEN(sizeof(ucred))) {
        ucred cred;
        memcpy(&cred, CMSG_DATA(h), sizeof cred);
        cred.pid = getpid();
        memcpy(CMSG_DATA(h), &cred, sizeof cred);
        continue;
      }
      if (h->cmsg_level != SOL_SOCKET || h->cmsg_type != SCM_RIGHTS || h->cmsg_len < CMSG_LEN(0)) continue;
      size_t n = (h->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      if (n > kMaxPassedFds) return EINVAL;  // SCM_MAX_FD, as the kernel says
      int* fds = reinterpret_cast<int*>(CMSG_DATA(h));
      for (size_t i = 0; i < n; ++i) {
        int mine = static_cast<int>(syscall(SYS_pidfd_getfd, c->pidfd, fds[i], 0));
        if (mine < 0) return EBADF;
        c->passed.push_back(mine);
        fds[i] = mine;
      }
    }
  }
  if (!StillPending(*c)) return ESRCH;
  *val = sendmsg(c->sock, &out, flags | MSG_NOSIGNAL | (c->dontWait ? MSG_DONTWAIT : 0));
  error = *val < 0 ? errno : 0;
  PipeSignal(*c, flags, *val, error);
  return error;
}

// The run's socket and a pidfd of the caller, into c: 0, or the errno to answer.
int Take(Call* c) {
  c->pidfd = PidfdOf(static_cast<pid_t>(c->req.pid));
  if (c->pidfd < 0) return errno == ESRCH ? ESRCH : EPERM;
  c->sock = static_cast<int>(syscall(SYS_pidfd_getfd, c->pidfd, static_cast<int>(c->req.data.args[0]), 0));
  if (c->sock < 0) return errno == EBADF ? EBADF : EPERM;
  return 0;
}

// Makes the call (the socket taken, or `error` why not) and answers it.
void Finish(std::unique_ptr<Call> c, int error) {
  long val = 0;
  const int nr = c->req.data.nr;
  if (error) {
  } else if (nr == __NR_connect) error = DoConnect(c.get(), &val);
  else if (nr == __NR_sendto) error = DoSendto(c.get(), &val);
  else if (nr == __NR_sendmsg) error = DoSendmsg(c.get(), &val);
  else error = ENOSYS;
  seccomp_notif_resp resp{};
  resp.id = c->req.id;
  resp.error = error ? -error : 0;
  resp.val = error ? 0 : val;
  ioctl(c->listener, SECCOMP_IOCTL_NOTIF_SEND, &resp);  // ENOENT: the caller is gone
}

// With a mount namespace (rules.displayNamesOnly), where the jail cannot start threads (it unshared its pid
// namespace) nor resolve paths as the run sees them: a connect() to an X display's abstract name that the
// jail's domain refuses (the person's X server) is answered ECONNREFUSED, without reaching it; every other
// connect continues in the run as the filter would have let it, judged by the kernel and the run's own
// domain (a thread swapping the address meanwhile gains nothing). Whether the run may reach the name is
// asked by a non-blocking probe socket of the jail's own, so a run's own X server (a nested domain)
// stays reachable; Landlock refuses before anything is queued to the listener. 0: continue.
int DisplayNameRefused(const seccomp_notif& req) {
  const uint64_t size = req.data.args[2] & 0xffffffffu;
  if (size > sizeof(sockaddr_un)) return 0;
  std::vector<char> raw(size);
  if (ReadMem(static_cast<pid_t>(req.pid), req.data.args[1], raw.data(), raw.size()) != 0 || !IsDisplayName(raw))
    return 0;
  int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (probe < 0) return 0;
  int refused =
      connect(probe, reinterpret_cast<const sockaddr*>(raw.data()), static_cast<socklen_t>(size)) < 0 && errno == EPERM;
  close(probe);
  return refused ? ECONNREFUSED : 0;
}

void* Serve(void* arg) {
  std::unique_ptr<Call> c(static_cast<Call*>(arg));
  int error = c->sock >= 0 ? 0 : Take(c.get());
  Finish(std::move(c), error);
  gCalls--;
  return nullptr;
}

}  // namespace

bool IsConnectCall(int nr) { return nr == __NR_connect || nr == __NR_sendto || nr == __NR_sendmsg; }

void AnswerConnect(int listener, const seccomp_notif& req, const ConnectRules& rules) {
  auto refuse = [&](int error) {
    seccomp_notif_resp resp{};
    resp.id = req.id;
    resp.error = -error;
    ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp);
  };
  if (rules.displayNamesOnly) {
    if (req.data.nr != __NR_connect) return refuse(ENOSYS);
    int error = DisplayNameRefused(req);
    if (error) return refuse(error);
    seccomp_notif_resp resp{};
    resp.id = req.id;
    resp.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
    ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp);  // ENOENT: the caller is gone
    return;
  }
  auto c = std::make_unique<Call>();
  c->req = req;
  c->rules = &rules;
  c->listener = fcntl(listener, F_DUPFD_CLOEXEC, 0);
  if (c->listener < 0) return refuse(EAGAIN);
  // A send that cannot block (a non-blocking socket: GDBus, Chromium, libuv) is made here, at once, with
  // MSG_DONTWAIT (the run could make the socket blocking meanwhile; the jail's loop must not wait on it).
  if (req.data.nr != __NR_connect) {
    int error = Take(c.get());
    const int flags = static_cast<int>(req.data.nr == __NR_sendto ? req.data.args[3] : req.data.args[2]);
    if (error || (flags & MSG_DONTWAIT) || (fcntl(c->sock, F_GETFL) & O_NONBLOCK)) {
      c->dontWait = true;
      return Finish(std::move(c), error);
    }
  }
  if (++gCalls > kMaxCalls) {
    gCalls--;
    return refuse(EAGAIN);
  }
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_attr_setstacksize(&attr, 256 << 10);
  pthread_t thread;
  Call* raw = c.release();
  int failed = pthread_create(&thread, &attr, Serve, raw);
  pthread_attr_destroy(&attr);
  if (failed) {
    delete raw;
    gCalls--;
    refuse(EAGAIN);
  }
}

}  // namespace runboard::seccomp
