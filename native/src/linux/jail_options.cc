#include "linux/jail_options.h"

#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "linux/jail_common.h"

namespace runboard::jail {
namespace {

void Usage() {
  fprintf(stderr,
          "usage: runboard-jail [--status-fd N] [--parent-pid P] [--write DIR]... [--write-fd N] [--device FILE]...\n"
          "                     [--hide DIR]...\n"
          "                     [--mask DIR]... [--keep DIR/NAME]... [--private-tmp SIZE]\n"
          "                     [--max-procs N] [--memory BYTES] [--env-fd N] [--read PATH]... [--read-only PATH]...\n"
          "                     [--blank PATH]... [--connect SOCKET]...\n"
          "                     [--ask-deletes] [--remove REL]...\n"
          "                     [--tcp PORT]... [--udp] [--allow-abstract-unix] [--abstract-absent]\n"
          "                     [--fs-mounts[-if-possible]] [--ro-mounts]\n"
          "                     [--no-landlock] [--no-namespaces] [--output-fds STDOUT,STDERR,ORDER] [--init]\n"
          "                     [--control-fd N]\n"
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

Options ParseArgs(int argc, char** argv) {
  Options o;
  auto& policy = o.policy;
  policy.devices = {"/dev/null", "/dev/zero", "/dev/full", "/dev/tty", "/dev/random", "/dev/urandom", "/dev/ptmx"};
  policy.writable = {"/dev/pts"};
  auto &useLandlock = o.useLandlock, &useNamespaces = o.useNamespaces, &fsByMounts = o.fsByMounts;
  auto &fsIfPossible = o.fsIfPossible, &roMounts = o.roMounts, &asInit = o.asInit;
  auto& parentPid = o.parentPid;
  auto &masks = o.masks, &keeps = o.keeps, &readOnly = o.readOnly;
  auto& privateTmp = o.privateTmp;
  auto& maxProcs = o.maxProcs;
  auto& memoryBytes = o.memoryBytes;
  auto& envFd = o.envFd;
  auto& outputFds = o.outputFds;
  auto& net = o.net;
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
    else if (a == "--blank") o.blank.push_back(next());
    else if (a == "--connect") o.connect.push_back(next());
    else if (a == "--read") {
      // A tree the run may read (an allow-list: with any --read, nothing else is readable). Missing
      // ones are skipped; a link counts as its target, resolved once, here.
      const char* p = next();
      if (p[0] != '/') Die(std::string("--read ") + p + ": an absolute path is expected", 2);
      char real[PATH_MAX];
      if (realpath(p, real)) policy.readable.push_back(real);
      else if (errno != ENOENT) Die(std::string("--read ") + p + ": " + strerror(errno), 125);
    } else if (a == "--env-fd") envFd = atoi(next());
    else if (a == "--control-fd") o.controlFd = atoi(next());
    else if (a == "--ask-deletes") policy.workspaceNoRemove = true;
    else if (a == "--remove") policy.removable.push_back(next());
    else if (a == "--tcp") policy.tcpConnectPorts.push_back(static_cast<uint16_t>(atoi(next())));
    else if (a == "--udp") net.udp = true;
    else if (a == "--allow-abstract-unix") policy.scopeAbstractUnix = false;
    // An X display's abstract name the run may not reach says ECONNREFUSED to connect() with a mount
    // namespace too, as in the subreaper fallback: X clients then take the display's path (decision 134).
    else if (a == "--abstract-absent") net.brokerAbstract = true;
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
  o.command = argv + i;
  return o;
}

}  // namespace runboard::jail
