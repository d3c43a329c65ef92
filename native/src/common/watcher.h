// Watcher capability: a thread of its own, with a display connection of its own, that (a) reports key
// presses with the device they came from, telling the addon's own synthetic input (XTest on X11) from a
// person's keyboard, and (b) optionally shows the takeover HUD: an always-on-top, never-focused,
// click-through bar. Plain C++; the callbacks run on the watcher's thread.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/desktop_types.h"

namespace runboard::desktop {

struct KeyEvent {
  int keycode = 0;
  unsigned long keysym = 0;  // the key's base keysym (group 0, level 0); 0 when unmapped
  std::string key;           // its name ("Escape", "a", "Return"); "" when unmapped
  int deviceId = 0;          // the source (slave) device
  std::string device;        // its name ("Virtual core XTEST keyboard", "AT Translated Set 2 keyboard")
  bool synthetic = false;    // the source is an XTest device: the addon's (or xdotool's) input
  unsigned long time = 0;    // server time, ms
};

struct WatcherOptions {
  bool keys = true;                   // watch key presses
  std::vector<std::string> keyNames;  // report only these keysym names (empty: every key)
  std::string hudText;                // "" = no HUD
  int hudAtX = -1, hudAtY = -1;       // the HUD goes on the monitor holding this point (-1: the primary)
};

struct WatcherCallbacks : ThreadEndCallbacks {
  std::function<void()> ready;  // listening (and the HUD, if any, is shown)
  std::function<void(const KeyEvent&)> key;
};

class Watcher {
 public:
  // Starts the thread; exactly one of `ready` / `failed` follows (and `failed` may follow `ready`).
  Watcher(WatcherOptions options, WatcherCallbacks callbacks);
  ~Watcher();  // Stop(), without waiting for the thread
  // Shows / hides the HUD; `done` runs on the watcher thread once the display server has done it
  // (at once with no HUD). Returns false, and never calls `done`, when the thread is stopping or gone.
  bool SetHudVisible(bool visible, std::function<void()> done);
  // Ends the thread (asynchronously); no callback runs after the thread has seen it.
  void Stop();

  struct Impl;

 private:
  std::shared_ptr<Impl> impl_;
};

}  // namespace runboard::desktop
