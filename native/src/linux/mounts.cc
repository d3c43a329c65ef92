#include "linux/mounts.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstring>

namespace runboard::mounts {
namespace {

// The new mount API (Linux 5.2 / 5.12), by raw syscall: Debian 12's headers and glibc wrappers do
// not mix well with <sys/mount.h>. The numbers are the same on every architecture (unified table).
constexpr long kSysOpenTree = 428;
constexpr long kSysMoveMount = 429;
constexpr long kSysMountSetattr = 442;
constexpr long kSysFsopen = 430;
constexpr long kSysFsconfig = 431;
constexpr long kSysFsmount = 432;
constexpr unsigned kFsopenCloexec = 1;
constexpr unsigned kFsconfigSetString = 1;
constexpr unsigned kFsconfigCmdCreate = 6;
constexpr unsigned kFsmountCloexec = 1;
constexpr unsigned kMountAttrNosuidNodevNoexec = 0x2 | 0x4 | 0x8;
constexpr unsigned kOpenTreeClone = 1;
constexpr unsigned kAtSymlinkNofollow = 0x100;
constexpr unsigned kAtRecursive = 0x8000;
constexpr unsigned kMoveMountFEmptyPath = 0x4;
constexpr unsigned kAtEmptyPath = 0x1000;
constexpr uint64_t kMountAttrRdonly = 0x1;
struct MountAttr {
  uint64_t attr_set, attr_clr, propagation, userns_fd;
};

std::string Errno(const std::string& what) { return what + ": " + std::strerror(errno); }

bool Below(const std::string& path, const std::string& dir) {
  return path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 && path[dir.size()] == '/';
}

// The mount point for `path` below `base` (which exists): its parents as directories, itself as a
// directory or an empty file, as the tree that will be mounted there.
std::string MakeMountPoint(const std::string& base, const std::string& path, bool isDir) {
  for (size_t at = base.size() + 1; at <= path.size(); ++at) {
    if (at != path.size() && path[at] != '/') continue;
    std::string p = path.substr(0, at);
    if (at == path.size() && !isDir) {
      struct stat st {};
      if (lstat(p.c_str(), &st) == 0) continue;  // there already (in a read-only copy, say)
      int f = open(p.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
      if (f < 0) return Errno("create " + p);
      close(f);
    } else if (mkdir(p.c_str(), 0755) < 0 && errno != EEXIST) {
      return Errno("mkdir " + p);
    }
  }
  return "";
}

struct Copy {
  std::string path;
  bool isDir;
  int fd;
  // A readable file's folder (O_PATH, opened before the covers): the file is cloned again through it
  // when a rename replaced it after its first clone (MoveReadCopy).
  int parentFd = -1;
};

std::string MoveInto(int fd, const std::string& to) {
  if (syscall(kSysMoveMount, fd, "", AT_FDCWD, to.c_str(), kMoveMountFEmptyPath) < 0) return Errno("move_mount " + to);
  return "";
}

// The run's own /tmp: a tmpfs of `size` mounted on /tmp, with the entries of the machine's /tmp the run
// needs bound back in (made read-only with everything else later; symlinks recreated). Names the run
// creates live in the tmpfs and vanish with the run's mount namespace, so a tool that makes a fixed name (codex's
// sandbox helper: /tmp/codex-daemon-<uid>) works whether or not an earlier process left one behind, and nothing the run
// writes reaches the machine's /tmp. The entries stay readable because reads outside Runboard's state are allowed
// anyway (a checkout, a project or an X socket may live there).
std::string MountPrivateTmp(const std::string& size, const std::vector<std::string>& seen) {
  std::vector<Copy> entries;
  std::vector<std::pair<std::string, std::string>> links;
  std::string err;
  // Only the entries the run needs: a copy of every entry made each launch wait on the size of the
  // machine's /tmp (4x slower launches with 150 entries), and other programs' files are not the run's.
  std::vector<std::string> names;
  for (const auto& s : seen) {
    if (s.compare(0, 5, "/tmp/") != 0) continue;
    std::string name = s.substr(5, s.find('/', 5) == std::string::npos ? std::string::npos : s.find('/', 5) - 5);
    if (name.empty() || name == "." || name == ".." || std::find(names.begin(), names.end(), name) != names.end())
      continue;
    names.push_back(name);
  }
  {
    for (const auto& name : names) {
      std::string p = "/tmp/" + name;
      struct stat st {};
      if (lstat(p.c_str(), &st) < 0) continue;  // gone meanwhile
      if (S_ISLNK(st.st_mode)) {
        char target[PATH_MAX];
        ssize_t n = readlink(p.c_str(), target, sizeof target - 1);
        if (n > 0) links.emplace_back(p, std::string(target, n));
        continue;
      }
      int fd = static_cast<int>(
          syscall(kSysOpenTree, AT_FDCWD, p.c_str(), kOpenTreeClone | kAtRecursive | kAtSymlinkNofollow | O_CLOEXEC));
      if (fd < 0) {
        if (errno == ENOENT) continue;
        err = Errno("open_tree " + p);
        break;
      }
      entries.push_back({p, S_ISDIR(st.st_mode), fd});
    }
  }
  // A tmpfs, not a folder on disk: nothing of it is made on, or removed from, the disk at every launch
  // (on ext4 without a journal each new inode is looked for past every one freed in the last minutes).
  const std::string options = "mode=1777,size=" + size;
  if (err.empty() && mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, options.c_str()) < 0)
    err = Errno("mount tmpfs (" + options + ") on /tmp");
  for (auto& e : entries) {
    if (err.empty()) err = MakeMountPoint("/tmp", e.path, e.isDir);
    // An entry removed from the machine's /tmp since it was cloned cannot be mounted (ENOENT): it is
    // gone, so its name goes too.
    if (err.empty() && syscall(kSysMoveMount, e.fd, "", AT_FDCWD, e.path.c_str(), kMoveMountFEmptyPath) < 0) {
      if (errno == ENOENT) e.isDir ? rmdir(e.path.c_str()) : unlink(e.path.c_str());
      else err = Errno("move_mount " + e.path);
    }
    close(e.fd);
  }
  for (const auto& l : links) {
    if (err.empty() && symlink(l.second.c_str(), l.first.c_str()) < 0 && errno != EEXIST)
      err = Errno("symlink " + l.first);
  }
  return err;
}

// "/usr" for "/usr/lib/x", "/" for "/".
std::string TopOf(const std::string& path) {
  size_t end = path.find('/', 1);
  return end == std::string::npos ? path : path.substr(0, end);
}

bool InsideAny(const std::string& path, const std::vector<std::string>& trees) {
  for (const auto& t : trees)
    if (t == path || t == "/" || Below(path, t)) return true;
  return false;
}

// Whether the allow-list covers top-level folder `top` (an empty tmpfs, or the run's own /tmp): a real
// folder (not a link: its target is governed), not readable as a whole, and not one of the kernel's
// (/proc and /dev get their own, /sys is for the supervisor's list to allow).
bool CoveredTop(const Policy& policy, const std::string& top) {
  if (top == "/" || top == "/proc" || top == "/dev" || InsideAny(top, policy.readable)) return false;
  if (top == "/tmp" && !policy.privateTmpSize.empty()) return true;
  struct stat st {};
  return lstat(top.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// The hidden trees (but those inside a writable tree) covered by an empty tmpfs, with mount points for
// the writable copies below them.
std::string CoverHidden(const Policy& policy, const std::vector<Copy>& copies) {
  for (const auto& h : policy.hidden) {
    bool insideWritable = false;
    for (const auto& w : policy.writable) insideWritable |= Below(h, w) || h == w;
    struct stat st {};
    if (insideWritable || stat(h.c_str(), &st) < 0) continue;
    if (!S_ISDIR(st.st_mode)) return "hide " + h + ": not a directory";
    if (mount("tmpfs", h.c_str(), "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=0755,size=64k") < 0)
      return Errno("mount tmpfs on " + h);
    for (const auto& c : copies) {
      if (!Below(c.path, h)) continue;
      std::string err = MakeMountPoint(h, c.path, c.isDir);
      if (!err.empty()) return err;
    }
  }
  return "";
}

// Read-only detached copies of the readable trees that lie in a covered top-level folder, but those
// inside a writable tree (which gives more) or inside another readable one (its copy holds them).
std::string CopyReadable(const Policy& policy, std::vector<Copy>* out) {
  std::vector<std::string> trees = policy.readable;
  std::sort(trees.begin(), trees.end());
  std::vector<std::string> taken;
  for (const auto& r : trees) {
    if (r.empty() || r[0] != '/' || !CoveredTop(policy, TopOf(r)) || TopOf(r) == r) continue;
    if (InsideAny(r, taken) || InsideAny(r, policy.writable)) continue;
    bool isHidden = false;
    for (const auto& h : policy.hidden) isHidden |= h == r || Below(r, h);
    struct stat st {};
    if (isHidden || stat(r.c_str(), &st) < 0) continue;  // a missing optional path is no error
    int fd = static_cast<int>(syscall(kSysOpenTree, AT_FDCWD, r.c_str(), kOpenTreeClone | kAtRecursive | O_CLOEXEC));
    if (fd < 0) return Errno("open_tree " + r);
    int parentFd = S_ISDIR(st.st_mode) ? -1 : open(r.substr(0, r.rfind('/')).c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    out->push_back({r, S_ISDIR(st.st_mode), fd, parentFd});
    MountAttr ro{kMountAttrRdonly, 0, 0, 0};
    if (syscall(kSysMountSetattr, fd, "", kAtEmptyPath | kAtRecursive, &ro, sizeof ro) < 0)
      return Errno("mount_setattr " + r + " read-only");
    taken.push_back(r);
  }
  return "";
}

// Puts a readable tree's copy in place. A file replaced by a rename since it was cloned (the board
// rewrites a card's state file as its run starts) left the copy's dentry unlinked, and move_mount says
// ENOENT: the file now at that name is cloned again through its folder and put there instead.
std::string MoveReadCopy(Copy* c) {
  for (int attempt = 0;; ++attempt) {
    if (syscall(kSysMoveMount, c->fd, "", AT_FDCWD, c->path.c_str(), kMoveMountFEmptyPath) == 0) return "";
    if (errno != ENOENT || c->parentFd < 0 || attempt == 50) return Errno("move_mount " + c->path);
    const std::string name = c->path.substr(c->path.rfind('/') + 1);
    // never a link put there meanwhile: only a file replaced by a file is taken again
    int fd = static_cast<int>(
        syscall(kSysOpenTree, c->parentFd, name.c_str(), kOpenTreeClone | kAtSymlinkNofollow | O_CLOEXEC));
    if (fd < 0) return Errno("open_tree " + c->path);
    MountAttr ro{kMountAttrRdonly, 0, 0, 0};
    if (syscall(kSysMountSetattr, fd, "", kAtEmptyPath, &ro, sizeof ro) < 0) {
      close(fd);
      return Errno("mount_setattr " + c->path + " read-only");
    }
    close(c->fd);
    c->fd = fd;
  }
}

// A detached tmpfs (no mount point: fsopen/fsmount) whose folders become the covers: one superblock for
// every covered folder instead of one each (a tmpfs made and torn down per cover was most of what the
// allow-list added to a launch and to a run's end, docs/benchmarks.md). -1 and `err` when it cannot be made.
int CoverSource(std::string* err) {
  int fs = static_cast<int>(syscall(kSysFsopen, "tmpfs", kFsopenCloexec));
  if (fs < 0) {
    *err = Errno("fsopen tmpfs");
    return -1;
  }
  int mnt = -1;
  if (syscall(kSysFsconfig, fs, kFsconfigSetString, "mode", "0755", 0) < 0 ||
      syscall(kSysFsconfig, fs, kFsconfigSetString, "size", "64k", 0) < 0 ||
      syscall(kSysFsconfig, fs, kFsconfigCmdCreate, nullptr, nullptr, 0) < 0)
    *err = Errno("fsconfig tmpfs");
  else if ((mnt = static_cast<int>(syscall(kSysFsmount, fs, kFsmountCloexec, kMountAttrNosuidNodevNoexec))) < 0)
    *err = Errno("fsmount tmpfs");
  close(fs);
  return mnt;
}

// Covers `top` with a folder of its own in the cover source `src` (a bind of it: empty, and nothing made
// in it for one cover shows in another).
std::string CoverWith(int src, const std::string& top) {
  const std::string name = top.substr(1);
  if (mkdirat(src, name.c_str(), 0755) < 0) return Errno("mkdir cover for " + top);
  int fd = static_cast<int>(syscall(kSysOpenTree, src, name.c_str(), kOpenTreeClone | O_CLOEXEC));
  if (fd < 0) return Errno("open_tree cover for " + top);
  std::string err = MoveInto(fd, top);
  close(fd);
  return err;
}

// The entries of the readable trees the run does not see (Policy::blank): a file covered by /dev/null
// (made read-only with everything else later), a folder by an empty folder of the cover source. Links are
// not followed (lstat; the mount itself is on the path's last name, resolved once here).
std::string BlankEntries(const std::vector<std::string>& blank) {
  std::string err;
  int src = -1;
  int n = 0;
  for (const auto& b : blank) {
    struct stat st {};
    if (lstat(b.c_str(), &st) < 0) continue;  // gone: nothing to cover
    if (S_ISREG(st.st_mode)) {
      if (mount("/dev/null", b.c_str(), nullptr, MS_BIND, nullptr) < 0) err = Errno("blank " + b);
    } else if (S_ISDIR(st.st_mode)) {
      if (src < 0) src = CoverSource(&err);
      const std::string name = "blank-" + std::to_string(n++);
      int fd = -1;
      if (err.empty() && mkdirat(src, name.c_str(), 0755) < 0) err = Errno("mkdir blank for " + b);
      if (err.empty() &&
          (fd = static_cast<int>(syscall(kSysOpenTree, src, name.c_str(), kOpenTreeClone | O_CLOEXEC))) < 0)
        err = Errno("open_tree blank for " + b);
      if (err.empty()) err = MoveInto(fd, b);
      if (fd >= 0) close(fd);
    }
    if (!err.empty()) break;
  }
  if (src >= 0) close(src);
  return err;
}

// The top-level folders the allow-list covers (but /tmp, the run's own) under an empty tmpfs folder,
// made read-only with everything else later; the top-level files (not links) under /dev/null.
std::string CoverTopLevel(const Policy& policy) {
  int dfd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  DIR* d = dfd >= 0 ? fdopendir(dfd) : nullptr;
  if (!d) return Errno("open /");
  std::string err;
  int src = -1;
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    const std::string top = "/" + name;
    struct stat st {};
    if (lstat(top.c_str(), &st) < 0) continue;
    if (S_ISREG(st.st_mode) && !InsideAny(top, policy.readable) && !InsideAny(top, policy.writable)) {
      if (mount("/dev/null", top.c_str(), nullptr, MS_BIND, nullptr) < 0) err = Errno("cover " + top);
    } else if ((top != "/tmp" || policy.privateTmpSize.empty()) && CoveredTop(policy, top)) {
      if (src < 0 && (src = CoverSource(&err)) >= 0 && fstat(src, &st) == 0) gCoverDevice = st.st_dev;
      if (err.empty()) err = CoverWith(src, top);
    }
    if (!err.empty()) break;
  }
  closedir(d);
  if (src >= 0) close(src);
  return err;
}

}  // namespace

dev_t gCoverDevice = 0;

std::string ConfineByMounts(const Policy& policy) {
  char cwd[PATH_MAX];
  if (!getcwd(cwd, sizeof cwd)) return Errno("getcwd");
  int cwdCopy = -1;  // the rw copy of the working directory, when it is a writable tree (".")
  if (unshare(CLONE_NEWNS) < 0) return Errno("unshare(CLONE_NEWNS)");
  // Nothing done here may reach the user's mount namespace.
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) < 0) return Errno("make / private");

