// Sandbox capability: what the kernel offers for confining a run. One header per capability;
// the implementation lives in the platform folder (src/linux/ for now).
#pragma once
#include <string>

namespace runboard {

struct SandboxSupport {
  int landlockAbi = 0;         // 0 when the kernel has no Landlock (or it is disabled)
  std::string landlockReason;  // why it is 0, for the error a user sees
};

SandboxSupport ProbeSandbox();

}  // namespace runboard
