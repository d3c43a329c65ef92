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
// --udp, other socket kinds), whose listen() calls this process answers (linux/seccomp_net.h).
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
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "linux/landlock.h"
#include "linux/mounts.h"
#include "linux/output_pump.h"
#include "linux/pids_limit.h"
#include "linux/seccomp_net.h"

namespace {

int gStatusFd = -1;

std::string JsonEscape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += c;
    }
  }
  return out;
}

void Status(const std::string& json) {
  if (gStatusFd < 0) return;
  std::string line = json + "\n";
  ssize_t off = 0;
  while (off < static_cast<ssize_t>(line.size())) {
    ssize_t n = write(gStatusFd, line.data() + off, line.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    off += n;
  }
}

// The run's pids cgroup, left (and removed) by the jail itself when it gives up before the run.
runboard::pids::RunCgroup* gCgroup = nullptr;
pid_t gJailPid = 0;

[[noreturn]] void Die(const std::string& msg, int code) {
  if (gCgroup && getpid() == gJailPid) gCgroup->Remove();
  Status("{\"event\":\"error\",\"message\":\"" + JsonEscape(msg) + "\"}");
  fprintf(stderr, "runboard-jail: %s\n", msg.c_str());
  _exit(code);
}

bool WriteFile(const char* path, const std::string& text) {
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool ok = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  close(fd);
  return ok;
}

// A fresh user namespace (so no privilege is needed) owning a fresh PID namespace for our children.
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

// Closes every fd from `from` up, but those in `keep`.
void CloseFrom(int from, std::vector<int> keep) {
  std::sort(keep.begin(), keep.end());
  for (int k : keep) {
    if (k < from) continue;
    if (k > from) syscall(SYS_close_range, from, k - 1, 0);
    from = k + 1;
  }
  syscall(SYS_close_range, from, ~0U, 0);
}

long long IoField(const std::string& text, const char* key) {
  size_t at = text.find(std::string(key) + ": ");
  return at == std::string::npos ? -1 : atoll(text.c_str() + at + strlen(key) + 2);
}

// What the run's init tells the jail about the run's command (--init), through a pipe of their own.
struct CommandReport {
  int32_t code;  // -1: killed by a signal
  int32_t signal;
  int32_t execErrno;  // the command could not be executed (errno), else 0
  int32_t ms;         // fork of the command → its end
};

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

void Usage() {
  fprintf(
      stderr,
      "usage: runboard-jail [--status-fd N] [--parent-pid P] [--write DIR]... [--write-fd N] [--device FILE]...\n"
      "                     [--hide DIR]...\n"
      "                     [--mask DIR]... [--keep DIR/NAME]... [--private-tmp SIZE]\n"
      "                     [--max-procs N] [--memory BYTES] [--env-fd N] [--read PATH]... [--read-only PATH]...\n"
      "                     [--ask-deletes] [--remove REL]...\n"
      "                     [--tcp PORT]... [--udp] [--allow-abstract-unix] [--fs-mounts[-if-possible]] [--ro-mounts]\n"
      "                     [--no-landlock] [--no-namespaces] [--output-fds STDOUT,STDERR,ORDER] [--init]\n"
      "                     -- COMMAND [ARG]...\n");
  _exit(2);
}

// The size of the run's /tmp (a tmpfs), as tmpfs takes it: a number that is not 0 (which tmpfs takes
// as no bound), then k, m or g, or a share of the memory up to 100%.
bool ValidTmpSize(const std::string& s) {
  size_t digits = s.find_first_not_of("0123456789");
  if (s.empty() || s[0] == '0' || digits == 0 || std::min(digits, s.size()) > 10) return false;
  if (digits == std::string::npos) return true;
  if (digits + 1 != s.size() || std::string("kmg%").find(s[digits]) == std::string::npos) return false;
  return s[digits] != '%' || atol(s.c_str()) <= 100;
}

}  // namespace

