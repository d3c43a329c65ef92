#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "common/process_lock.h"

namespace runboard {

std::string HoldProcessLock(const std::string& path) {
  int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return "cannot open " + path + ": " + std::strerror(errno);
  // flock, not fcntl locks: those are per process and dropped when any descriptor of the file closes.
  if (flock(fd, LOCK_EX | LOCK_NB) == 0) return "";  // fd kept open: the lock lives with the process
  int err = errno;
  close(fd);
  if (err == EWOULDBLOCK) return "held";
  return "cannot lock " + path + ": " + std::strerror(err);
}

}  // namespace runboard
