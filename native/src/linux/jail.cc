// runboard-jail: the one process the supervisor puts between itself and a worker.
//
// Why a separate executable and not code in the supervisor: Node cannot run code between fork and
// exec, and everything here (namespaces, parent-death signals, Landlock) must happen exactly there,
// in a single-threaded process, so that the worker and all it starts inherit it.
//
//   supervisor ──spawn──▶ jail (outside)  ──fork──▶ worker = PID 1 of a new PID namespace ──▶ tools
//        │ SIGKILL on supervisor death ▲ │ SIGKILL on jail death ▲
//
// Containment (docs/security-model.md):
//  * pid-namespace (preferred): the worker is the init of a fresh user+PID namespace. When it dies the
//    kernel kills every process in the namespace, double-forked, setsid and SIGTERM-ignoring ones too,
//    and the jail's wait for it returns only after they are all gone.
//  * subreaper (fallback where unprivileged user namespaces are restricted): orphans re-parent to the
//    jail, which SIGKILLs every remaining descendant when the worker ends.
//  * Both: PR_SET_PDEATHSIG makes the jail die with the supervisor and the worker die with the jail.
//
// Filesystem confinement: Landlock (default), or with --fs-mounts a private mount namespace (read-only
// but for the writable trees, hidden trees covered, a fresh /proc, no capabilities; linux/mounts.h)
// with Landlock kept for network and scopes. That mode is for agents that build their own sandbox
// (codex's bubblewrap), which a Landlock filesystem domain makes impossible (it forbids mounts).
//
// Network: Landlock's TCP port rules, and a seccomp filter for what they miss (MPTCP, Fast Open, UDP unless
// --udp, other socket kinds), whose listen() calls this process answers (linux/seccomp_net.h); in the
// subreaper mode also connect() and the sends that can name an address (linux/seccomp_connect.h), and with a
// mount namespace connect() of a run on the person's display (--abstract-absent: abstract names only).
//
// Masks (--mask DIR, --keep DIR/NAME): with a mount namespace of the run's own, DIR is covered by an empty,
// read-only tmpfs in which only the kept entries appear (bind mounts of the originals). A private-display
// run sees its own X socket in /tmp/.X11-unix and not the user's: Landlock (ABI <= 7) does not govern
// connect() on pathname Unix sockets, so hiding the socket file is what keeps the run off the real display.
//
// --init (the `command` runner): no worker; the jail's child stays as the run's init and starts the run's
// command itself (RunAsInit), so a plain command costs no Node start.
//
// Protocol with the supervisor: JSON lines on --status-fd (schema: supervisor/src/protocol/jail.ts, read by
// supervisor/src/node/jail-status.ts).
//
// Its parts: the command line (linux/jail_options.h), the child's confinement and the run's init
// (linux/jail_child.h), the status lines (linux/jail_common.h); here the jail itself: the run's cgroups
// and namespaces, the fork, and the wait for the run with its output, its listen() calls and its end.
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "linux/jail_child.h"
#include "linux/jail_common.h"
#include "linux/jail_options.h"
#include "linux/landlock.h"
#include "linux/live_grants.h"
#include "linux/output_pump.h"
#include "linux/pids_limit.h"
#include "linux/seccomp_net.h"

using namespace runboard::jail;  // NOLINT(build/namespaces): the jail's own parts

namespace {

std::string EnterNamespaces() {
  uid_t uid = getuid();
  gid_t gid = getgid();
  if (unshare(CLONE_NEWUSER | CLONE_NEWPID) < 0) return std::string("unshare: ") + strerror(errno);
  if (!WriteFile("/proc/self/setgroups", "deny") && errno != ENOENT)
    return "setgroups: " + std::string(strerror(errno));
  if (!WriteFile("/proc/self/uid_map", std::to_string(uid) + " " + std::to_string(uid) + " 1"))
    return "uid_map: " + std::string(strerror(errno));
  if (!WriteFile("/proc/self/gid_map", std::to_string(gid) + " " + std::to_string(gid) + " 1"))
    return "gid_map: " + std::string(strerror(errno));
  return "";
}

// Subreaper mode: SIGKILL every process that re-parented to us, until none is left.
void KillRemainingChildren() {
  for (int round = 0; round < 1000; ++round) {
    DIR* d = opendir("/proc");
    if (d) {
      while (dirent* e = readdir(d)) {
        char* end;
        long pid = strtol(e->d_name, &end, 10);
        if (*end || pid <= 0) continue;
        char path[64], buf[512];
        snprintf(path, sizeof path, "/proc/%ld/stat", pid);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) continue;
        ssize_t n = read(fd, buf, sizeof buf - 1);
        close(fd);
        if (n <= 0) continue;
        buf[n] = 0;
        const char* rp = strrchr(buf, ')');  // comm may hold spaces and parens
        int ppid = 0;
        char state;
        if (rp && sscanf(rp + 2, "%c %d", &state, &ppid) == 2 && ppid == getpid()) kill(pid, SIGKILL);
      }
      closedir(d);
    }
    int st;
    pid_t r = waitpid(-1, &st, WNOHANG);
    if (r < 0 && errno == ECHILD) return;
    if (r == 0) usleep(2000);
  }
}

