// The jail's child (linux/jail.cc): it confines itself (mounts, Landlock, capabilities, the network
// filter), waits for the jail's go (it is in the run's cgroups then) and becomes the run: the worker by
// exec, or with --init the run's init starting the run's command.
#pragma once
#include <signal.h>

#include <cstdint>
#include <string>
#include <vector>

#include "linux/jail_options.h"
#include "linux/output_pump.h"
#include "linux/seccomp_net.h"

namespace runboard::jail {

struct CommandReport {
  int32_t code;  // -1: killed by a signal
  int32_t signal;
  int32_t execErrno;  // the command could not be executed (errno), else 0
  int32_t ms;         // fork of the command → its end
};

struct Child {
  Options& o;
  const std::string& containment;  // "pid-namespace" or "subreaper"
  int landlockAbi;
  seccomp::ListenBroker& broker;
  output::Pump& pump;
  bool pumping;
  int lifeline[2];                   // the jail's go byte arrives on [0]; EOF: the jail is gone
  int initReport[2];                 // --init: the command's report (CommandReport) goes to [1]
  const sigset_t& previous;          // the signal mask the run starts with
  std::vector<std::string>& runEnv;  // NAME=VALUE entries (--env-fd)
};

// Call right after fork, in the child. Never returns.
[[noreturn]] void RunChild(const Child& c);

}  // namespace runboard::jail
