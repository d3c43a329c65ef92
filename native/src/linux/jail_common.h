// What every part of runboard-jail (linux/jail.cc) shares: its status lines to the supervisor (JSON lines
// on --status-fd, schema supervisor/src/protocol/jail.ts) and how it gives up.
#pragma once
#include <sys/types.h>

#include <string>
#include <vector>

#include "linux/pids_limit.h"

namespace runboard::jail {

// The status fd (--status-fd); -1 before it is known and in the run's init (which holds none).
extern int gStatusFd;

std::string JsonEscape(const std::string& s);

// One status line (a JSON object) to the supervisor.
void Status(const std::string& json);

// An error status line and stderr, then exit with `code`; in the jail itself the run's cgroups are
// removed first (DieRemoves).
[[noreturn]] void Die(const std::string& msg, int code);

// The run's cgroups, removed by Die when the jail (process `jailPid`) gives up before the run.
void DieRemoves(pids::RunCgroup* cgroup, pid_t jailPid);

// Writes `text` to an existing file (the /proc files of a namespace).
bool WriteFile(const char* path, const std::string& text);

// Closes every fd from `from` up, but those in `keep`.
void CloseFrom(int from, std::vector<int> keep);

}  // namespace runboard::jail
