// The recorder's focus timeline source (issue 30): AT-SPI focus changes (object:state-changed:focused)
// taken off the AT-SPI bus as they arrive, each stamped with the monotonic clock at its arrival (on
// GDBus's own reader thread, before anything else handles it) and mapped to X server time the way input
// is, then described (role, name, states, bounds) by a thread of its own and handed on. The recorder
// attributes every input step to the focus that held at the step's own X time, not at the time it got to
// handle it (native/src/desktop/focus-timeline.ts). Internal to the Linux backend.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "common/recorder.h"

namespace runboard::desktop {

class FocusListener {
 public:
  // Listens on the AT-SPI bus at `address`; throws DesktopError when it cannot. `toServerTime` maps a
  // CLOCK_MONOTONIC instant (ms) to X server time (ms); `sink` runs on the listener's thread.
  FocusListener(const std::string& address, std::function<unsigned long(int64_t monoMs)> toServerTime,
                std::function<void(const RecordedFocus&)> sink);
  ~FocusListener();  // stops listening; no `sink` call after it returns
  struct State;

 private:
  std::shared_ptr<State> state_;
};

int64_t MonotonicMs();

}  // namespace runboard::desktop
