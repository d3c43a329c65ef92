#include "linux/output_pump.h"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <cerrno>
#include <cstring>

namespace runboard::output {

namespace {

const char* kFileNames[3] = {"stdout.log", "stderr.log", "output.order"};

std::string ErrnoName(int e) {
  switch (e) {
    case ENOSPC:
      return "ENOSPC";
    case EDQUOT:
      return "EDQUOT";
    case EFBIG:
      return "EFBIG";
    case EIO:
      return "EIO";
    case EBADF:
      return "EBADF";
    case EROFS:
      return "EROFS";
    default:
      return "E" + std::to_string(e);
  }
}

std::string JsonString(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) >= 0x20) out += c;
  }
  return out + "\"";
}

// Writes all of [data, data + n) at the file's position; errno is kept on failure.
bool WriteAll(int fd, const char* data, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, data, n);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) return false;
    if (w == 0) {
      errno = EIO;
      return false;
    }
    data += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

}  // namespace

Pump::Pump(int stdoutFile, int stderrFile, int orderFile) : file_{stdoutFile, stderrFile}, order_(orderFile) {}

std::string Pump::Open() {
  for (int s = 0; s < 2; ++s) {
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0) return std::string("pipe: ") + strerror(errno);
    read_[s] = p[0];
    write_[s] = p[1];
    // Only the jail's end is non-blocking: the run writes to a blocking pipe as it would to a terminal.
    fcntl(read_[s], F_SETFL, fcntl(read_[s], F_GETFL) | O_NONBLOCK);
    off_t end = lseek(file_[s], 0, SEEK_END);
    if (end < 0) return std::string("the log file ") + kFileNames[s] + ": " + strerror(errno);
    taken_[s] = end;
  }
  off_t end = lseek(order_, 0, SEEK_END);
  if (end < 0) return std::string("the log file output.order: ") + strerror(errno);
  orderBytes_ = end;
  for (int fd : {file_[0], file_[1], order_}) fcntl(fd, F_SETFD, FD_CLOEXEC);
  return "";
}

std::string Pump::BecomeChildStdio() {
  for (int s = 0; s < 2; ++s)
    if (dup2(write_[s], s + 1) < 0) return std::string("dup2: ") + strerror(errno);
  return "";
}

void Pump::ParentSide() {
  for (int s = 0; s < 2; ++s) {
    close(write_[s]);
    write_[s] = -1;
  }
}

bool Pump::WriteOrder(int from) {
  std::string rec = std::string(from == 0 ? "o " : "e ") + std::to_string(taken_[from]) + "\n";
  if (!WriteAll(order_, rec.data(), rec.size())) return false;
  orderBytes_ += static_cast<long long>(rec.size());
  return true;
}

bool Pump::Move(int s) {
  int fd = read_[s];
  if (fd < 0) return false;
  static char buf[65536];
  if (error_) {  // after a failed write: the run is being stopped; its output goes nowhere, counted
    bool moved = false;
    for (;;) {
      ssize_t n = read(fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n > 0) {
        dropped_ += n;
        moved = true;
        continue;
      }
      if (n == 0) {
        close(fd);
        read_[s] = -1;
      }
      return moved;
    }
  }
  int avail = 0;
  if (ioctl(fd, FIONREAD, &avail) < 0) avail = 0;
  size_t pending = 0;  // one byte taken while telling an empty pipe from its end
  if (avail == 0) {
    ssize_t n;
    do n = read(fd, buf, 1);
    while (n < 0 && errno == EINTR);
    if (n == 0) {  // every writer is gone
      close(fd);
      read_[s] = -1;
      return false;
    }
    if (n < 0) return false;  // nothing yet
    pending = 1;
  }
  auto fail = [&](int e) {
    error_ = e;
    errorFile_ = kFileNames[s];
    return true;
  };
  if (last_ != -1 && last_ != s && !WriteOrder(last_)) {
    int e = errno;
    errorFile_ = kFileNames[2];
    error_ = e;
    return true;
  }
  last_ = s;
  if (pending) {
    if (!WriteAll(file_[s], buf, pending)) return fail(errno);
    taken_[s] += static_cast<long long>(pending);
  }
  // What is in the pipe now, and no more: a run writing without pause must not keep the other stream
  // (and the order of the two) waiting.
  size_t left = static_cast<size_t>(avail);
  while (left > 0) {
    ssize_t n = splice(fd, nullptr, file_[s], nullptr, left, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) break;
    if (n < 0 && errno == EINVAL) {  // a file system without splice: copy instead
      ssize_t r = read(fd, buf, left < sizeof buf ? left : sizeof buf);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) break;
      if (!WriteAll(file_[s], buf, static_cast<size_t>(r))) return fail(errno);
      n = r;
    } else if (n < 0) {
      return fail(errno);
    } else if (n == 0) {
      break;
    }
    taken_[s] += n;
    left -= static_cast<size_t>(n);
  }
  return true;
}

void Pump::Drain() {
  for (int s = 0; s < 2; ++s)
    while (read_[s] >= 0 && Move(s)) {}
}

std::string Pump::SizesLine() {
  long long now[3] = {taken_[0], taken_[1], orderBytes_};
  if (now[0] == reported_[0] && now[1] == reported_[1] && now[2] == reported_[2]) return "";
  for (int i = 0; i < 3; ++i) reported_[i] = now[i];
  return "{\"event\":\"output\",\"stdout\":" + std::to_string(now[0]) + ",\"stderr\":" + std::to_string(now[1]) +
         ",\"order\":" + std::to_string(now[2]) + ",\"dropped\":" + std::to_string(dropped_) + "}";
}

std::string Pump::FailureLine() {
  if (!error_ || failureReported_) return "";
  failureReported_ = true;
  return "{\"event\":\"output-failed\",\"file\":" + JsonString(errorFile_) +
         ",\"code\":" + JsonString(ErrnoName(error_)) + ",\"message\":" + JsonString(strerror(error_)) + "}";
}

}  // namespace runboard::output
