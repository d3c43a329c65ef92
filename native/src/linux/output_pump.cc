#include "linux/output_pump.h"

#include <fcntl.h>
#include <unistd.h>
#include <cerrno>
#include <cstring>

namespace runboard::output {

namespace {

const char* kFileNames[3] = {"stdout.log", "stderr.log", "output.order"};
// At most this much is moved from a pipe at a wake-up: all of a busy stream's pipe.
constexpr size_t kMoveBytes = 1024 * 1024;
// A pipe's size as made (Linux's default): a read of this much found the pipe full.
constexpr ssize_t kDefaultPipeBytes = 64 * 1024;
// A stream that fills its pipe is writing in bulk: its pipe grows to this (Linux's pipe-max-size for
// an unprivileged user), once. The run then writes on while the jail is in the file system, and each
// wake-up moves up to a megabyte into the file (a large write, fewer wake-ups): 200 MB of log lines
// went through with a fifth less of the machine idle (docs/benchmarks.md). A run that prints lines
// keeps the default pipe, so that a user's pipe pages (pipe-user-pages-soft) are spent on busy runs only.
constexpr int kBusyPipeBytes = 1024 * 1024;

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

// Writes all of [data, data + n) at the file's position; errno is kept on failure, and `written` says
// how much of it is in the file either way.
bool WriteAll(int fd, const char* data, size_t n, size_t* written = nullptr) {
  size_t done = 0;
  bool ok = true;
  while (done < n) {
    ssize_t w = write(fd, data + done, n - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      if (w == 0) errno = EIO;
      ok = false;
      break;
    }
    done += static_cast<size_t>(w);
  }
  if (written) *written = done;
  return ok;
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
  // What is in the pipe now, up to this much, and no more: a run writing without pause must not keep
  // the other stream (and the order of the two) waiting.
  static char buf[kMoveBytes];
  ssize_t n;
  do n = read(fd, buf, sizeof buf);
  while (n < 0 && errno == EINTR);
  if (n == 0) {  // every writer is gone and the pipe is empty
    close(fd);
    read_[s] = -1;
    return false;
  }
  if (n < 0) return false;  // nothing yet (EAGAIN)
  if (n >= kDefaultPipeBytes && !grown_[s]) {
    // a full pipe: grow it, or (over the user's pipe pages, EPERM) keep it as it is; asked once
    grown_[s] = true;
    fcntl(fd, F_SETPIPE_SZ, kBusyPipeBytes);
  }
  if (error_) {  // after a failed write: the run is being stopped; its output goes nowhere, counted
    dropped_ += n;
    return true;
  }
  if (last_ != -1 && last_ != s && !WriteOrder(last_)) {
    error_ = errno;
    errorFile_ = kFileNames[2];
    dropped_ += n;
    return true;
  }
  last_ = s;
  size_t written = 0;
  bool ok = WriteAll(file_[s], buf, static_cast<size_t>(n), &written);
  taken_[s] += static_cast<long long>(written);
  if (!ok) {
    error_ = errno;
    errorFile_ = kFileNames[s];
    dropped_ += n - static_cast<ssize_t>(written);
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
