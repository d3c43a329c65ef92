#include "linux/live_grants.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstring>

#include "linux/mounts.h"

namespace runboard::grants {
namespace {

// The new mount API by raw syscall, as in mounts.cc (same numbers on every architecture).
constexpr long kSysOpenTree = 428, kSysMoveMount = 429, kSysFsopen = 430, kSysFsconfig = 431, kSysFsmount = 432;
constexpr long kSysOpenat2 = 437, kSysMountSetattr = 442;
constexpr unsigned kOpenTreeClone = 1, kAtRecursive = 0x8000, kAtEmptyPath = 0x1000, kMoveMountFEmptyPath = 0x4;
constexpr unsigned kFsconfigSetString = 1, kFsconfigCmdCreate = 6;
constexpr uint64_t kAttrRdonly = 0x1, kAttrNosuid = 0x2, kAttrNodev = 0x4, kAttrNoexec = 0x8;
constexpr uint64_t kResolveNoMagiclinks = 0x02, kResolveNoSymlinks = 0x04;
struct MountAttr {
  uint64_t set, clr, propagation, userns;
};
struct OpenHow {
  uint64_t flags, mode, resolve;
};

std::string Errno(const std::string& what) { return what + ": " + std::strerror(errno); }

int Openat2(int dir, const std::string& name, uint64_t flags, uint64_t resolve) {
  OpenHow how{flags | O_CLOEXEC, 0, resolve};
  return static_cast<int>(syscall(kSysOpenat2, dir, name.c_str(), &how, sizeof how));
}

// A detached copy of the mount tree at `fd` (a bind of that folder, with what is mounted below it).
int CloneOf(int fd) {
  return static_cast<int>(syscall(kSysOpenTree, fd, "", kAtEmptyPath | kOpenTreeClone | kAtRecursive | O_CLOEXEC));
}

bool SetAttr(int fd, uint64_t set, uint64_t clr, bool recursive, uint64_t propagation = 0) {
  MountAttr a{set, clr, propagation, 0};
  return syscall(kSysMountSetattr, fd, "", kAtEmptyPath | (recursive ? kAtRecursive : 0), &a, sizeof a) == 0;
}

// The folder names of an absolute path; empty when it has ".", ".." or an empty name (the supervisor
// sends real paths: anything else is refused rather than resolved here).
std::vector<std::string> Names(const std::string& path) {
  std::vector<std::string> out;
  if (path.size() < 2 || path[0] != '/' || path.back() == '/') return {};
  for (size_t at = 1; at <= path.size();) {
    size_t end = path.find('/', at);
    if (end == std::string::npos) end = path.size();
    std::string n = path.substr(at, end - at);
    if (n.empty() || n == "." || n == "..") return {};
    out.push_back(n);
    at = end + 1;
  }
  return out;
}

struct Handoff {
  int dir, mntns;
  const std::vector<dev_t>& devices;
};

// In a child of the jail (in the run's user namespace, with its capabilities there, and the machine's
// mount namespace): gives `path` to the run. `slot` is "" when mounts alone confine the run.
std::string Inject(const Handoff& h, bool write, const std::string& path, const std::string& slot, std::string* at) {
  const std::vector<std::string> names = Names(path);
  if (names.empty()) return path + " is not an absolute real path";
  if (names.size() < 2) return "a top-level folder is not given to a live run";
  // 1. The folder, cloned from the machine's tree in a private copy of it: no link on its way (a link
  //    swapped in since the supervisor resolved it is refused, not followed).
  if (unshare(CLONE_NEWNS) < 0) return Errno("unshare(CLONE_NEWNS)");
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) < 0) return Errno("make / private");
  int folder = Openat2(AT_FDCWD, path, O_PATH | O_DIRECTORY, kResolveNoSymlinks | kResolveNoMagiclinks);
  if (folder < 0)
    return errno == ELOOP ? path + " has a link on its way: only the folder asked is given" : Errno("open " + path);
  int tree = CloneOf(folder);
  close(folder);
  if (tree < 0) return Errno("open_tree " + path);
  if (!SetAttr(tree, kAttrNosuid | kAttrNodev | (write ? 0 : kAttrRdonly), 0, true, MS_PRIVATE))
    return Errno("mount_setattr " + path);
  // 2. The run's mount namespace: the deepest folder of `path` the run has, found without a link.
  if (setns(h.mntns, CLONE_NEWNS) < 0) return Errno("setns into the run's mount namespace");
  int cur = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
  size_t have = 0;
  for (; have < names.size(); ++have) {
    int next = Openat2(cur, names[have], O_PATH | O_DIRECTORY | O_NOFOLLOW, kResolveNoSymlinks | kResolveNoMagiclinks);
    if (next < 0 && errno == ENOENT) break;
    if (next < 0)
      return errno == ELOOP || errno == ENOTDIR ? "in the run, a link or a file is on the way to " + path
                                                : Errno("open " + path + " in the run");
    close(cur);
    cur = next;
  }
  if (have == names.size()) return path + " is in the run's view already (below a tree it reads or writes)";
  // Only in a read-only folder of the jail's own tmpfs (a cover, a folder on the way in the private
  // /tmp): never a tree the run can write, a copy of the machine's or a mount the run could have made.
  struct stat st {};
  struct statvfs vfs {};
  if (fstat(cur, &st) < 0 || fstatvfs(cur, &vfs) < 0) return Errno("stat in the run");
  if (std::find(h.devices.begin(), h.devices.end(), st.st_dev) == h.devices.end() || !(vfs.f_flag & ST_RDONLY))
    return "in the run, the folder around " + path +
           " is not one Runboard made read-only (the run's own /tmp, a tree it reads or writes)";
  // The folders on the way and the link go in through a writable clone of that folder (the run's own
  // mount stays read-only throughout).
  int rw = CloneOf(cur);
  if (rw < 0 || !SetAttr(rw, 0, kAttrRdonly, false)) return Errno("a writable clone of the folder in the run");
  int dir = rw;
  for (size_t i = have; i + 1 < names.size(); ++i) {
    if (mkdirat(dir, names[i].c_str(), 0755) < 0) return Errno("mkdir " + names[i] + " in the run");
    int next = openat(dir, names[i].c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (next < 0) return Errno("open " + names[i] + " in the run");
    dir = next;
  }
  const std::string& name = names.back();
  if (slot.empty()) {  // mounts alone: the folder at its own path
    if (mkdirat(dir, name.c_str(), 0755) < 0) return Errno("mkdir " + path + " in the run");
    std::string rel;
    for (size_t i = have; i < names.size(); ++i) rel += (rel.empty() ? "" : "/") + names[i];
    if (syscall(kSysMoveMount, tree, "", cur, rel.c_str(), kMoveMountFEmptyPath) < 0)
      return Errno("move_mount " + path);
    *at = path;
    return "";
  }
  // 3. Below the slot (Landlock's rule is on the slot), and a link at the folder's path to it.
  const std::string inSlot = slot + "/" + name;
  int slots = CloneOf(h.dir);
  if (slots < 0 || !SetAttr(slots, 0, kAttrRdonly, false)) return Errno("a writable clone of the slots");
  if (mkdirat(slots, inSlot.c_str(), 0755) < 0) return Errno("mkdir " + inSlot);
  if (syscall(kSysMoveMount, tree, "", h.dir, inSlot.c_str(), kMoveMountFEmptyPath) < 0)
    return Errno("move_mount " + path + " to " + inSlot);
  *at = std::string(kGrantsDir) + "/" + inSlot;
  if (symlinkat(at->c_str(), dir, name.c_str()) < 0) return Errno("link " + path + " in the run");
  return "";
}

}  // namespace

