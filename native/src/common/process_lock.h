// A lock held for the rest of this process's life: one supervisor per state root. The kernel lets
// it go however the process ends (SIGKILL too), so a dead holder never leaves it taken.
#pragma once
#include <string>

namespace runboard {

// Takes the exclusive lock on `path` (made 0600 when missing) without waiting. Returns "" when this
// process now holds it, "held" when another process does, else what failed. The descriptor stays open
// (close-on-exec: no child keeps the lock after this process is gone).
std::string HoldProcessLock(const std::string& path);

}  // namespace runboard
