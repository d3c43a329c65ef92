// The run's stdout and stderr, moved by the jail from two pipes into the run's log files
// (`stdout.log`, `stderr.log`) with a read and a write per wake-up, and
// `output.order`, one record per switch from one stream to the other (format:
// supervisor/src/common/run-output.ts). The supervisor opens the three files and hands them over; the
// run itself only ever holds the pipes' write ends: it cannot truncate, seek or rewrite its log.
//
// A switch record is written before the bytes that follow it, and the sizes reported to the supervisor
// (a status line `{"event":"output",...}`) are those of one moment, after both; so a reader of the files
// up to reported sizes, or one that reads output.order's size before the logs', sees them consistent.
//
// Backpressure: the jail moves bytes only as fast as the files take them; a run that writes faster
// blocks on its full pipe. Nothing is held in memory beyond the pipes (a busy stream's grows to 1 MiB)
// and one read (1 MiB).
// (splice(2) from the pipes into the files was measured slower here: the page cache takes a 4 KiB
// pipe buffer at a time; docs/benchmarks.md.)
#pragma once
#include <sys/types.h>
#include <string>

namespace runboard::output {

class Pump {
 public:
  // The three files, open for writing (not O_APPEND; the pump writes at the end it finds).
  Pump(int stdoutFile, int stderrFile, int orderFile);
  // Makes the two pipes (read ends non-blocking, close-on-exec). "" or what failed.
  std::string Open();
  // In the child, before exec: the pipes' write ends become fds 1 and 2.
  std::string BecomeChildStdio();
  // In the parent after the fork: drops its copies of the write ends (so the end of the run's output
  // is seen), and closes the file fds in nobody else's reach.
  void ParentSide();
  // fds to poll for input (-1 once that stream has ended).
  int Fd(int stream) const { return read_[stream]; }
  // Moves what is in the pipe of `stream` (0: stdout, 1: stderr) into its file; returns true when
  // something moved.
  bool Move(int stream);
  // Moves whatever is left in both pipes (after the run's processes are gone).
  void Drain();
  // The status line for the sizes now, or "" when nothing changed since the last one.
  std::string SizesLine();
  // A write to a file failed (the disk is full): the status line saying so, once, else "".
  std::string FailureLine();

 private:
  bool WriteOrder(int from);
  int file_[2];
  int order_;
  int read_[2] = {-1, -1};
  int write_[2] = {-1, -1};
  long long taken_[2] = {0, 0};
  // The jail asked for a stream's larger pipe (once, whatever the answer).
  bool grown_[2] = {false, false};
  long long orderBytes_ = 0;
  long long reported_[3] = {-1, -1, -1};
  long long dropped_ = 0;
  int last_ = -1;
  int error_ = 0;
  std::string errorFile_;
  bool failureReported_ = false;
};

}  // namespace runboard::output
