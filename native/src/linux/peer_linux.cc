#include <fcntl.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

#include "common/peer.h"

#ifndef NS_GET_PARENT
#define NS_GET_PARENT _IO(0xb7, 0x2)
#endif
#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77
#endif
#ifndef PIDFS_IOCTL_MAGIC
#define PIDFS_IOCTL_MAGIC 0xFF
#endif
#ifndef PIDFD_GET_USER_NAMESPACE
#define PIDFD_GET_USER_NAMESPACE _IO(PIDFS_IOCTL_MAGIC, 9)
#endif

namespace runboard {

namespace {

std::string Errno(const char* what) { return std::string(what) + ": " + strerror(errno); }

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

// The pid a pidfd refers to, in our PID namespace; -1 once the process has exited.
int PidOfPidfd(int pidfd) {
  std::ifstream info("/proc/self/fdinfo/" + std::to_string(pidfd));
  std::string line;
  while (std::getline(info, line))
    if (line.rfind("Pid:", 0) == 0) return std::stoi(line.substr(4));
  return -1;
}

bool Alive(int pidfd) { return syscall(SYS_pidfd_send_signal, pidfd, 0, nullptr, 0) == 0; }

// -1 when the process is gone (or its stat unreadable).
int ParentOf(int pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  auto close = text.rfind(')');
  if (close == std::string::npos) return -1;
  char state = 0;
  int ppid = 0;
  if (sscanf(text.c_str() + close + 1, " %c %d", &state, &ppid) != 2) return -1;
  return ppid;
}

// The parent chain of `pid` up to the top of our PID namespace. False when a link vanished while it
// was read (a parent that exited: its children re-parent, so a second walk sees the new chain).
bool Ancestors(int pid, std::vector<int>* out) {
  out->clear();
  for (int hops = 0; hops < 4096; hops++) {
    int parent = ParentOf(pid);
    if (parent < 0) return false;
    if (parent == 0) return true;
    out->push_back(parent);
    if (parent == 1) return true;
    pid = parent;
  }
  return false;
}

std::string NsId(const struct stat& st) {
  return std::to_string(static_cast<unsigned long long>(st.st_dev)) + ":" +
         std::to_string(static_cast<unsigned long long>(st.st_ino));
}

}  // namespace

std::string GetPeerCredentials(int fd, PeerCredentials* out) {
  struct ucred cred {};
  socklen_t len = sizeof cred;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) return std::string("SO_PEERCRED: ") + strerror(errno);
  out->pid = cred.pid;
  out->uid = static_cast<int>(cred.uid);
  out->gid = static_cast<int>(cred.gid);
  return "";
}

std::string GetPeerIdentity(int fd, PeerIdentity* out) {
  PeerCredentials cred;
  std::string err = GetPeerCredentials(fd, &cred);
  if (!err.empty()) return err;
  out->uid = cred.uid;
  // The process that connected, held by a pidfd: a pid number can be reused, a pidfd cannot.
  // SO_PEERPIDFD (Linux 6.5) names exactly the connecting process; before it, pidfd_open of the
  // SO_PEERCRED pid, which fails once that process has gone.
  int raw = -1;
  socklen_t len = sizeof raw;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERPIDFD, &raw, &len) < 0) {
    if (errno != ENOPROTOOPT) return Errno("SO_PEERPIDFD");
    raw = static_cast<int>(syscall(SYS_pidfd_open, cred.pid, 0));
    if (raw < 0) return Errno("pidfd_open of the peer");
  }
  Fd pidfd(raw);
  out->pid = PidOfPidfd(pidfd.get());
  if (out->pid <= 0 || !Alive(pidfd.get())) return "the peer process has exited";

  // Its user namespace: from the pidfd (Linux 6.11), else /proc/<pid>/ns/user checked against the
  // pidfd being still alive afterwards (so the pid was not reused in between). EACCES means we hold
  // no capability in the peer's namespace, so it is not below ours: the supervisor has them all in
  // every namespace its jails create and in those nested inside them. Such a peer (one in a namespace
  // above ours, or a non-dumpable one in ours) is judged by its ancestors below.
  int nsraw = ioctl(pidfd.get(), PIDFD_GET_USER_NAMESPACE, 0);
  if (nsraw < 0 && errno != EACCES) {
    if (errno != ENOTTY && errno != EINVAL && errno != EOPNOTSUPP) return Errno("PIDFD_GET_USER_NAMESPACE");
    nsraw = open(("/proc/" + std::to_string(out->pid) + "/ns/user").c_str(), O_RDONLY | O_CLOEXEC);
    if (nsraw < 0 && errno != EACCES) return Errno("the peer's user namespace");
  }
  out->userNsBelowOwn = false;
  if (nsraw >= 0) {
    Fd nsfd(nsraw);
    struct stat ns {};
    if (fstat(nsfd.get(), &ns) < 0) return Errno("fstat of the peer's user namespace");
    out->userNs = NsId(ns);
    // Below ours (every run's is: the jail makes it)? Walk up its parents until ours turns up, or
    // until the kernel refuses (EPERM: the next parent is outside our namespace, so not below it).
    std::string own;
    err = OwnUserNamespace(&own);
    if (!err.empty()) return err;
    int cur = out->userNs == own ? -1 : dup(nsfd.get());
    for (int hops = 0; cur >= 0 && hops < 64; hops++) {
      Fd level(cur);
      cur = ioctl(level.get(), NS_GET_PARENT);
      if (cur < 0) {
        if (errno != EPERM) return Errno("NS_GET_PARENT");
        break;
      }
      struct stat parent {};
      if (fstat(cur, &parent) < 0) {
        close(cur);
        return Errno("fstat of a parent user namespace");
      }
      if (NsId(parent) == own) {
        out->userNsBelowOwn = true;
        close(cur);
        break;
      }
    }
  }

  // Ancestors (for runs without a user namespace of their own), then the liveness re-check: while the
  // peer lives, its parent chain is real (a dead parent's children re-parent to a live ancestor). A
  // chain that keeps changing under the walk is not trusted.
  bool walked = false;
  for (int attempt = 0; attempt < 3 && !walked; attempt++) walked = Ancestors(out->pid, &out->ancestors);
  if (!Alive(pidfd.get())) return "the peer process has exited";
  if (!walked) return "the peer's ancestry changed while it was read";
  return "";
}

std::string OwnUserNamespace(std::string* out) {
  struct stat ns {};
  if (stat("/proc/self/ns/user", &ns) < 0) return Errno("/proc/self/ns/user");
  *out = NsId(ns);
  return "";
}

}  // namespace runboard
