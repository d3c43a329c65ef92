#include "linux/pids_limit.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
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

// The directory of the jail's cgroup in a hierarchy where the pids controller is available.
std::string OwnPidsCgroup() {
  std::ifstream in("/proc/self/cgroup");
  std::string line, v1, v2;
  while (std::getline(in, line)) {
    // "ID:CONTROLLERS:PATH"
    size_t a = line.find(':'), b = a == std::string::npos ? a : line.find(':', a + 1);
    if (b == std::string::npos) continue;
    std::string controllers = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
    std::stringstream list(controllers);
    for (std::string c; std::getline(list, c, ',');)
      if (c == "pids") v1 = "/sys/fs/cgroup/pids" + path;
    if (line.compare(0, 3, "0::") == 0) v2 = path;
  }
  if (!v1.empty() && Exists(v1 + "/cgroup.procs")) return v1;
  // cgroup v2: usable only where the pids controller is already enabled for our children.
  for (const char* mount : {"/sys/fs/cgroup", "/sys/fs/cgroup/unified"}) {
    std::string dir = std::string(mount) + (v2 == "/" ? "" : v2);
    std::ifstream sub(dir + "/cgroup.subtree_control");
    std::string word;
    while (sub >> word)
      if (word == "pids") return dir;
  }
  return "";
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

}  // namespace

bool RunCgroup::Create(long limit, std::string* reason) {
  std::string parent = OwnPidsCgroup();
  if (parent.empty()) {
    *reason = "no pids cgroup controller available to this process";
    return false;
  }
  RemoveStale(parent);
  std::string dir = parent + "/runboard-run-" + std::to_string(getpid());
  if (mkdir(dir.c_str(), 0755) < 0 && errno != EEXIST) {
    *reason = "mkdir " + dir + ": " + strerror(errno);
    return false;
  }
  int fd = -1;
  if (!WriteText(dir + "/pids.max", std::to_string(limit)) ||
      (fd = open((dir + "/cgroup.procs").c_str(), O_WRONLY | O_CLOEXEC)) < 0) {
    *reason = dir + ": " + strerror(errno);
    rmdir(dir.c_str());
    return false;
  }
  dir_ = dir;
  procsFd_ = fd;
  return true;
}

bool RunCgroup::AddProcess(pid_t pid, std::string* reason) {
  if (procsFd_ < 0) return false;
  std::string text = std::to_string(pid);
  bool ok = write(procsFd_, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  if (!ok) *reason = dir_ + "/cgroup.procs: " + strerror(errno);
  close(procsFd_);
  procsFd_ = -1;
  if (!ok) Remove();
  return ok;
}

void RunCgroup::Remove() {
  if (procsFd_ >= 0) close(procsFd_);
  procsFd_ = -1;
  if (dir_.empty()) return;
  // The run's last processes may still be leaving the cgroup for a moment after they were reaped.
  for (int i = 0; i < 50 && rmdir(dir_.c_str()) < 0 && errno == EBUSY; ++i) usleep(1000);
  dir_.clear();
}

std::string SetNprocLimit(long limit) {
  rlimit rl{static_cast<rlim_t>(limit), static_cast<rlim_t>(limit)};
  if (setrlimit(RLIMIT_NPROC, &rl) < 0) return std::string("setrlimit(RLIMIT_NPROC): ") + strerror(errno);
  return "";
}

}  // namespace runboard::pids
