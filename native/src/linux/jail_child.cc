#include "linux/jail_child.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdlib>
#include <cstring>

#include "linux/jail_common.h"
#include "linux/landlock.h"
#include "linux/live_grants.h"
#include "linux/mounts.h"
#include "linux/pids_limit.h"

namespace runboard::jail {
namespace {

void NoteSignal(int) {}

// --init: the run's command is not a worker. This process (the init of the run's PID namespace, or the
// jail's child where there is none) starts it in a session of its own, passes SIGTERM, SIGINT, SIGHUP
// and SIGQUIT on to every process of the run, reaps them, and reports how the command ended on
// `reportFd`. It holds no status fd (the run cannot write the jail's status lines through it) and is not
// dumpable (the run cannot ptrace it or open its fds).
[[noreturn]] void RunAsInit(char** command, int reportFd) {
  gStatusFd = -1;
  // Nothing of the jail's stays open here (log files, pipes, the broker's fds): stdio and the report only.
  if (reportFd != 3) {
    if (dup2(reportFd, 3) < 0) _exit(126);
    fcntl(3, F_SETFD, FD_CLOEXEC);  // the command never holds it
    reportFd = 3;
  }
  CloseFrom(4, {});
  prctl(PR_SET_DUMPABLE, 0);
  sigset_t handled, previous;
  sigemptyset(&handled);
  for (int s : {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGCHLD}) {
    sigaddset(&handled, s);
    struct sigaction sa {};
    sa.sa_handler = NoteSignal;  // an init's signals with no handler are dropped by the kernel
    sigaction(s, &sa, nullptr);
  }
  sigprocmask(SIG_BLOCK, &handled, &previous);
  int execPipe[2];
  if (pipe2(execPipe, O_CLOEXEC) < 0) _exit(126);
  timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  pid_t cmd = fork();
  if (cmd < 0) _exit(126);
  if (cmd == 0) {
    close(execPipe[0]);
    for (int s : {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGCHLD}) signal(s, SIG_DFL);
    sigprocmask(SIG_SETMASK, &previous, nullptr);
    setsid();  // its own process group: where there is no PID namespace, signals reach the group
    execvp(command[0], command);
    int e = errno;
    ssize_t w = write(execPipe[1], &e, sizeof e);
    (void)w;
    _exit(127);
  }
  close(execPipe[1]);
  CommandReport report{0, 0, 0, 0};
  ssize_t got;
  do got = read(execPipe[0], &report.execErrno, sizeof report.execErrno);
  while (got < 0 && errno == EINTR);
  if (got != sizeof report.execErrno) report.execErrno = 0;  // EOF: the command was executed
  close(execPipe[0]);
  int status = 0;
  for (bool done = false; !done;) {
    siginfo_t info;
    int sig = sigwaitinfo(&handled, &info);
    if (sig < 0) continue;
    if (sig != SIGCHLD) {
      if (getpid() == 1) kill(-1, sig);  // every other process of the run's namespace
      else kill(-cmd, sig);
      continue;
    }
    for (;;) {
      int st;
      pid_t r = waitpid(-1, &st, WNOHANG);
      if (r <= 0) break;
      if (r == cmd) {
        status = st;
        done = true;
      }
    }
  }
  timespec t1;
  clock_gettime(CLOCK_MONOTONIC, &t1);
  report.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  report.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  report.ms = static_cast<int32_t>((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000);
  ssize_t w = write(reportFd, &report, sizeof report);
  (void)w;
  _exit(0);  // the namespace's other processes die with it
}

}  // namespace

[[noreturn]] void RunChild(const Child& c) {
  Options& o = c.o;
  auto& policy = o.policy;
  const auto &useLandlock = o.useLandlock, &fsByMounts = o.fsByMounts, &roMounts = o.roMounts, &asInit = o.asInit;
  const auto &masks = o.masks, &keeps = o.keeps, &readOnly = o.readOnly;
  const auto& privateTmp = o.privateTmp;
  const auto& maxProcs = o.maxProcs;
  const auto& envFd = o.envFd;
  const auto& net = o.net;
  char** command = o.command;
  const auto& containment = c.containment;
  const int landlockAbi = c.landlockAbi;
  auto& broker = c.broker;
  auto& pump = c.pump;
  const bool pumping = c.pumping;
  const int* lifeline = c.lifeline;
  const int* initReport = c.initReport;
  const sigset_t& previous = c.previous;
  auto& runEnv = c.runEnv;
  close(lifeline[1]);
  if (asInit) close(initReport[0]);
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  pollfd p{lifeline[0], POLLIN, 0};
  // jail already gone (its go byte may be there already: only the hang-up says gone)
  if (poll(&p, 1, 0) > 0 && (p.revents & (POLLHUP | POLLERR))) _exit(1);
  if (pumping) {
    std::string err = pump.BecomeChildStdio();
    if (!err.empty()) Die("the run's output: " + err, 126);
  }
  sigprocmask(SIG_SETMASK, &previous, nullptr);
  if (maxProcs > 0 && containment == "pid-namespace") {  // outside a user namespace it would count all of the user's
    std::string err = runboard::pids::SetNprocLimit(maxProcs);
    if (!err.empty()) Die("sandbox setup failed: " + err, 126);
  }
  if (!masks.empty()) {
    std::string err = runboard::mounts::MaskDirs(masks, keeps);
    if (!err.empty()) Die("sandbox setup failed: " + err, 126);
  }
  // --ro-mounts: the mount namespace under Landlock's rules too, where one can be made (Landlock
  // does not cover metadata: chmod, utime and xattrs outside the writable trees fail with EROFS).
  const bool mountNs = fsByMounts || (roMounts && containment == "pid-namespace");
  runboard::grants::ChildSlots slots;
  if (o.grantSock[0] >= 0) close(o.grantSock[0]);
  if (mountNs) {
    // What the run needs of the machine's /tmp: its trees, its command and the paths in its environment
    // (PATH, the addon's folder, ...), and the X sockets.
    std::vector<std::string> seen = policy.writable;
    seen.insert(seen.end(), readOnly.begin(), readOnly.end());
    // Without an allow-list (--read), the X socket folders too; with one, only what it names.
    if (policy.readable.empty()) seen.insert(seen.end(), {"/tmp/.X11-unix", "/tmp/.ICE-unix"});
    if (char cwd[PATH_MAX]; getcwd(cwd, sizeof cwd)) seen.push_back(cwd);
    for (char** a = command; *a; ++a) seen.push_back(*a);
    for (const auto& kv : runEnv) {
      std::string v = kv.substr(kv.find('=') + 1);
      for (size_t at = 0; at <= v.size();) {
        size_t end = v.find(':', at);
        if (end == std::string::npos) end = v.size();
        seen.push_back(v.substr(at, end - at));
        at = end + 1;
      }
    }
    std::string err = runboard::mounts::ConfineByMounts(
        {policy.writable, policy.hidden, policy.devices, privateTmp, readOnly, seen, policy.readable, o.blank});
    if (!err.empty()) Die("sandbox setup failed: " + err, 126);
    policy.restrictFs = !fsByMounts;
    if (o.grantSock[1] >= 0) {  // slots for folders the person allows while the run lives
      err = runboard::grants::MakeSlots(&slots);
      if (!err.empty()) Die("sandbox setup failed: " + err, 126);
      if (!fsByMounts) policy.readSlots = slots.read, policy.writeSlots = slots.write;
    }
    // The run's /tmp is its own tmpfs: new names in it are the run's; what is bound into it stays
    // read-only by its mount.
    if (!privateTmp.empty()) policy.writable.push_back("/tmp");
  }
  bool enforced = false;
  if (useLandlock) {
    std::string err = runboard::landlock::RestrictSelf(policy, landlockAbi, &enforced);
    if (!err.empty()) Die("sandbox setup failed: " + err, 126);
  }
  runboard::grants::SendToJail(o.grantSock[1], &slots, !privateTmp.empty());
  if (mountNs || !masks.empty()) {  // nothing may undo the mounts (umount needs CAP_SYS_ADMIN)
    std::string err = runboard::mounts::DropCapabilities();
    if (!err.empty()) Die("sandbox setup failed: " + err, 126);
  }
  if (useLandlock) {
    std::string err = broker.ConfineSelf(net);
    if (!err.empty()) Die("sandbox setup failed: " + err, 126);
  }
  // enforced: the run is confined (filesystem by Landlock or mounts); fs: by what. The run learns it
  // too: an agent with a sandbox of its own can run it only under mounts (worker/src/runners/codex.ts).
  const char* fs = fsByMounts ? "mounts" : enforced ? "landlock" : "none";
  if (envFd >= 0) {
    clearenv();
    for (auto& kv : runEnv) putenv(kv.data());
  }
  setenv("RUNBOARD_FS_CONFINEMENT", fs, 1);
  char go;
  ssize_t got;
  do got = read(lifeline[0], &go, 1);
  while (got < 0 && errno == EINTR);
  if (got != 1) _exit(1);  // the jail is gone
  Status("{\"event\":\"sandbox\",\"landlockAbi\":" + std::to_string(enforced ? landlockAbi : 0) +
         ",\"enforced\":" + (fsByMounts || enforced ? "true" : "false") + ",\"fs\":\"" + fs +
         "\",\"mountNamespace\":" + (mountNs ? "true" : "false") + "}");
  if (asInit) RunAsInit(command, initReport[1]);
  execvp(command[0], command);
  Die("cannot execute " + std::string(command[0]) + ": " + strerror(errno), 127);
}

}  // namespace runboard::jail