  // 1. Detached copies of the writable trees and the allowed devices, taken before anything is covered
  //    or made read-only (so they stay rw).
  std::vector<Copy> copies;
  auto closeCopies = [&]() {
    for (auto& c : copies)
      if (c.fd >= 0) close(c.fd);
  };
  std::vector<std::string> sources = policy.writable;
  std::sort(sources.begin(), sources.end(), [](const std::string& a, const std::string& b) {
    return a.size() < b.size();  // parents first, so a nested writable tree lands on top of its parent's copy
  });
  sources.insert(sources.end(), policy.devices.begin(), policy.devices.end());
  for (const auto& w : sources) {
    // The run gets a devpts of its own (step 5): the user's terminals are not the run's to write.
    if (w == "/dev/ptmx" || w == "/dev/pts" || Below(w, "/dev/pts")) continue;
    struct stat st {};
    if (stat(w.c_str(), &st) < 0) {
      if (errno == ENOENT) continue;  // as with Landlock: a missing optional path is no error
      closeCopies();
      return Errno("stat " + w);
    }
    // "." is the directory the jail entered by a descriptor the supervisor checked: it is copied from
    // there, never looked up by name again (a path can be swapped for a symlink meanwhile). Only
    // where the copy is mounted comes from its name.
    int fd = static_cast<int>(syscall(kSysOpenTree, AT_FDCWD, w.c_str(), kOpenTreeClone | kAtRecursive | O_CLOEXEC));
    if (fd < 0) {
      closeCopies();
      return Errno("open_tree " + w);
    }
    if (w == ".") cwdCopy = fd;
    copies.push_back({w == "." ? std::string(cwd) : w, S_ISDIR(st.st_mode), fd});
  }

