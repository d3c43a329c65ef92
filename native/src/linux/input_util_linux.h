// What the Linux input code shares (inputter_linux.cc, keys_handled_linux.cc): how long an app is
// waited for, a sleep, and whether to trace.
#pragma once

#include <chrono>
#include <cstdlib>
#include <thread>

namespace runboard::desktop {

// How long an app that can be asked is waited for (a hung app would hold the input for ever).
inline constexpr int kAppReadLimitMs = 20000;

inline void Sleep(int ms) {
  if (ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(ms));
}

// RUNBOARD_DESKTOP_TRACE set: what the input waits for is said on stderr.
inline bool Trace() {
  static const bool trace = std::getenv("RUNBOARD_DESKTOP_TRACE") != nullptr;
  return trace;
}

}  // namespace runboard::desktop
