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
  // Creates a pids cgroup below the jail's own with pids.max = limit and moves the jail into it
  // (so everything it forks is in it). Returns false (and why in *reason) where that is not possible.
  bool Enter(long limit, std::string* reason);
  // Moves the jail back to where it was and removes the cgroup (after the run's processes are gone).
  void Leave();
  bool active() const { return !dir_.empty(); }

 private:
  std::string parent_, dir_;
};

// In the jail's child, after the user namespace is made: the rlimit. "" or what failed.
std::string SetNprocLimit(long limit);

}  // namespace runboard::pids