int main(int argc, char** argv) {
  runboard::landlock::Policy policy;
  policy.devices = {"/dev/null", "/dev/zero", "/dev/full", "/dev/tty", "/dev/random", "/dev/urandom", "/dev/ptmx"};
  policy.writable = {"/dev/pts"};
  bool useLandlock = true, useNamespaces = true, fsByMounts = false, fsIfPossible = false, roMounts = false;
  bool asInit = false;
  pid_t parentPid = 0;
  std::vector<std::string> masks, keeps;
  std::string privateTmp;
  long maxProcs = 0;
  long long memoryBytes = 0;
  std::vector<std::string> readOnly;
  int envFd = -1;
  int outputFds[3] = {-1, -1, -1};
  runboard::seccomp::NetPolicy net;
  int i = 1;
  for (; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> const char* {
      if (i + 1 >= argc) Usage();
      return argv[++i];
    };
    if (a == "--") {
      ++i;
      break;
    } else if (a == "--status-fd") gStatusFd = atoi(next());
    else if (a == "--parent-pid") parentPid = atoi(next());
    else if (a == "--write") policy.writable.push_back(next());
    else if (a == "--write-fd") {
      // A writable directory handed over open (the workspace, checked by the supervisor): the run
      // starts in it, and the rules take it from the working directory, "." (never by its name).
      int fd = atoi(next());
      if (fchdir(fd) < 0) Die("--write-fd " + std::to_string(fd) + ": " + strerror(errno), 125);
      close(fd);
      policy.writable.push_back(".");
    } else if (a == "--device") policy.devices.push_back(next());
    else if (a == "--hide") policy.hidden.push_back(next());
    else if (a == "--mask") masks.push_back(next());
    else if (a == "--keep") keeps.push_back(next());
    else if (a == "--private-tmp") {
      privateTmp = next();
      if (!ValidTmpSize(privateTmp))
        Die("--private-tmp " + privateTmp + ": a size such as 512m or 25% (at most 100%) is expected", 2);
    } else if (a == "--max-procs") maxProcs = atol(next());
    else if (a == "--memory") {
      memoryBytes = atoll(next());
      if (memoryBytes < (1LL << 20)) Die("--memory: a number of bytes of at least 1 MiB is expected", 2);
    } else if (a == "--read-only") readOnly.push_back(next());
    else if (a == "--read") {
      // A tree the run may read (an allow-list: with any --read, nothing else is readable). Missing
      // ones are skipped; a link counts as its target, resolved once, here.
      const char* p = next();
      if (p[0] != '/') Die(std::string("--read ") + p + ": an absolute path is expected", 2);
      char real[PATH_MAX];
      if (realpath(p, real)) policy.readable.push_back(real);
      else if (errno != ENOENT) Die(std::string("--read ") + p + ": " + strerror(errno), 125);
    } else if (a == "--env-fd") envFd = atoi(next());
    else if (a == "--ask-deletes") policy.workspaceNoRemove = true;
    else if (a == "--remove") policy.removable.push_back(next());
    else if (a == "--tcp") policy.tcpConnectPorts.push_back(static_cast<uint16_t>(atoi(next())));
    else if (a == "--udp") net.udp = true;
    else if (a == "--allow-abstract-unix") policy.scopeAbstractUnix = false;
    else if (a == "--no-landlock") useLandlock = false;
    else if (a == "--fs-mounts") fsByMounts = true;
    else if (a == "--fs-mounts-if-possible") fsByMounts = fsIfPossible = true;
    else if (a == "--ro-mounts") roMounts = true;
    else if (a == "--no-namespaces") useNamespaces = false;
    else if (a == "--init") asInit = true;  // COMMAND is the run's own command, under an init of ours
    else if (a == "--output-fds") {
      // The run's log files, open for writing: the jail moves the run's stdout and stderr into them
      // (linux/output_pump.h) instead of the run inheriting the jail's own.
      if (sscanf(next(), "%d,%d,%d", &outputFds[0], &outputFds[1], &outputFds[2]) != 3) Usage();
    } else Usage();
  }
  if (i >= argc) Usage();
  char** command = argv + i;

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
  CloseFrom(keepFrom, pumping ? std::vector<int>(outputFds, outputFds + 3) : std::vector<int>());
  if (gStatusFd >= 0) fcntl(gStatusFd, F_SETFD, FD_CLOEXEC);
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
  gCgroup = &cgroup;
  gJailPid = getpid();
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

  // The child sees EOF here if we are gone before it armed PDEATHSIG; and it execs the run only once a
  // byte came: then it is in the run's pids cgroup (moved while it sets up its sandbox).
  int lifeline[2];
  if (pipe2(lifeline, O_CLOEXEC) < 0) Die("pipe: " + std::string(strerror(errno)), 1);
  int initReport[2] = {-1, -1};  // --init: how the command ended, from the run's init
  if (asInit && pipe2(initReport, O_CLOEXEC) < 0) Die("pipe: " + std::string(strerror(errno)), 1);

  pid_t child = fork();
  if (child < 0) Die("fork: " + std::string(strerror(errno)), 1);
  if (child == 0) {
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
          {policy.writable, policy.hidden, policy.devices, privateTmp, readOnly, seen, policy.readable});
      if (!err.empty()) Die("sandbox setup failed: " + err, 126);
      policy.restrictFs = !fsByMounts;
      // The run's /tmp is its own tmpfs: new names in it are the run's; what is bound into it stays
      // read-only by its mount.
      if (!privateTmp.empty()) policy.writable.push_back("/tmp");
    }
    bool enforced = false;
    if (useLandlock) {
      std::string err = runboard::landlock::RestrictSelf(policy, landlockAbi, &enforced);
      if (!err.empty()) Die("sandbox setup failed: " + err, 126);
    }
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
  close(lifeline[0]);
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
    pollfd ready[5] = {{signals, POLLIN, 0},
                       {broker.PollFd(), POLLIN, 0},
                       {pumping ? pump.Fd(0) : -1, POLLIN, 0},
                       {pumping ? pump.Fd(1) : -1, POLLIN, 0},
                       {oomFd, POLLIN, 0}};
    int timeout = -1;
    if (sizesDue) timeout = static_cast<int>(std::max(0LL, sizesSentAt + kSizesEveryMs - nowMs()));
    int n = poll(ready, 5, timeout);
    if (n < 0) continue;
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
  if (asInit) {
    CommandReport report{};
    if (read(initReport[0], &report, sizeof report) == static_cast<ssize_t>(sizeof report))
      commandField = ",\"command\":{\"code\":" + (report.code < 0 ? std::string("null") : std::to_string(report.code)) +
                     ",\"signal\":" + std::to_string(report.signal) +
                     ",\"execErrno\":" + std::to_string(report.execErrno) + ",\"ms\":" + std::to_string(report.ms) +
                     "}";
    close(initReport[0]);
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
  return signaled ? 128 + termsig : code;
}