  const bool allowList = !policy.readable.empty();
  std::vector<std::string> hidden = policy.hidden;
  std::vector<Copy> readCopies;  // read-only copies of the readable trees that lie in covered folders
  auto closeAll = [&]() {
    closeCopies();
    for (auto& c : readCopies) {
      if (c.fd >= 0) close(c.fd);
      if (c.parentFd >= 0) close(c.parentFd);
    }
  };
  if (allowList) {
    // The hidden trees first, on the machine's tree as it is, so that the copies of readable trees
    // around them (step 1b) hold the covers too.
    std::string err = CoverHidden(policy, copies);
    if (err.empty()) err = CopyReadable(policy, &readCopies);
    if (!err.empty()) {
      closeAll();
      return err;
    }
    hidden.clear();
  }

  // The run's /tmp before the covers: a hidden tree below /tmp is covered in it like anywhere else.
  if (!policy.privateTmpSize.empty()) {
    std::string err = MountPrivateTmp(policy.privateTmpSize, allowList ? std::vector<std::string>() : policy.tmpSeen);
    if (!err.empty()) {
      closeAll();
      return err;
    }
  }
  if (allowList) {
    // Every other top-level folder that is not readable as a whole: an empty tmpfs, with the readable
    // trees below it bound back read-only and mount points for the writable ones.
    std::string err = CoverTopLevel(policy);
    std::vector<std::string> inTmp;  // the folders of the run's /tmp made to reach the trees bound there
    for (const auto* list : {&readCopies, &copies}) {
      for (const auto& c : *list) {
        if (!err.empty() || !CoveredTop(policy, TopOf(c.path))) continue;
        err = MakeMountPoint(TopOf(c.path), c.path, c.isDir);
        if (TopOf(c.path) == "/tmp" && !policy.privateTmpSize.empty()) {
          std::string first = c.path.substr(0, c.path.find('/', 5));
          if (std::find(inTmp.begin(), inTmp.end(), first) == inTmp.end()) inTmp.push_back(first);
        }
      }
    }
    // The run's /tmp is its own, but not the folders on the way to its trees there: each is made
    // read-only (a read-only bind of itself), as a copy of the machine's entry used to be.
    for (const auto& t : inTmp) {
      if (!err.empty()) break;
      if (mount(t.c_str(), t.c_str(), nullptr, MS_BIND, nullptr) < 0 ||
          mount(nullptr, t.c_str(), nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV, nullptr) < 0)
        err = Errno("read-only " + t);
    }
    for (auto& c : readCopies) {
      if (err.empty()) err = MoveReadCopy(&c);
      close(c.fd);
      c.fd = -1;
      if (c.parentFd >= 0) close(c.parentFd);
      c.parentFd = -1;
    }
    // After the read copies are in place, so a root-only file below one of them is covered there too.
    if (err.empty()) err = BlankEntries(policy.blank);
    if (!err.empty()) {
      closeCopies();
      return err;
    }
  }

