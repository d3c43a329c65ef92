// Recorder capability: a thread of its own, with a display connection of its own, that reports what a
// person does (key presses with the text they type, mouse button presses and releases with the pointer
// position and the window under it) and keeps taking frames of the recorded area, so that every event
// comes paired with the screen as it was at the event (the newest frame before it, with what changed
// since taken from the frame after it where the display server says what changed): the pre-action
// state of a demonstration. It never grabs the keyboard or the pointer: it only listens. Plain C++; the
// callbacks run on the recorder's thread.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/desktop_types.h"

namespace runboard::desktop {

struct RecorderOptions {
  bool hasRegion = false;
  Rect region;               // the recorded area (a monitor); default: the whole screen
  int frameIntervalMs = 50;  // frames follow the screen's changes, at most this often (without DAMAGE:
                             // a frame this often)
  int settleMs = 150;        // without DAMAGE: and one this long after each burst of events
  int borderWidth = 0;       // a red border this thick around the area while recording, never in the frames
};

// One frame of the recorded area: RGBA rows, `width * 4` bytes each.
struct RecorderFrame {
  uint64_t id = 0;
  Rect source;  // screen rectangle
  int width = 0, height = 0;
  std::vector<uint8_t> rgba;
};

enum class RecordedKind { kKeyPress, kButtonPress, kButtonRelease };

// Modifier bits (X11 core masks; another platform maps its own onto these).
enum RecordedModifier : unsigned {
  kModShift = 1u << 0,
  kModCapsLock = 1u << 1,
  kModControl = 1u << 2,
  kModAlt = 1u << 3,
  kModSuper = 1u << 6,
};

struct RecordedEvent {
  RecordedKind kind = RecordedKind::kKeyPress;
  unsigned long time = 0;  // server time, ms
  // Keys: the keysym at the level the modifiers select, its name ("Return", "a", "A") and the text it
  // types ("" for keys that type nothing: Return, Tab, arrows, modifiers).
  int keycode = 0;
  unsigned long keysym = 0;
  std::string key, text;
  bool modifierKey = false;  // Shift, Control, Alt, Super, Caps Lock themselves
  unsigned modifiers = 0;    // RecordedModifier bits held at the event
  // Buttons: 1 left, 2 middle, 3 right, 4/5 wheel up/down, 6/7 wheel left/right.
  int button = 0;
  int x = 0, y = 0;        // the pointer, screen pixels (buttons: at the event; keys: when it was read)
  uint64_t window = 0;     // top-level client window under the pointer (buttons) or with the focus (keys)
  bool synthetic = false;  // from an XTest device (a script), not a person's keyboard or mouse
  std::string device;
  // The screen at this event (shared by events that happened between two frames with no change).
  std::shared_ptr<const RecorderFrame> frame;
};

// A change of the accessibility focus (AT-SPI on Linux), stamped when it arrived and mapped to server
// time: the recorder's focus timeline. `focused` false: the element lost the focus.
struct RecordedFocus {
  unsigned long time = 0;  // server time, ms
  bool focused = true;
  std::string app, path;   // the element's identity (bus name, object path)
  std::string role, name;  // read just after the change (empty when the app did not answer)
  Rect bounds;
  bool editable = false, secret = false;
  std::string error;  // set (and nothing else) when focus changes cannot be followed at all
};

// A top-level window shown, moved, resized or hidden (decision 140), as the server reports it on the
// root: the window manager's frame, whose rectangle is what a window listing calls the window's bounds.
// Reported for windows the window manager manages (override-redirect ones, menus and tooltips, are not).
struct RecordedWindow {
  uint64_t window = 0;  // the client window inside the frame (as events and listings name it)
  Rect bounds;          // the frame on the screen
  bool mapped = true;   // false: unmapped or destroyed (bounds: where it was)
};

struct RecorderCallbacks : ThreadEndCallbacks {
  // Listening; `first` is the frame at the start.
  std::function<void(std::shared_ptr<const RecorderFrame> first)> ready;
  std::function<void(const RecordedEvent&)> event;
  std::function<void(const RecordedFocus&)> focus;  // on another thread of the recorder's
  // A pause or a resume (SetPaused) took effect, among the events: every event before its instant has
  // been reported, none after it will be (until the next resume). `time`: the instant's server time,
  // ms (0 when it could not be placed among the events: it took effect at the call, and this runs on
  // the caller's thread).
  std::function<void(bool paused, unsigned long time)> paused;
  // A mark (Mark) was reached, among the events: every event before its instant has been reported, none
  // after it yet. `time`: the instant's server time, ms; `frame`: the screen at that instant (taken then
  // if it changed since the newest frame, paused or not).
  std::function<void(unsigned long time, std::shared_ptr<const RecorderFrame> frame)> marked;
  // Every top-level window that is mapped, moved or resized, or unmapped (in the server's order, as
  // it happens, paused or not: what the video's masks follow between input events, decision 140).
  std::function<void(const RecordedWindow&)> window;
};

class Recorder {
 public:
  // Starts the thread; exactly one of `ready` / `failed` follows (and `failed` may follow `ready`).
  Recorder(RecorderOptions options, RecorderCallbacks callbacks);
  ~Recorder();  // Stop(), without waiting for the thread
  // Paused: no frames are taken and no events reported (modifier state is still followed); resuming
  // takes a fresh frame at once. Both take effect at the X server's instant of the call: an event the
  // server generated before it is reported (or not) as before it, however late the thread reads it;
  // `paused` says when the thread got there.
  void SetPaused(bool paused);
  // Marks the X server's instant of the call (as SetPaused places a pause), paused or not: `marked`
  // follows on the thread, in the events' order. False when it cannot be placed (the recorder has ended,
  // or no display connection could be opened): then no `marked` follows.
  bool Mark();
  void Stop();
  // Stops at an instant of the display server: every event it had generated before then is reported
  // first (none after), then `done(stopTime)` runs on the recorder's thread (server time, ms; 0 when
  // the display was lost first) and the thread ends. False when it has stopped or ended already.
  bool Drain(std::function<void(unsigned long stopTime)> done);

  struct Impl;

 private:
  std::shared_ptr<Impl> impl_;
};

}  // namespace runboard::desktop
