// The budget of private sockets per app process (decisions 108, 113): at-spi2-atk never forgets a
// private connection, and each one it keeps costs every later turn of the app's main loop, so the
// sockets all our processes open to one app's own address (the first of a process's included; small
// batches and GDBus's calls go over the bus and open none) are counted in a file of its own under
// $XDG_RUNTIME_DIR/runboard-atspi/, named by a hash of the app's socket address (unique per app process:
// at-spi2-atk makes its folder with mkdtemp). The file holds the socket's path and a newline, then one
// byte per socket opened: its size is the count. Writes are O_APPEND (atomic: no lock); two
// processes that read the count at once may both open theirs, so the budget can be passed by one batch
// per process reading at that moment, no more.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "linux/dbus_wire.h"

namespace runboard::desktop::atspi::wire {
namespace {

constexpr size_t kBudget = 48;  // private sockets per app process, from all our processes: a few big reads

size_t Budget() {
  static const size_t budget = [] {
    const char* v = std::getenv("RUNBOARD_ATSPI_SPREAD_BUDGET");  // for tests and benchmarks
    if (!v || !*v) return kBudget;
    char* end = nullptr;
    unsigned long n = std::strtoul(v, &end, 10);
    return *end ? kBudget : static_cast<size_t>(n);
  }();
  return budget;
}

// A folder of the user's own (not a link, owned by the effective uid, no bits in `notMode`), opened
// at `at`; made (0700) when missing and `make`. -1 when it is not safe to use.
int OwnDir(int at, const char* name, mode_t notMode, bool make) {
  int fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0 && errno == ENOENT && make && (mkdirat(at, name, 0700) == 0 || errno == EEXIST))
    fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return -1;
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & notMode) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// $XDG_RUNTIME_DIR/runboard-atspi, checked at each step; -1 without $XDG_RUNTIME_DIR or when a step is
// not the user's own (a shared /tmp's folder made by someone else never qualifies). Not under
// runboard/ (the supervisor's): a run's jail covers that with a tmpfs of its own, which would give each
// run a budget of its own; the runtime folder itself a run reads at most (no spread there).
int BudgetDir() {
  const char* xdg = std::getenv("XDG_RUNTIME_DIR");
  if (!xdg || xdg[0] != '/') return -1;
  int base = OwnDir(AT_FDCWD, xdg, 077, false);
  if (base < 0) return -1;
  int dir = OwnDir(base, "runboard-atspi", 077, true);
  close(base);
  return dir;
}

std::string NameOf(std::string_view key) {  // FNV-1a 64: the same in every build
  uint64_t h = 14695981039346656037ull;
  for (char ch : key) {
    h ^= static_cast<unsigned char>(ch);
    h *= 1099511628211ull;
  }
  char name[24];
  std::snprintf(name, sizeof name, "%016llx", static_cast<unsigned long long>(h));
  return name;
}

// Removes the files of apps whose socket path is gone (run when a new app's file is made: rarely).
void RemoveStale(int dir) {
  int fd = dup(dir);
  DIR* d = fd < 0 ? nullptr : fdopendir(fd);
  if (!d) {
    if (fd >= 0) close(fd);
    return;
  }
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    int f = openat(dir, e->d_name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (f < 0) continue;
    char head[256];
    ssize_t n = read(f, head, sizeof head - 1);
    close(f);
    if (n <= 0) continue;
    head[n] = '\0';
    char* nl = static_cast<char*>(std::memchr(head, '\n', static_cast<size_t>(n)));
    if (!nl || head[0] != '/') continue;  // an abstract socket's app cannot be looked up by path
    *nl = '\0';
    struct stat st;
    if (lstat(head, &st) != 0 && errno == ENOENT) unlinkat(dir, e->d_name, 0);
  }
  closedir(d);
}

// The app's count file, open for appending; made (header written under a temporary name, then linked
// into place, so no one sees it without its header) when missing.
int CountFile(int dir, const std::string& name, const std::string& header) {
  const int flags = O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK;  // a FIFO never blocks us
  int fd = openat(dir, name.c_str(), flags);
  if (fd >= 0 || errno != ENOENT) return fd;
  std::string tmp = "." + name + "." + std::to_string(getpid());
  int t = openat(dir, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (t < 0) return -1;
  bool whole = write(t, header.data(), header.size()) == static_cast<ssize_t>(header.size());
  close(t);
  if (whole && linkat(dir, tmp.c_str(), dir, name.c_str(), 0) == 0) RemoveStale(dir);
  unlinkat(dir, tmp.c_str(), 0);
  return openat(dir, name.c_str(), flags);
}

}  // namespace

size_t TakeSpreadSockets(std::string_view socketPath, size_t want) {
  const size_t budget = Budget();
  if (want == 0 || budget == 0 || socketPath.empty()) return 0;
  int dir = BudgetDir();
  if (dir < 0) return 0;
  // The header: the socket's path (an abstract name: '@' and the name), then a newline.
  std::string header = socketPath[0] == '\0' ? "@" + std::string(socketPath.substr(1)) : std::string(socketPath);
  for (char& ch : header)
    if (ch == '\n' || ch == '\0') ch = '?';
  header.push_back('\n');
  int fd = CountFile(dir, NameOf(socketPath), header);
  close(dir);
  if (fd < 0) return 0;
  struct stat st;
  size_t given = 0;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid()) {
    size_t size = static_cast<size_t>(st.st_size);
    size_t taken = size > header.size() ? size - header.size() : 0;
    if (taken < budget) {
      std::string marks(std::min(want, budget - taken), '.');
      if (write(fd, marks.data(), marks.size()) == static_cast<ssize_t>(marks.size())) given = marks.size();
    }
  }
  close(fd);
  return given;
}

}  // namespace runboard::desktop::atspi::wire
