// What the Linux desktop code shares: how long an app is waited for and a sleep (inputter_linux.cc,
// keys_handled_linux.cc), and whether to trace (the input, the reader, the AT-SPI bus and trees).
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

// RUNBOARD_DESKTOP_TRACE set: what the input waits for, a read's phases and batches are said on stderr.
inline bool Trace() {
  static const bool trace = std::getenv("RUNBOARD_DESKTOP_TRACE") != nullptr;
  return trace;
}

}  // namespace runboard::desktop
