// Limits on one run's resources, held by cgroups of the run's own (below the jail's) where the jail may
// make them, with a fallback for processes:
//   * processes (and threads): a pids cgroup (cgroup v1 `pids` hierarchy, or v2 where the controller is
//     enabled for the jail's cgroup), else RLIMIT_NPROC set in the run's user namespace (since Linux 5.14
//     it counts the tasks of the namespace's user, that is the run's own);
//   * memory: a memory cgroup (v2 memory.max with memory.oom.group, or v1 memory.limit_in_bytes and
//     memory.memsw.limit_in_bytes where swap is accounted). It charges the run's pages, its tmpfs /tmp
//     pages included (the writer's). No fallback: RLIMIT_AS bounds address space, not memory, and
//     breaks runtimes that reserve large ranges (V8, Go, the JVM); docs/security-model.md.
// Where both controllers are in one hierarchy (v2) they share one cgroup: the run is moved once.
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
  // The same for memory: a cgroup (the pids one where the memory controller is in its hierarchy) whose
  // limit is `bytes`. On cgroup v1 it also arms an eventfd that becomes readable when the run meets its
  // limit (OomFd): the jail then ends the whole run, as v2's memory.oom.group does.
  bool CreateMemory(long long bytes, std::string* reason);
  // Moves the run's first process into the cgroups, before it starts anything (everything it forks is
  // then in them). On failure the cgroup is removed and *reason says why.
  bool AddProcess(pid_t pid, std::string* reason);
  // Whether each limit holds after AddProcess.
  bool pidsActive() const { return !pids_.dir.empty() && pids_.moved; }
  bool memoryActive() const { return !memory_.dir.empty() && (memory_.moved || sharedDir_); }
  // v1: readable once the run met its memory limit (-1 elsewhere).
  int OomFd() const { return oomFd_; }
  // The kernel's OOM kills in the run's memory cgroup so far, and the most it used (bytes; -1 unknown).
  long long OomKills() const;
  long long MemoryPeak() const;
  // Gives the cgroups back once the run's processes are gone (a slot for the next run; a cgroup of
  // the jail's own is removed). No process moves out: a cgroup migration
  // waits for an RCU grace period (milliseconds), which the end of every run would pay.
  void Remove();
  bool active() const { return !pids_.dir.empty() || !memory_.dir.empty(); }

 private:
  struct Group {
    std::string dir;
    int procsFd = -1;
    bool v2 = false;
    bool moved = false;
    bool own = false;  // a cgroup of this jail's (removed at the end), not a kept slot
  };
  bool Make(const char* controller, Group* g, std::string* reason);
  static void Drop(Group* g);
  Group pids_, memory_;
  bool sharedDir_ = false;  // memory_ is pids_'s cgroup (one hierarchy): one move
  int oomFd_ = -1;
  int slot_ = -1;          // the slot held (runboard-slot-N), -1 none
  int lockFd_ = -1;        // its folder, flock'ed while the run lives
  long long oomBase_ = 0;  // the slot's OOM kills before this run
  int peakFd_ = -1;        // v2: memory.peak, reset for this descriptor
};

// In the jail's child, after the user namespace is made: the rlimit. "" or what failed.
std::string SetNprocLimit(long limit);

}  // namespace runboard::pids
