#include "linux/jail_common.h"

#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <cstdio>

namespace runboard::jail {

int gStatusFd = -1;

std::string JsonEscape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += c;
    }
  }
  return out;
}

void Status(const std::string& json) {
  if (gStatusFd < 0) return;
  std::string line = json + "\n";
  ssize_t off = 0;
  while (off < static_cast<ssize_t>(line.size())) {
    ssize_t n = write(gStatusFd, line.data() + off, line.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    off += n;
  }
}

// The run's pids cgroup, left (and removed) by the jail itself when it gives up before the run.
namespace {
pids::RunCgroup* gCgroup = nullptr;
pid_t gJailPid = 0;
}  // namespace

[[noreturn]] void Die(const std::string& msg, int code) {
  if (gCgroup && getpid() == gJailPid) gCgroup->Remove();
  Status("{\"event\":\"error\",\"message\":\"" + JsonEscape(msg) + "\"}");
  fprintf(stderr, "runboard-jail: %s\n", msg.c_str());
  _exit(code);
}

bool WriteFile(const char* path, const std::string& text) {
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool ok = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  close(fd);
  return ok;
}

void DieRemoves(pids::RunCgroup* cgroup, pid_t jailPid) {
  gCgroup = cgroup;
  gJailPid = jailPid;
}

void CloseFrom(int from, std::vector<int> keep) {
  std::sort(keep.begin(), keep.end());
  for (int k : keep) {
    if (k < from) continue;
    if (k > from) syscall(SYS_close_range, from, k - 1, 0);
    from = k + 1;
  }
  syscall(SYS_close_range, from, ~0U, 0);
}

}  // namespace runboard::jail