// NUL-separated NAME=VALUE entries until EOF.
std::vector<std::string> ReadEnv(int fd) {
  std::string all;
  char buf[65536];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) Die("reading the run's environment: " + std::string(strerror(errno)), 125);
    if (n == 0) break;
    all.append(buf, n);
  }
  close(fd);
  std::vector<std::string> out;
  for (size_t at = 0; at < all.size();) {
    size_t end = all.find('\0', at);
    if (end == std::string::npos) end = all.size();
    if (all.find('=', at) < end) out.push_back(all.substr(at, end - at));
    at = end + 1;
  }
  return out;
}

std::string ReadSmallFile(const char* path) {
  std::string text;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  char buf[1024];
  ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
  if (n > 0) text.assign(buf, n);
  if (fd >= 0) close(fd);
  return text;
}

long long IoField(const std::string& text, const char* key) {
  size_t at = text.find(std::string(key) + ": ");
  return at == std::string::npos ? -1 : atoll(text.c_str() + at + strlen(key) + 2);
}

// The exit status line: how the run ended, its I/O and CPU, its memory (`memoryField`) and, with --init,
// how its command ended (the init's report, read from `initReportFd`; -1: no init).
void ReportExit(int status, const rusage& usage, const std::string& memoryField, int initReportFd) {
  // The run's I/O: the jail's counters hold its reaped children's and its own (the output it moved),
  // so its own (the thread's alone) is taken off.
  std::string io = ReadSmallFile("/proc/self/io"), ownIo = ReadSmallFile("/proc/thread-self/io");
  auto runIo = [&](const char* key) {
    long long all = IoField(io, key), own = IoField(ownIo, key);
    return all < 0 ? all : std::max(0LL, all - (own > 0 ? own : 0));
  };
  rusage self{};
  getrusage(RUSAGE_SELF, &self);
  long jailCpuMs =
      (self.ru_utime.tv_sec + self.ru_stime.tv_sec) * 1000 + (self.ru_utime.tv_usec + self.ru_stime.tv_usec) / 1000;
  bool signaled = WIFSIGNALED(status);
  int code = signaled ? -1 : WEXITSTATUS(status);
  int termsig = signaled ? WTERMSIG(status) : 0;
  std::string commandField;
  if (initReportFd >= 0) {
    CommandReport report{};
    if (read(initReportFd, &report, sizeof report) == static_cast<ssize_t>(sizeof report))
      commandField = ",\"command\":{\"code\":" + (report.code < 0 ? std::string("null") : std::to_string(report.code)) +
                     ",\"signal\":" + std::to_string(report.signal) +
                     ",\"execErrno\":" + std::to_string(report.execErrno) + ",\"ms\":" + std::to_string(report.ms) +
                     "}";
    close(initReportFd);
  }
  char line[896];
  snprintf(line, sizeof line,
           "{\"event\":\"exit\",\"code\":%s,\"signal\":%d,\"rchar\":%lld,\"wchar\":%lld,\"readBytes\":%lld,"
           "\"writeBytes\":%lld,\"utimeMs\":%ld,\"stimeMs\":%ld,\"maxRssKb\":%ld,\"jailCpuMs\":%ld%s%s}",
           signaled ? "null" : std::to_string(code).c_str(), termsig, runIo("rchar"), runIo("wchar"),
           runIo("read_bytes"), runIo("write_bytes"), usage.ru_utime.tv_sec * 1000 + usage.ru_utime.tv_usec / 1000,
           usage.ru_stime.tv_sec * 1000 + usage.ru_stime.tv_usec / 1000, usage.ru_maxrss, jailCpuMs,
           memoryField.c_str(), commandField.c_str());
  Status(line);
}