  // 2. Covered trees: an empty tmpfs on top, with mount points for the copies below. The hidden trees
  //    (one below a writable tree stays visible there, as with Landlock: a write grant implies read),
  //    and /dev, which gets only the allowed devices back (with Landlock every other device was
  //    readable but not writable; a read-only mount does not stop device writes, so they go).
  std::vector<std::string> covered;
  for (const auto& h : hidden) {
    bool insideWritable = false;
    for (const auto& w : policy.writable) insideWritable |= Below(h, w) || h == w;
    if (!insideWritable) covered.push_back(h);
  }
  covered.push_back("/dev");
  std::string err;
  for (const auto& h : covered) {
    struct stat st {};
    if (stat(h.c_str(), &st) < 0) {
      if (errno == ENOENT) continue;
      err = Errno("stat " + h);
      break;
    }
    if (!S_ISDIR(st.st_mode)) {
      err = "hide " + h + ": not a directory";
      break;
    }
    if (mount("tmpfs", h.c_str(), "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=0755,size=64k") < 0) {
      err = Errno("mount tmpfs on " + h);
      break;
    }
    for (const auto& c : copies) {
      if (Below(c.path, h)) err = MakeMountPoint(h, c.path, c.isDir);
      if (!err.empty()) break;
    }
    if (!err.empty()) break;
  }
  // What a /dev has besides device nodes (bubblewrap's --dev makes the same).
  const char* const links[][2] = {{"/dev/fd", "/proc/self/fd"},
                                  {"/dev/stdin", "/proc/self/fd/0"},
                                  {"/dev/stdout", "/proc/self/fd/1"},
                                  {"/dev/stderr", "/proc/self/fd/2"},
                                  {"/dev/ptmx", "pts/ptmx"}};
  for (const auto& l : links) {
    if (err.empty() && symlink(l[1], l[0]) < 0 && errno != EEXIST) err = Errno(std::string("symlink ") + l[0]);
  }
  if (err.empty() && mkdir("/dev/pts", 0755) < 0 && errno != EEXIST) err = Errno("mkdir /dev/pts");

