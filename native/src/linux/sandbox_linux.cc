#include "common/sandbox.h"
#include "linux/landlock.h"

namespace runboard {

SandboxSupport ProbeSandbox() {
  SandboxSupport s;
  s.landlockAbi = landlock::Abi(&s.landlockReason);
  return s;
}

}  // namespace runboard
