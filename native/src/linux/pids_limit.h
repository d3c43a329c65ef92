// A limit on the number of processes (and threads) of one run, so that a fork bomb inside a run
// stops at the limit instead of exhausting the machine's pids. Two mechanisms, whichever holds:
//   * a pids cgroup of the run's own, where the jail may create one (cgroup v1 `pids` hierarchy, or
//     v2 where the controller is enabled for the jail's cgroup): counts every task of the run;
//   * RLIMIT_NPROC, set in the run's user namespace: since Linux 5.14 it counts the tasks of the
//     namespace's user, that is the run's own (the kernel ignores it for uid 0 of the machine).
#pragma once
#include <sys/types.h>
#include <string>

namespace runboard::pids {

class RunCgroup {
 public:
  // Creates a pids cgroup below the jail's own with pids.max = limit, ready to take the run's first
  // process; the jail itself stays where it is. Its cgroup.procs is opened here, before the jail enters
  // its user namespace: the move is checked against the machine's credentials at open.
  // Returns false (and why in *reason) where that is not possible.
  bool Create(long limit, std::string* reason);
  // Moves the run's first process into the cgroup, before it starts anything (everything it forks is
  // then in it). On failure the cgroup is removed and *reason says why.
  bool AddProcess(pid_t pid, std::string* reason);
  // Removes the cgroup once the run's processes are gone. No process moves out: a cgroup migration
  // waits for an RCU grace period (milliseconds), which the end of every run would pay.
  void Remove();
  bool active() const { return !dir_.empty(); }

 private:
  std::string dir_;
  int procsFd_ = -1;
};

// In the jail's child, after the user namespace is made: the rlimit. "" or what failed.
std::string SetNprocLimit(long limit);

}  // namespace runboard::pids