  // 3. Everything read-only, recursively (the hiding tmpfs mounts too).
  if (err.empty()) {
    MountAttr attr{kMountAttrRdonly, 0, 0, 0};
    if (syscall(kSysMountSetattr, AT_FDCWD, "/", kAtRecursive, &attr, sizeof attr) < 0)
      err = Errno("mount_setattr / read-only");
  }
  // but the run's own /tmp (not what was bound into it)
  if (err.empty() && !policy.privateTmpSize.empty()) {
    MountAttr rw{0, kMountAttrRdonly, 0, 0};
    if (syscall(kSysMountSetattr, AT_FDCWD, "/tmp", 0, &rw, sizeof rw) < 0) err = Errno("mount_setattr /tmp writable");
  }

  // 4. The copies back in place (they kept their rw flag).
  for (auto& c : copies) {
    if (err.empty()) err = MoveInto(c.fd, c.path);
    if (c.fd != cwdCopy) close(c.fd);
    c.fd = -1;
  }

  // The read-only exceptions inside the writable trees: a read-only copy of each on top of itself.
  // Being a mount point, it cannot be replaced by a rename or removed either (EBUSY).
  // A file replaced by a rename between its clone and its move (config.yaml as the board saves it) is
  // cloned again (move_mount says ENOENT for the unlinked one).
  for (const auto& r : policy.readOnly) {
    for (int attempt = 0; err.empty(); ++attempt) {
      int fd = static_cast<int>(syscall(kSysOpenTree, AT_FDCWD, r.c_str(), kOpenTreeClone | kAtRecursive | O_CLOEXEC));
      if (fd < 0) {
        if (errno != ENOENT) err = Errno("open_tree " + r);
        break;
      }
      MountAttr ro{kMountAttrRdonly, 0, 0, 0};
      if (syscall(kSysMountSetattr, fd, "", kAtEmptyPath | kAtRecursive, &ro, sizeof ro) < 0)
        err = Errno("mount_setattr " + r + " read-only");
      bool moved = err.empty() && syscall(kSysMoveMount, fd, "", AT_FDCWD, r.c_str(), kMoveMountFEmptyPath) == 0;
      if (err.empty() && !moved && (errno != ENOENT || attempt == 50)) err = Errno("move_mount " + r);
      close(fd);
      if (moved) break;
    }
  }