std::string MakeSlots(ChildSlots* out) {
  int fs = static_cast<int>(syscall(kSysFsopen, "tmpfs", 1 /* FSOPEN_CLOEXEC */));
  if (fs < 0) return Errno("fsopen tmpfs for the grant slots");
  int mnt = -1;
  if (syscall(kSysFsconfig, fs, kFsconfigSetString, "mode", "0755", 0) == 0 &&
      syscall(kSysFsconfig, fs, kFsconfigSetString, "size", "16k", 0) == 0 &&
      syscall(kSysFsconfig, fs, kFsconfigCmdCreate, nullptr, nullptr, 0) == 0)
    mnt = static_cast<int>(syscall(kSysFsmount, fs, 1 /* FSMOUNT_CLOEXEC */, kAttrNosuid | kAttrNodev | kAttrNoexec));
  close(fs);
  if (mnt < 0) return Errno("the grant slots' tmpfs");
  std::string err;
  for (int k = 1; k <= kSlots && err.empty(); ++k)
    for (const char* kind : {"r", "w"})
      if (err.empty() && mkdirat(mnt, (kind + std::to_string(k)).c_str(), 0755) < 0) err = Errno("mkdir slot");
  // Its place in the run's /dev (read-only by now): made through a writable clone of it.
  int devDir = err.empty() ? open("/dev", O_PATH | O_DIRECTORY | O_CLOEXEC) : -1;
  int dev = devDir >= 0 ? CloneOf(devDir) : -1;
  if (devDir >= 0) close(devDir);
  if (err.empty() && (dev < 0 || !SetAttr(dev, 0, kAttrRdonly, false))) err = Errno("a writable clone of /dev");
  if (err.empty() && mkdirat(dev, kGrantsDir + 5, 0755) < 0) err = Errno(std::string("mkdir ") + kGrantsDir);
  if (dev >= 0) close(dev);
  if (err.empty() && syscall(kSysMoveMount, mnt, "", AT_FDCWD, kGrantsDir, kMoveMountFEmptyPath) < 0)
    err = Errno(std::string("move_mount ") + kGrantsDir);
  close(mnt);
  if (!err.empty()) return err;
  out->dir = open(kGrantsDir, O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (out->dir < 0 || !SetAttr(out->dir, kAttrRdonly, 0, false)) return Errno(std::string("read-only ") + kGrantsDir);
  for (int k = 1; k <= kSlots; ++k) {
    out->read.push_back(openat(out->dir, ("r" + std::to_string(k)).c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    out->write.push_back(openat(out->dir, ("w" + std::to_string(k)).c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  }
  out->mntns = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
  if (out->mntns < 0) return Errno("open /proc/self/ns/mnt");
  for (int fd : out->read)
    if (fd < 0) return "a grant slot could not be opened";
  for (int fd : out->write)
    if (fd < 0) return "a grant slot could not be opened";
  return "";
}

void SendToJail(int sock, ChildSlots* s, bool privateTmp) {
  if (sock < 0) return;
  if (s->dir >= 0 && s->mntns >= 0) {
    dev_t devices[2] = {0, 0};
    devices[0] = mounts::gCoverDevice;
    struct stat st {};
    if (privateTmp && stat("/tmp", &st) == 0) devices[1] = st.st_dev;
    int fds[2] = {s->dir, s->mntns};
    char control[CMSG_SPACE(sizeof fds)] = {};
    iovec iov{devices, sizeof devices};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof fds);
    memcpy(CMSG_DATA(c), fds, sizeof fds);
    if (sendmsg(sock, &msg, MSG_NOSIGNAL) < 0) {
      // the jail is gone: the run is ending anyway
    }
  }
  for (int fd : s->read) close(fd);
  for (int fd : s->write) close(fd);
  if (s->dir >= 0) close(s->dir);
  if (s->mntns >= 0) close(s->mntns);
  close(sock);
}

bool Server::Receive() {
  if (received_) return dir_ >= 0;
  received_ = true;
  dev_t devices[2] = {0, 0};
  int fds[2] = {-1, -1};
  char control[CMSG_SPACE(sizeof fds)] = {};
  iovec iov{devices, sizeof devices};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  // Blocking: the child sends before it execs the run (or closes the socket at exec, with nothing to
  // send), never waiting for the jail meanwhile; a request can come before that (a run just started).
  ssize_t n = -1;
  if (fromChild_ >= 0) do
      n = recvmsg(fromChild_, &msg, MSG_CMSG_CLOEXEC);
    while (n < 0 && errno == EINTR);
  cmsghdr* c = n == static_cast<ssize_t>(sizeof devices) ? CMSG_FIRSTHDR(&msg) : nullptr;
  if (c && c->cmsg_type == SCM_RIGHTS && c->cmsg_len == CMSG_LEN(sizeof fds)) {
    memcpy(fds, CMSG_DATA(c), sizeof fds);
    dir_ = fds[0];
    mntns_ = fds[1];
    for (dev_t d : devices)
      if (d) devices_.push_back(d);
  }
  if (fromChild_ >= 0) close(fromChild_);
  fromChild_ = -1;
  return dir_ >= 0;
}

std::string Server::Grant(bool write, const std::string& path, std::string* at) {
  if (!Receive()) return "this run has no mount namespace of its own to gain a folder in";
  int& used = used_[write ? 1 : 0];
  if (viaSlots_ && used >= kSlots) return "the run has used its " + std::to_string(kSlots) + " grant slots";
  const std::string slot = viaSlots_ ? (write ? "w" : "r") + std::to_string(++used) : "";
  int result[2];
  if (pipe2(result, O_CLOEXEC) < 0) return Errno("pipe");
  pid_t pid = fork();
  if (pid < 0) return Errno("fork");
  if (pid == 0) {
    close(result[0]);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    prctl(PR_SET_DUMPABLE, 0);  // the run (in its PID namespace) cannot open this process's fds
    std::string where;
    std::string err = Inject({dir_, mntns_, devices_}, write, path, slot, &where);
    std::string line = err.empty() ? "ok " + where : "no " + err;
    ssize_t w = ::write(result[1], line.data(), line.size());
    (void)w;
    _exit(0);
  }
  close(result[1]);
  std::string line;
  char buf[4096];
  for (ssize_t n; (n = read(result[0], buf, sizeof buf)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    line.append(buf, n);
  }
  close(result[0]);
  while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {}
  if (line.compare(0, 3, "ok ") == 0) {
    *at = line.substr(3);
    return "";
  }
  return line.size() > 3 ? line.substr(3) : "the injector ended without an answer";
}

void Server::Serve() {
  char buf[8192];
  ssize_t n = read(control_, buf, sizeof buf);
  if (n <= 0) {
    if (n == 0 || (errno != EINTR && errno != EAGAIN)) control_ = -1;  // the supervisor closed it: no more
    return;
  }
  pending_.append(buf, n);
  if (pending_.size() > 65536) pending_.clear();
  for (size_t nl; (nl = pending_.find('\n')) != std::string::npos;) {
    std::string line = pending_.substr(0, nl);
    pending_.erase(0, nl + 1);
    // grant <id> <read|write> <path>
    size_t a = line.find(' '), b = a == std::string::npos ? a : line.find(' ', a + 1),
           c = b == std::string::npos ? b : line.find(' ', b + 1);
    if (c == std::string::npos || line.compare(0, a, "grant") != 0) continue;
    const std::string id = line.substr(a + 1, b - a - 1), kind = line.substr(b + 1, c - b - 1),
                      path = line.substr(c + 1);
    std::string at,
        err = kind == "read" || kind == "write" ? Grant(kind == "write", path, &at) : "unknown kind " + kind;
    std::string reply = err.empty() ? "ok " + id + " " + at : "refused " + id + " " + err;
    std::replace(reply.begin(), reply.end(), '\n', ' ');
    reply += "\n";
    ssize_t w = ::write(control_, reply.data(), reply.size());
    (void)w;
  }
}

}  // namespace runboard::grants
