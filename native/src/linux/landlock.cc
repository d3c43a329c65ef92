#include "linux/landlock.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <cerrno>
#include <cstring>
#include <functional>
#include <map>

namespace runboard::landlock {
namespace {

// Values from the kernel UAPI (include/uapi/linux/landlock.h), declared here because the distribution's
// header may be older than the kernel (Debian 12 ships ABI 2 constants on a kernel with ABI 7).
constexpr uint32_t LANDLOCK_CREATE_RULESET_VERSION = 1U << 0;
constexpr int LANDLOCK_RULE_PATH_BENEATH = 1;
constexpr uint64_t LANDLOCK_ACCESS_FS_EXECUTE = 1ULL << 0;
constexpr uint64_t LANDLOCK_ACCESS_FS_WRITE_FILE = 1ULL << 1;
constexpr uint64_t LANDLOCK_ACCESS_FS_READ_FILE = 1ULL << 2;
constexpr uint64_t LANDLOCK_ACCESS_FS_READ_DIR = 1ULL << 3;
constexpr uint64_t LANDLOCK_ACCESS_FS_REMOVE_DIR = 1ULL << 4;
constexpr uint64_t LANDLOCK_ACCESS_FS_REMOVE_FILE = 1ULL << 5;
constexpr uint64_t LANDLOCK_ACCESS_FS_MAKE_SYM = 1ULL << 12;
constexpr uint64_t LANDLOCK_ACCESS_FS_REFER = 1ULL << 13;  // ABI 2
constexpr uint64_t kFsTruncate = 1ULL << 14;               // ABI 3
constexpr uint64_t kFsIoctlDev = 1ULL << 15;               // ABI 5 (not handled: see RestrictSelf)
constexpr uint64_t kNetBindTcp = 1ULL << 0;                // ABI 4
constexpr uint64_t kNetConnectTcp = 1ULL << 1;             // ABI 4
constexpr uint64_t kScopeAbstractUnix = 1ULL << 0;         // ABI 6
constexpr uint64_t kScopeSignal = 1ULL << 1;               // ABI 6
constexpr int kRuleNetPort = 2;

struct RulesetAttr {
  uint64_t handled_access_fs;
  uint64_t handled_access_net;
  uint64_t scoped;
};
struct PathBeneathAttr {
  uint64_t allowed_access;
  int32_t parent_fd;
} __attribute__((packed));
struct NetPortAttr {
  uint64_t allowed_access;
  uint64_t port;
};

long CreateRuleset(const RulesetAttr* attr, size_t size, uint32_t flags) {
  return syscall(__NR_landlock_create_ruleset, attr, size, flags);
}
long AddRule(int fd, int type, const void* attr) { return syscall(__NR_landlock_add_rule, fd, type, attr, 0); }

uint64_t FsRightsFor(int abi) {
  uint64_t all = (LANDLOCK_ACCESS_FS_MAKE_SYM << 1) - 1;  // ABI 1: bits 0..12
  if (abi >= 2) all |= LANDLOCK_ACCESS_FS_REFER;
  if (abi >= 3) all |= kFsTruncate;
  (void)kFsIoctlDev;
  return all;
}

std::string Errno(const std::string& what) { return what + ": " + std::strerror(errno); }

}  // namespace

int Abi(std::string* reason) {
  long abi = CreateRuleset(nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION);
  if (abi < 0) {
    if (reason) {
      *reason = errno == ENOSYS       ? "the kernel was built without Landlock"
                : errno == EOPNOTSUPP ? "Landlock is disabled at boot (add landlock to the lsm= kernel parameter)"
                                      : Errno("landlock_create_ruleset");
    }
    return 0;
  }
  return static_cast<int>(abi);
}

std::string RestrictSelf(const Policy& policy, int abi, bool* enforced) {
  if (enforced) *enforced = false;
  const uint64_t fsAll = FsRightsFor(abi);
  const uint64_t readOnly = LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR;
  // IOCTL_DEV (ABI 5) is deliberately not handled: restricting it breaks isatty() on terminals, and
  // device ioctls are not a write path into the user's files.
  RulesetAttr attr{policy.restrictFs ? fsAll : 0, 0, 0};
  if (abi >= 4 && policy.restrictNetwork) attr.handled_access_net = kNetBindTcp | kNetConnectTcp;
  if (abi >= 6) {
    if (policy.scopeAbstractUnix) attr.scoped |= kScopeAbstractUnix;
    if (policy.scopeSignals) attr.scoped |= kScopeSignal;
  }
  if (!attr.handled_access_fs && !attr.handled_access_net && !attr.scoped) return "";
  size_t size = abi >= 6 ? sizeof(RulesetAttr) : abi >= 4 ? 2 * sizeof(uint64_t) : sizeof(uint64_t);
  int rfd = static_cast<int>(CreateRuleset(&attr, size, 0));
  if (rfd < 0) return Errno("landlock_create_ruleset");

  // `follow`: the policy's own paths may be symlinks (resolved once, here); the entries found while
  // walking towards a hidden tree are taken as they are.
  auto addPath = [&](const std::string& path, uint64_t access, bool follow = true) -> std::string {
    int fd = open(path.c_str(), O_PATH | O_CLOEXEC | (follow ? 0 : O_NOFOLLOW));
    if (fd < 0) return errno == ENOENT ? "" : Errno("open " + path);  // a missing optional path is no error
    struct stat st {};
    uint64_t allowed = access & fsAll;
    if (fstat(fd, &st) == 0 && !S_ISDIR(st.st_mode)) {
      // Rules on a non-directory may only carry file rights.
      allowed &=
          LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_READ_FILE | kFsTruncate;
    }
    PathBeneathAttr rule{allowed, fd};
    long rc = AddRule(rfd, LANDLOCK_RULE_PATH_BENEATH, &rule);
    int saved = errno;
    close(fd);
    errno = saved;
    return rc < 0 ? Errno("landlock_add_rule " + path) : "";
  };

  // Read everywhere except the hidden trees: Landlock only grants, so "all but X" is written as a rule
  // for every sibling of each directory on the way from / to X.
  std::function<std::string(const std::string&, std::vector<std::string>)> addReadExcept =
      [&](const std::string& dir, std::vector<std::string> hide) -> std::string {
    if (hide.empty()) return addPath(dir, readOnly);
    for (const auto& h : hide)
      if (h == dir) return "";                              // the whole tree is hidden
    std::map<std::string, std::vector<std::string>> below;  // next path component -> hidden paths under it
    const std::string prefix = dir == "/" ? "/" : dir + "/";
    for (const auto& h : hide) {
      if (h.compare(0, prefix.size(), prefix) != 0) continue;
      below[h.substr(prefix.size(), h.find('/', prefix.size()) - prefix.size())].push_back(h);
    }
    // The directories on the way may still be listed (names are no secret, and `ls ~` keeps working);
    // READ_DIR does not let a run read the files below.
    std::string err = addPath(dir, LANDLOCK_ACCESS_FS_READ_DIR, false);
    if (!err.empty()) return err;
    int dfd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    DIR* d = dfd >= 0 ? fdopendir(dfd) : nullptr;
    if (!d) {
      if (dfd >= 0) close(dfd);
      return "";  // unreadable anyway
    }
    while (dirent* e = readdir(d)) {
      std::string name = e->d_name;
      if (name == "." || name == "..") continue;
      // A symlink needs no rule: what it points to is governed by the rules of its target. A rule on
      // its target instead would grant that whole tree (`x -> /` next to a folder on the way would
      // make the hidden tree readable again).
      struct stat st {};
      if (fstatat(dfd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode)) continue;
      auto it = below.find(name);
      err = it == below.end() ? addPath(prefix + name, readOnly, false) : addReadExcept(prefix + name, it->second);
      if (!err.empty()) break;
    }
    closedir(d);
    return err;
  };
  std::string err;
  if (policy.restrictFs) {
    if (policy.readable.empty()) err = addReadExcept("/", policy.hidden);
    // The allow-list: a read rule on each readable tree (with the hidden trees below it carved out), none
    // on anything else. Path lookups need no right, so the trees stay reachable by their full names.
    for (const auto& r : policy.readable) {
      if (!err.empty()) break;
      std::vector<std::string> hide;
      bool isHidden = false;
      for (const auto& h : policy.hidden) {
        const std::string rSlash = r == "/" ? "/" : r + "/";
        if (h == r || r.compare(0, h.size() + 1, h + "/") == 0) isHidden = true;
        else if (h.compare(0, rSlash.size(), rSlash) == 0) hide.push_back(h);
      }
      if (!isHidden) err = addReadExcept(r, hide);
    }
    const uint64_t remove = LANDLOCK_ACCESS_FS_REMOVE_DIR | LANDLOCK_ACCESS_FS_REMOVE_FILE;
    // Landlock only adds rights, so with deletes withheld in the workspace every writable tree around
    // it (the run's private /tmp when the workspace lies below /tmp, a flow's writable parent) loses the
    // remove rights too; otherwise its rule would give them back.
    char cwdBuf[PATH_MAX];
    const std::string cwd = policy.workspaceNoRemove && getcwd(cwdBuf, sizeof cwdBuf) ? cwdBuf : "";
    auto aroundWorkspace = [&](const std::string& p) {
      if (p == ".") return true;
      char real[PATH_MAX];
      if (cwd.empty() || !realpath(p.c_str(), real)) return false;
      const std::string r = real;
      return r == "/" || cwd == r || cwd.compare(0, r.size() + 1, r + "/") == 0;
    };
    for (const auto& p : policy.writable) {
      if (err.empty()) err = addPath(p, policy.workspaceNoRemove && aroundWorkspace(p) ? fsAll & ~remove : fsAll);
    }
    // Folders of the workspace where deletes need no ask, found from "." without following any link:
    // a link a run left there (to a folder outside) must not carry the remove rights out.
    for (const auto& rel : policy.removable) {
      if (!err.empty()) break;
      struct {
        uint64_t flags, mode, resolve;
      } how{O_PATH | O_DIRECTORY | O_CLOEXEC, 0, 0x08 /* RESOLVE_BENEATH */ | 0x04 /* RESOLVE_NO_SYMLINKS */};
      int fd = static_cast<int>(syscall(SYS_openat2, AT_FDCWD, rel.c_str(), &how, sizeof how));
      if (fd < 0) continue;  // not there (or a link): no deletes there
      PathBeneathAttr rule{remove & fsAll, fd};
      if (AddRule(rfd, LANDLOCK_RULE_PATH_BENEATH, &rule) < 0) err = Errno("landlock_add_rule " + rel);
      close(fd);
    }
    auto addSlot = [&](int fd, uint64_t access) {
      PathBeneathAttr rule{access & fsAll, fd};
      if (err.empty() && AddRule(rfd, LANDLOCK_RULE_PATH_BENEATH, &rule) < 0) err = Errno("landlock_add_rule slot");
    };
    for (int fd : policy.readSlots) addSlot(fd, readOnly);
    for (int fd : policy.writeSlots) addSlot(fd, policy.workspaceNoRemove ? fsAll & ~remove : fsAll);
    for (const auto& d : policy.devices) {
      if (err.empty()) err = addPath(d, readOnly | LANDLOCK_ACCESS_FS_WRITE_FILE | kFsTruncate);
    }
  }
  if (err.empty() && attr.handled_access_net) {
    for (uint16_t port : policy.tcpConnectPorts) {
      NetPortAttr rule{kNetConnectTcp, port};
      if (AddRule(rfd, kRuleNetPort, &rule) < 0) {
        err = Errno("landlock_add_rule port " + std::to_string(port));
        break;
      }
    }
  }
  if (err.empty() && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) err = Errno("prctl(NO_NEW_PRIVS)");
  if (err.empty() && syscall(__NR_landlock_restrict_self, rfd, 0) < 0) err = Errno("landlock_restrict_self");
  close(rfd);
  if (err.empty() && enforced) *enforced = true;
  return err;
}

}  // namespace runboard::landlock