  // 5. A /proc of the run's own PID namespace (after step 3, so it stays writable: bubblewrap writes
  //    its child's uid_map there). Other processes of the machine are not in it.
  if (err.empty() && mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) < 0)
    err = Errno("mount proc on /proc");
  // And a devpts instance of its own, for the terminals it opens (/dev/ptmx links to its ptmx).
  if (err.empty() &&
      mount("devpts", "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC, "newinstance,ptmxmode=0666,mode=0620") < 0)
    err = Errno("mount devpts on /dev/pts");

  // The old working directory is the read-only tree below the new mounts: enter the new one (the
  // copy itself when the working directory is a writable tree).
  if (err.empty() && (cwdCopy >= 0 ? fchdir(cwdCopy) : chdir(cwd)) < 0) err = Errno(std::string("chdir ") + cwd);
  if (cwdCopy >= 0) close(cwdCopy);
  return err;
}

std::string MaskDirs(const std::vector<std::string>& masks, const std::vector<std::string>& keeps) {
  if (unshare(CLONE_NEWNS) < 0) return Errno("unshare(CLONE_NEWNS)");
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) < 0) return Errno("make / private");
  for (const auto& dir : masks) {
    struct stat st {};
    if (stat(dir.c_str(), &st) < 0) continue;  // nothing there to hide
    if (!S_ISDIR(st.st_mode)) return "mask " + dir + ": not a directory";
    std::vector<Copy> kept;  // detached copies of the kept entries, taken before the cover goes on
    std::string err;
    for (const auto& k : keeps) {
      if (!Below(k, dir)) continue;
      if (k.find('/', dir.size() + 1) != std::string::npos) err = "keep " + k + ": only direct children of a mask";
      struct stat ks {};
      if (err.empty() && lstat(k.c_str(), &ks) < 0) err = Errno("keep " + k);
      int fd =
          err.empty() ? static_cast<int>(syscall(kSysOpenTree, AT_FDCWD, k.c_str(), kOpenTreeClone | O_CLOEXEC)) : -1;
      if (err.empty() && fd < 0) err = Errno("open_tree " + k);
      if (!err.empty()) break;
      kept.push_back({k, S_ISDIR(ks.st_mode), fd});
    }
    if (err.empty() && mount("tmpfs", dir.c_str(), "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0755,size=16k") < 0)
      err = Errno("mount tmpfs on " + dir);
    for (auto& k : kept) {
      if (err.empty()) err = MakeMountPoint(dir, k.path, k.isDir);
      if (err.empty() && syscall(kSysMoveMount, k.fd, "", AT_FDCWD, k.path.c_str(), kMoveMountFEmptyPath) < 0)
        err = Errno("move_mount " + k.path);
      close(k.fd);
    }
    // The cover read-only (not recursively: the kept sockets stay as they were).
    if (err.empty() &&
        mount("tmpfs", dir.c_str(), nullptr, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) < 0)
      err = Errno("remount " + dir + " read-only");
    if (!err.empty()) return err;
  }
  return "";
}

std::string DropCapabilities() {
  // A run as root (uid 0 mapped to itself) gets its capabilities back from the bounding set at exec.
  // CAP_SETFCAP stays (bounding and permitted set): the kernel lets a user namespace map uid 0 only if
  // its creator had CAP_SETFCAP (verify_root_map), so without it a root run could not start
  // bubblewrap. It grants no way out: mounts need CAP_SYS_ADMIN, and no_new_privs makes file caps inert.
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) return Errno("prctl(NO_NEW_PRIVS)");
  const int keep = getuid() == 0 ? CAP_SETFCAP : -1;
  for (int cap = 0; cap <= 63; ++cap) {
    if (cap != keep && prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && errno != EINVAL) return Errno("PR_CAPBSET_DROP");
  }
  if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
    return Errno("PR_CAP_AMBIENT_CLEAR_ALL");
  __user_cap_header_struct hdr{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2]{};
  if (keep >= 0) {  // also in the permitted set: with no_new_privs, exec grants nothing not held before
    data[keep / 32].permitted = data[keep / 32].effective = 1U << (keep % 32);
  }
  if (syscall(SYS_capset, &hdr, data) < 0) return Errno("capset");
  return "";
}

}  // namespace runboard::mounts