// What a run in the subreaper fallback may connect to by path: sockets in its writable trees, and those its
// allow-list names (--read entries, decision 122's list, and --connect), all as real paths.
runboard::seccomp::ConnectRules ConnectRulesOf(const Options& o) {
  runboard::seccomp::ConnectRules rules;
  auto real = [](const std::string& p) {
    char buf[PATH_MAX];
    return realpath(p.c_str(), buf) ? std::string(buf) : p;
  };
  for (const auto& w : o.policy.writable) rules.trees.push_back(real(w));
  for (const auto& r : o.policy.readable) rules.sockets.push_back(r);
  for (const auto& c : o.connect) rules.sockets.push_back(real(c));
  return rules;
}

}  // namespace

int main(int argc, char** argv) {
  Options o = ParseArgs(argc, argv);
  auto &useLandlock = o.useLandlock, &fsByMounts = o.fsByMounts;
  const auto &useNamespaces = o.useNamespaces, &fsIfPossible = o.fsIfPossible, &asInit = o.asInit;
  const auto& parentPid = o.parentPid;
  const auto& masks = o.masks;
  const auto& maxProcs = o.maxProcs;
  const auto& memoryBytes = o.memoryBytes;
  const auto& envFd = o.envFd;
  const auto& outputFds = o.outputFds;
  // Die with the supervisor. Checked after arming, so a supervisor that died first is noticed too.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (parentPid && getppid() != parentPid) Die("supervisor is gone", 1);

  // The run's environment, when the supervisor sends it: the jail itself starts with an empty one, so
  // nothing a flow sets (LD_PRELOAD and other loader variables) acts on the jail before it confines.
  std::vector<std::string> runEnv;
  if (envFd >= 0) runEnv = ReadEnv(envFd);

  // Nothing but stdio, the run endpoint (fd 3) and the status fd crosses into the run (the log files
  // stay the jail's: close-on-exec).
  int keepFrom = (gStatusFd > 3 ? gStatusFd : 3) + 1;
  const bool pumping = outputFds[0] >= 0;
  std::vector<int> keep = pumping ? std::vector<int>(outputFds, outputFds + 3) : std::vector<int>();
  if (o.controlFd >= 0) keep.push_back(o.controlFd);
  CloseFrom(keepFrom, keep);
  if (gStatusFd >= 0) fcntl(gStatusFd, F_SETFD, FD_CLOEXEC);
  if (o.controlFd >= 0) fcntl(o.controlFd, F_SETFD, FD_CLOEXEC);
  runboard::output::Pump pump(outputFds[0], outputFds[1], outputFds[2]);
  if (pumping) {
    std::string err = pump.Open();
    if (!err.empty()) Die("the run's output: " + err, 125);
  }

  std::string containment = "pid-namespace", nsError;
  // The pids cgroup before the user namespace: moving into a cgroup is checked against the machine's.
  runboard::pids::RunCgroup cgroup;
  std::string cgroupError;
  const bool cgroupMade = maxProcs > 0 && cgroup.Create(maxProcs, &cgroupError);
  std::string memoryError;
  if (memoryBytes > 0) cgroup.CreateMemory(memoryBytes, &memoryError);
  DieRemoves(&cgroup, getpid());
  if (useNamespaces) nsError = EnterNamespaces();
  if (!useNamespaces || !nsError.empty()) {
    containment = "subreaper";
    prctl(PR_SET_CHILD_SUBREAPER, 1);
  }
  // Fail closed: a mask is a promise about what the run cannot reach.
  if (!masks.empty() && containment != "pid-namespace")
    Die("cannot mask " + masks[0] + ": no user namespace (" + (nsError.empty() ? "--no-namespaces" : nsError) + ")",
        126);

  if (fsByMounts && fsIfPossible && containment != "pid-namespace") fsByMounts = false;  // Landlock then
  if (fsByMounts && containment != "pid-namespace")
    Die("--fs-mounts needs user namespaces" + (nsError.empty() ? std::string() : " (" + nsError + ")"), 125);

  int landlockAbi = 0;
  std::string landlockReason;
  if (useLandlock) {
    landlockAbi = runboard::landlock::Abi(&landlockReason);
    if (landlockAbi == 0) Die("Landlock is not available: " + landlockReason, 125);
  }

  sigset_t handled, previous;
  sigemptyset(&handled);
  for (int s : {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGCHLD}) sigaddset(&handled, s);
  sigprocmask(SIG_BLOCK, &handled, &previous);

  // The network rules beyond Landlock's come with it (linux/seccomp_net.h).
  runboard::seccomp::ListenBroker broker;
  if (useLandlock) {
    std::string err = broker.Open();
    if (!err.empty()) Die("sandbox setup failed: " + err, 125);
  }
  // Without namespaces nothing hides a pathname socket: the jail makes the run's connections itself
  // (linux/seccomp_connect.h), from a Landlock domain with the run's network rules, in which the run's own
  // domain is nested (so its abstract sockets are the jail's to reach too).
  // With a mount namespace a run on the person's display (--abstract-absent) has its connect() to an X
  // display's abstract name judged so, from the same kind of domain: a refused one says ECONNREFUSED, and
  // libxcb takes X's path socket (decision 134); every other connect continues in the run as it is.
  const bool displayNames = o.net.brokerAbstract && containment != "subreaper" && o.policy.scopeAbstractUnix;
  o.net.brokerAbstract = displayNames;
  if (useLandlock && (containment == "subreaper" || displayNames)) {
    o.net.brokerConnect = containment == "subreaper";
    runboard::landlock::Policy netOnly;
    netOnly.restrictFs = false;
    netOnly.scopeSignals = false;
    netOnly.tcpConnectPorts = o.policy.tcpConnectPorts;
    netOnly.scopeAbstractUnix = o.policy.scopeAbstractUnix;
    std::string err = runboard::landlock::RestrictSelf(netOnly, landlockAbi);
    if (!err.empty()) Die("sandbox setup failed: " + err, 125);
    auto rules = ConnectRulesOf(o);
    rules.displayNamesOnly = displayNames;
    broker.SetConnectRules(std::move(rules));
  }

  // The child sees EOF here if we are gone before it armed PDEATHSIG; and it execs the run only once a
  // byte came: then it is in the run's pids cgroup (moved while it sets up its sandbox).
  int lifeline[2];
  if (pipe2(lifeline, O_CLOEXEC) < 0) Die("pipe: " + std::string(strerror(errno)), 1);
  int initReport[2] = {-1, -1};  // --init: how the command ended, from the run's init
  if (asInit && pipe2(initReport, O_CLOEXEC) < 0) Die("pipe: " + std::string(strerror(errno)), 1);

  // Live grants: the child hands its grant slots to the jail on this (linux/live_grants.h).
  if (o.controlFd >= 0 && socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, o.grantSock) < 0)
    Die("socketpair: " + std::string(strerror(errno)), 1);
  pid_t child = fork();
  if (child < 0) Die("fork: " + std::string(strerror(errno)), 1);
  if (child == 0)
    RunChild({o,
              containment,
              landlockAbi,
              broker,
              pump,
              pumping,
              {lifeline[0], lifeline[1]},
              {initReport[0], initReport[1]},
              previous,
              runEnv});
  close(lifeline[0]);
  if (o.grantSock[1] >= 0) close(o.grantSock[1]);
  runboard::grants::Server grants(o.controlFd, o.grantSock[0], useLandlock && !fsByMounts);
  if (asInit) {
    close(initReport[1]);
    fcntl(initReport[0], F_SETFL, O_NONBLOCK);  // read once the init is gone: its report or nothing
  }
  {
    // A child that died before reading its go byte must not kill the jail with SIGPIPE (nor a gone
    // supervisor: the parent-death signal does that). Blocked in the jail only, after the fork.
    sigset_t pipeSig;
    sigemptyset(&pipeSig);
    sigaddset(&pipeSig, SIGPIPE);
    sigprocmask(SIG_BLOCK, &pipeSig, nullptr);
  }
  std::string pidsLimit = "none", moveError;
  if (cgroup.active()) cgroup.AddProcess(child, &moveError);
  if (cgroupMade && cgroup.pidsActive()) pidsLimit = "cgroup";
  else if (cgroupMade) cgroupError = moveError;
  const char* memoryLimit = cgroup.memoryActive() ? "cgroup" : "none";
  if (memoryBytes > 0 && !cgroup.memoryActive() && memoryError.empty()) memoryError = moveError;
  broker.ParentSide();
  if (o.net.brokerConnect) broker.SetChild(child);
  if (pumping) pump.ParentSide();
  if (maxProcs > 0 && pidsLimit == "none" && containment == "pid-namespace") pidsLimit = "rlimit";
  Status("{\"event\":\"started\",\"pid\":" + std::to_string(child) + ",\"containment\":\"" + containment +
         "\",\"namespaceError\":\"" + JsonEscape(nsError) + "\",\"pidsLimit\":\"" + pidsLimit +
         "\",\"maxProcs\":" + std::to_string(maxProcs) + ",\"cgroupError\":\"" + JsonEscape(cgroupError) +
         "\",\"memoryLimit\":\"" + memoryLimit + "\",\"memoryBytes\":" + std::to_string(memoryBytes) +
         ",\"memoryError\":\"" + JsonEscape(memoryError) + "\"}");
  if (write(lifeline[1], "g", 1) < 0) {
    // the child is gone already: its exit says why
  }

  int status = 0;
  rusage usage{};
  // Signals and the run's listen() calls, which the broker answers, arrive here.
  int signals = signalfd(-1, &handled, SFD_CLOEXEC);
  if (signals < 0) Die("signalfd: " + std::string(strerror(errno)), 1);
  // Output sizes go to the supervisor at most every kSizesEveryMs while output flows (the first at once):
  // a run printing without pause costs it a status line per interval, not one per write.
  constexpr long kSizesEveryMs = 5;
  long long sizesSentAt = -kSizesEveryMs;
  bool sizesDue = false;
  auto nowMs = [] {
    timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return static_cast<long long>(t.tv_sec) * 1000 + t.tv_nsec / 1000000;
  };
  auto sendSizes = [&] {
    std::string failed = pump.FailureLine();
    if (!failed.empty()) Status(failed);
    std::string line = pump.SizesLine();
    if (!line.empty()) Status(line);
    sizesSentAt = nowMs();
    sizesDue = false;
  };
  // cgroup v1: the run met its memory limit. The kernel killed one of its processes; the jail ends the
  // rest (v2's memory.oom.group does it in the kernel), so the run has one clear end.
  int oomFd = cgroup.memoryActive() ? cgroup.OomFd() : -1;
  bool oomSeen = false;  // the kernel may find the run already dying and count no kill of its own
  for (;;) {
    pollfd ready[6] = {{signals, POLLIN, 0},
                       {broker.PollFd(), POLLIN, 0},
                       {pumping ? pump.Fd(0) : -1, POLLIN, 0},
                       {pumping ? pump.Fd(1) : -1, POLLIN, 0},
                       {oomFd, POLLIN, 0},
                       {grants.PollFd(), POLLIN, 0}};
    int timeout = -1;
    if (sizesDue) timeout = static_cast<int>(std::max(0LL, sizesSentAt + kSizesEveryMs - nowMs()));
    int n = poll(ready, 6, timeout);
    if (n < 0) continue;
    if (ready[5].revents) grants.Serve();
    if (ready[4].revents) {
      kill(child, SIGKILL);
      oomFd = -1;
      oomSeen = true;
    }
    if (pumping) {
      for (int s = 0; s < 2; ++s)
        if (ready[2 + s].revents && pump.Move(s)) sizesDue = true;
      if (sizesDue && nowMs() - sizesSentAt >= kSizesEveryMs) sendSizes();
    }
    if (ready[1].revents) broker.Serve(ready[1].revents);
    signalfd_siginfo info;
    if (!(ready[0].revents & POLLIN) || read(signals, &info, sizeof info) != sizeof info) continue;
    int sig = static_cast<int>(info.ssi_signo);
    if (sig != SIGCHLD) {
      kill(child, sig);  // the worker decides how to wind down; the supervisor escalates to SIGKILL
      continue;
    }
    pid_t r = wait4(child, &status, WNOHANG, &usage);
    if (r == child) break;
    if (containment == "subreaper") {
      while (waitpid(-1, nullptr, WNOHANG) > 0) {  // reap orphans as they end
      }
    }
  }
  if (containment == "subreaper") KillRemainingChildren();
  std::string memoryField;
  if (cgroup.memoryActive())
    memoryField = ",\"memoryMax\":" + std::to_string(memoryBytes) +
                  ",\"memoryKills\":" + std::to_string(std::max(oomSeen ? 1LL : 0LL, cgroup.OomKills())) +
                  ",\"memoryPeak\":" + std::to_string(std::max(0LL, cgroup.MemoryPeak()));
  cgroup.Remove();
  // The run's processes are all gone: what is left in the pipes is the end of its output.
  if (pumping) {
    pump.Drain();
    sendSizes();
  }

  ReportExit(status, usage, memoryField, asInit ? initReport[0] : -1);
  return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
}
