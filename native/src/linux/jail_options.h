// runboard-jail's command line (linux/jail.cc): what the supervisor asks of a run's jail. The usage line
// (Usage in jail_options.cc) lists every option.
#pragma once
#include <sys/types.h>

#include <string>
#include <vector>

#include "linux/landlock.h"
#include "linux/seccomp_net.h"

namespace runboard::jail {

struct Options {
  landlock::Policy policy;  // filesystem and network rules, the readable trees resolved
  bool useLandlock = true, useNamespaces = true, fsByMounts = false, fsIfPossible = false, roMounts = false;
  bool asInit = false;  // --init: COMMAND is the run's own command, under an init of ours
  pid_t parentPid = 0;
  std::vector<std::string> masks, keeps;
  std::string privateTmp;  // the size of the run's own /tmp; "" keeps the machine's
  long maxProcs = 0;
  long long memoryBytes = 0;
  std::vector<std::string> readOnly;
  // Files and folders of the readable trees covered in the run's mount namespace (root-only ones).
  std::vector<std::string> blank;
  int envFd = -1;
  int outputFds[3] = {-1, -1, -1};  // stdout.log, stderr.log, output.order
  // --control-fd: the supervisor's grant requests (linux/live_grants.h); the run gets grant slots.
  int controlFd = -1;
  int grantSock[2] = {-1, -1};  // the child hands the slots to the jail on it
  seccomp::NetPolicy net;
  // --connect: sockets the run may connect to by path in the subreaper fallback, besides those in its
  // writable trees and its --read entries naming sockets (linux/seccomp_connect.h).
  std::vector<std::string> connect;
  char** command = nullptr;  // COMMAND [ARG]..., argv's NULL-terminated tail
};

// The options of argv. A malformed line prints the usage and exits 2; a bad value exits through Die
// (--status-fd takes effect as soon as it is read, so such a refusal reaches the supervisor too).
Options ParseArgs(int argc, char** argv);

}  // namespace runboard::jail
