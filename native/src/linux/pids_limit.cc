#include "linux/pids_limit.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

namespace runboard::pids {
namespace {

bool WriteText(const std::string& path, const std::string& text) {
  int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool ok = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  int saved = errno;
  close(fd);
  errno = saved;
  return ok;
}

bool Exists(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0;
}

// The directory of the jail's cgroup in a hierarchy where `controller` is available, and whether that
// hierarchy is cgroup v2.
std::string OwnCgroup(const std::string& controller, bool* v2out) {
  std::ifstream in("/proc/self/cgroup");
  std::string line, v1, v2;
  while (std::getline(in, line)) {
    // "ID:CONTROLLERS:PATH"
    size_t a = line.find(':'), b = a == std::string::npos ? a : line.find(':', a + 1);
    if (b == std::string::npos) continue;
    std::string controllers = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
    std::stringstream list(controllers);
    for (std::string c; std::getline(list, c, ',');)
      if (c == controller) v1 = "/sys/fs/cgroup/" + controller + (path == "/" ? "" : path);
    if (line.compare(0, 3, "0::") == 0) v2 = path;
  }
  *v2out = false;
  if (!v1.empty() && Exists(v1 + "/cgroup.procs")) return v1;
  // cgroup v2: usable only where the controller is already enabled for our children.
  for (const char* mount : {"/sys/fs/cgroup", "/sys/fs/cgroup/unified"}) {
    std::string dir = std::string(mount) + (v2 == "/" ? "" : v2);
    std::ifstream sub(dir + "/cgroup.subtree_control");
    std::string word;
    while (sub >> word)
      if (word == controller) {
        *v2out = true;
        return dir;
      }
  }
  return "";
}

std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The number after "key " on a line of a flat keyed file (memory.events, memory.oom_control); -1.
long long KeyedValue(const std::string& text, const std::string& key) {
  std::stringstream lines(text);
  for (std::string line; std::getline(lines, line);)
    if (line.compare(0, key.size() + 1, key + " ") == 0) return atoll(line.c_str() + key.size() + 1);
  return -1;
}

// The cgroups of jails that were killed (SIGKILL leaves no chance to remove them): empty, their
// jail gone. rmdir removes only an empty cgroup, and a live jail's pid is skipped.
void RemoveStale(const std::string& parent) {
  DIR* d = opendir(parent.c_str());
  if (!d) return;
  const std::string prefix = "runboard-run-";
  while (dirent* e = readdir(d)) {
    std::string name = e->d_name;
    if (name.compare(0, prefix.size(), prefix) != 0) continue;
    pid_t pid = static_cast<pid_t>(atol(name.c_str() + prefix.size()));
    if (pid > 0 && kill(pid, 0) < 0 && errno == ESRCH) rmdir((parent + "/" + name).c_str());
  }
  closedir(d);
}

// Whether no process is in the cgroup `dir` (a killed run's last ones may still be leaving it).
bool NoProcesses(const std::string& dir) {
  int fd = open((dir + "/cgroup.procs").c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char c;
  ssize_t n = read(fd, &c, 1);
  close(fd);
  return n == 0;
}

constexpr int kSlots = 256;
const char kSlotPrefix[] = "/runboard-slot-";

}  // namespace

// The run's cgroups are slots kept from run to run (runboard-slot-N), not made and removed per run: a
// removed memory cgroup stays in the kernel, dying, for as long as any page cache the run was charged
// for (files it wrote or first read) is in memory; a CI suite left hundreds. A jail holds its slot by
// an flock on the slot's folder (the kernel lets it go when the jail dies, however it dies), and takes
// only a slot with no process in it. With two hierarchies (cgroup v1) the slot number of the first
// holds for the second. All slots taken (or a slot that cannot be locked): a cgroup of the jail's own,
// removed at the end, as before.
bool RunCgroup::Make(const char* controller, Group* g, std::string* reason) {
  std::string parent = OwnCgroup(controller, &g->v2);
  if (parent.empty()) {
    *reason = std::string("no ") + controller + " cgroup controller available to this process";
    return false;
  }
  RemoveStale(parent);
  std::string dir;
  if (slot_ >= 0) {
    dir = parent + kSlotPrefix + std::to_string(slot_);
    if ((mkdir(dir.c_str(), 0755) < 0 && errno != EEXIST) || !NoProcesses(dir)) dir.clear();
  } else {
    for (int n = 0; n < kSlots && dir.empty(); ++n) {
      std::string d = parent + kSlotPrefix + std::to_string(n);
      if (mkdir(d.c_str(), 0755) < 0 && errno != EEXIST) break;
      int fd = open(d.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      if (fd < 0) break;
      if (flock(fd, LOCK_EX | LOCK_NB) == 0 && NoProcesses(d)) {
        slot_ = n;
        lockFd_ = fd;
        dir = d;
      } else {
        close(fd);
      }
    }
  }
  g->own = dir.empty();
  if (g->own) {
    dir = parent + "/runboard-run-" + std::to_string(getpid());
    if (mkdir(dir.c_str(), 0755) < 0 && errno != EEXIST) {
      *reason = "mkdir " + dir + ": " + strerror(errno);
      return false;
    }
  }
  g->dir = dir;
  return true;
}

void RunCgroup::Drop(Group* g) {
  if (g->procsFd >= 0) close(g->procsFd);
  g->procsFd = -1;
  if (g->dir.empty()) return;
  // A slot stays for the next run; a cgroup of the jail's own goes. The run's last processes may still
  // be leaving it for a moment after they were reaped.
  for (int i = 0; g->own && i < 50 && rmdir(g->dir.c_str()) < 0 && errno == EBUSY; ++i) usleep(1000);
  g->dir.clear();
  g->moved = false;
  g->own = false;
}

bool RunCgroup::Create(long limit, std::string* reason) {
  if (!Make("pids", &pids_, reason)) return false;
  if (!WriteText(pids_.dir + "/pids.max", std::to_string(limit)) ||
      (pids_.procsFd = open((pids_.dir + "/cgroup.procs").c_str(), O_WRONLY | O_CLOEXEC)) < 0) {
    *reason = pids_.dir + ": " + strerror(errno);
    Drop(&pids_);
    return false;
  }
  return true;
}

bool RunCgroup::CreateMemory(long long bytes, std::string* reason) {
  bool v2 = false;
  std::string parent = OwnCgroup("memory", &v2);
  // One hierarchy for both (v2 with both controllers): the pids cgroup takes the memory limit too.
  if (v2 && pids_.v2 && !pids_.dir.empty() && pids_.dir.compare(0, parent.size() + 1, parent + "/") == 0 &&
      pids_.dir.find('/', parent.size() + 1) == std::string::npos) {
    memory_ = pids_;
    memory_.procsFd = -1;
    sharedDir_ = true;
  } else if (!Make("memory", &memory_, reason)) {
    return false;
  }
  const std::string& dir = memory_.dir;
  const std::string value = std::to_string(bytes);
  auto fail = [&](const std::string& file) {
    *reason = dir + "/" + file + ": " + strerror(errno);
    if (sharedDir_) memory_ = Group{};
    else Drop(&memory_);
    sharedDir_ = false;
    if (oomFd_ >= 0) close(oomFd_);
    oomFd_ = -1;
    return false;
  };
  if (memory_.v2) {
    // A slot counts on: its OOM kills and peak so far are the earlier runs'. The peak is reset for
    // this descriptor alone (Linux 6.12); where that is refused, the slot's peak is what is reported.
    oomBase_ = std::max(0LL, KeyedValue(ReadText(dir + "/memory.events"), "oom_kill"));
    peakFd_ = open((dir + "/memory.peak").c_str(), O_RDWR | O_CLOEXEC);
    if (peakFd_ >= 0 && write(peakFd_, "reset\n", 6) != 6) {
      close(peakFd_);
      peakFd_ = -1;
    }
    if (!WriteText(dir + "/memory.max", value)) return fail("memory.max");
    // Swap is not more room: the limit is the run's memory (where the kernel accounts swap at all).
    if (Exists(dir + "/memory.swap.max") && !WriteText(dir + "/memory.swap.max", "0")) return fail("memory.swap.max");
    // The whole run ends at the limit, not one process the kernel picks (a run half gone is no clear end).
    if (!WriteText(dir + "/memory.oom.group", "1")) return fail("memory.oom.group");
  } else {
    oomBase_ = std::max(0LL, KeyedValue(ReadText(dir + "/memory.oom_control"), "oom_kill"));
    WriteText(dir + "/memory.max_usage_in_bytes", "0");  // a slot's peak so far is the earlier runs'
    // memsw may never be below the limit: lifted first (a slot keeps the last run's values).
    const bool memsw = Exists(dir + "/memory.memsw.limit_in_bytes");
    if (memsw && !WriteText(dir + "/memory.memsw.limit_in_bytes", "-1")) return fail("memory.memsw.limit_in_bytes");
    if (!WriteText(dir + "/memory.limit_in_bytes", value)) return fail("memory.limit_in_bytes");
    if (memsw && !WriteText(dir + "/memory.memsw.limit_in_bytes", value)) return fail("memory.memsw.limit_in_bytes");
    // v1 has no oom.group: an eventfd says when the run met its limit, and the jail ends the run.
    int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    int ofd = open((dir + "/memory.oom_control").c_str(), O_RDONLY | O_CLOEXEC);
    bool armed = efd >= 0 && ofd >= 0 &&
                 WriteText(dir + "/cgroup.event_control", std::to_string(efd) + " " + std::to_string(ofd));
    if (ofd >= 0) close(ofd);
    if (!armed) {
      if (efd >= 0) close(efd);
      return fail("cgroup.event_control");
    }
    oomFd_ = efd;
  }
  if (!sharedDir_ && (memory_.procsFd = open((dir + "/cgroup.procs").c_str(), O_WRONLY | O_CLOEXEC)) < 0)
    return fail("cgroup.procs");
  return true;
}

bool RunCgroup::AddProcess(pid_t pid, std::string* reason) {
  std::string text = std::to_string(pid);
  bool ok = true;
  for (Group* g : {&pids_, &memory_}) {
    if (g->procsFd < 0) continue;
    if (write(g->procsFd, text.data(), text.size()) == static_cast<ssize_t>(text.size())) {
      g->moved = true;
    } else {
      *reason += (reason->empty() ? "" : "; ") + g->dir + "/cgroup.procs: " + strerror(errno);
      ok = false;
    }
    close(g->procsFd);
    g->procsFd = -1;
  }
  if (sharedDir_) memory_.moved = pids_.moved;
  return ok;
}

long long RunCgroup::OomKills() const {
  if (memory_.dir.empty()) return -1;
  long long kills = memory_.v2 ? KeyedValue(ReadText(memory_.dir + "/memory.events"), "oom_kill")
                               : KeyedValue(ReadText(memory_.dir + "/memory.oom_control"), "oom_kill");
  return kills < 0 ? -1 : std::max(0LL, kills - oomBase_);
}

long long RunCgroup::MemoryPeak() const {
  if (memory_.dir.empty()) return -1;
  if (peakFd_ >= 0) {
    char buf[32] = {};
    ssize_t n = pread(peakFd_, buf, sizeof buf - 1, 0);
    if (n > 0) return atoll(buf);
  }
  std::string text = ReadText(memory_.dir + (memory_.v2 ? "/memory.peak" : "/memory.max_usage_in_bytes"));
  return text.empty() ? -1 : atoll(text.c_str());
}

void RunCgroup::Remove() {
  if (oomFd_ >= 0) close(oomFd_);
  oomFd_ = -1;
  if (peakFd_ >= 0) close(peakFd_);
  peakFd_ = -1;
  if (sharedDir_) memory_ = Group{};
  sharedDir_ = false;
  Drop(&memory_);
  Drop(&pids_);
  if (lockFd_ >= 0) close(lockFd_);  // the slot is free for the next run
  lockFd_ = -1;
  slot_ = -1;
}

std::string SetNprocLimit(long limit) {
  rlimit rl{static_cast<rlim_t>(limit), static_cast<rlim_t>(limit)};
  if (setrlimit(RLIMIT_NPROC, &rl) < 0) return std::string("setrlimit(RLIMIT_NPROC): ") + strerror(errno);
  return "";
}

}  // namespace runboard::pids
