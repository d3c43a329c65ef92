// Internal to the Linux recorder: its thread's state (recorder_linux.cc runs it; recorder_sources_linux.cc
// holds where an event's details come from: XRecord for the pointer, the AT-SPI bus for the focus timeline,
// the client window under an event; recorder_damage_linux.cc the screen as it was at an event).
#pragma once
#include <X11/XKBlib.h>
#include <X11/Xatom.h>
#include <X11/Xproto.h>
#include <X11/Xutil.h>
#include <X11/extensions/XInput2.h>
#include <X11/extensions/XShm.h>
#include <X11/extensions/Xdamage.h>
#include <X11/extensions/record.h>
#include <gio/gio.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/ipc.h>
#include <sys/shm.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "common/recorder.h"
#include "linux/border_linux.h"
#include "linux/desktop_thread.h"
#include "linux/recorder_focus_linux.h"
#include "linux/x11_session.h"

namespace runboard::desktop {

using Clock = std::chrono::steady_clock;

struct Recorder::Impl : DesktopThread {
  RecorderOptions options;
  RecorderCallbacks callbacks;
  std::atomic<bool> paused{false};

  // Thread state (the recorder thread only).
  Display* dpy = nullptr;
  bool lost = false;
  Window root = 0;
  int xiOpcode = 0;
  Rect area;
  std::map<int, std::pair<std::string, bool>> devices;
  XImage* shmImage = nullptr;
  XShmSegmentInfo shm{};
  std::deque<std::pair<unsigned long, std::shared_ptr<const RecorderFrame>>> frames;  // (GetImage serial, frame)
  uint64_t nextFrameId = 0;
  // The screen's changes (DAMAGE on the root, raw rectangles), in the server's order among the input
  // events on this connection: what a frame taken before an event is missing of the screen at it.
  // damageEvent 0: no DAMAGE (frames on a clock; an event gets the newest frame before it).
  int damageEvent = 0;
  Damage damage = 0;
  struct Damaged {
    unsigned long serial;  // the server had handled our requests up to this one when it drew
    Rect r;                // in the recorded area's coordinates, clipped to it
  };
  std::deque<Damaged> damaged;  // newest last
  uint64_t damagedCount = 0;    // every change ever noted (the composed frame's cache key)
  struct Composed {
    uint64_t before = 0, after = 0, count = 0;
    std::shared_ptr<const RecorderFrame> frame;
  } composed;
  Clock::time_point lastFrame, settleDue;
  bool settlePending = false, wasPaused = false;
  std::set<int> down;                     // keycodes held
  std::map<int, unsigned> modifierOfKey;  // keycode -> RecordedModifier bit
  bool capsLocked = false;
  // XRecord: its data connection and what it saw of the pointer (newest last).
  Display* rec = nullptr;
  XRecordContext recContext = 0;
  struct PointerAt {
    int type, button;
    unsigned long time;
    int x, y;
  };
  std::deque<PointerAt> pointerLog;
  std::unique_ptr<x11::RecordingBorder> border;
  // The stop as an instant of the X server (Drain): a property change on a window of our own, whose
  // PropertyNotify carries the server time and comes after every input event the server generated
  // before it. Events up to it are reported, later ones are not; then the thread ends.
  Window stampWindow = 0;
  Atom stampAtom = 0;
  // A pause or a resume takes effect at an instant of the X server too (SetPaused): a property change
  // on the stamp window, made and synced from the caller's thread before SetPaused returns, so its
  // PropertyNotify comes after every event generated before the call and before any generated after it.
  Atom pauseAtom = 0;
  std::deque<bool> pauseStamps;  // under `mu`: the state each stamp sent and not yet seen sets
  // A mark (Mark): another property change on the stamp window; when it comes, `marked` with the screen
  // at it (an extract added to the recording: where it happened among the input, and what it showed).
  Atom markAtom = 0;
  int marksSent = 0;  // under `mu`: marks sent and not yet seen
  bool stampSent = false;
  bool stampSeen = false;
  unsigned long stopTime = 0;
  std::function<void(unsigned long)> drained;  // under `mu` until the thread takes it
  // The focus timeline's source (AT-SPI), and the clock it is mapped by: CLOCK_MONOTONIC less server
  // time, the smallest seen (at the start's round trip, then at each input event: as input is mapped).
  std::unique_ptr<FocusListener> focusListener;
  std::atomic<int64_t> monoMinusServer{INT64_MAX};
  void NoteClock(unsigned long serverTime) {
    int64_t off = MonotonicMs() - static_cast<int64_t>(serverTime);
    int64_t cur = monoMinusServer.load();
    while (off < cur && !monoMinusServer.compare_exchange_weak(cur, off)) {}
  }
  void StartFocus();

  void Run();
  void OpenRecord();
  bool PointerOf(const XIRawEvent* raw, int* x, int* y);
  void Open();
  void LoadModifiers();
  void TakeFrame();
  std::shared_ptr<const RecorderFrame> FrameBefore(unsigned long serial) const;
  // The screen at an input event (recorder_damage_linux.cc): the newest frame before it, with what
  // changed between that frame and the event taken from the first frame after it.
  std::shared_ptr<const RecorderFrame> FrameAt(unsigned long serial);
  bool ChangedSinceNewestFrame() const {
    return damageEvent && !damaged.empty() && !frames.empty() && damaged.back().serial >= frames.back().first;
  }
  void NoteDamage(const XDamageNotifyEvent& d, unsigned long serial);
  // Whether an event is an input event reported with a frame (its cookie's data claimed), or a mark.
  bool ReportsFrame(const XEvent& ev) const;
  // Whether, in events read together, an input event met a screen changed since the newest frame: then
  // the frame after it is taken first, before each event's round trips.
  bool FrameFirst(const std::vector<XEvent>& batch) const;
  Window ClientOf(Window w);
  // The window manager's frames on screen (root children mapped, not override-redirect): their client
  // and rectangle, for `window` reports (recorder_sources_linux.cc).
  struct Shown {
    Window client;
    Rect bounds;
  };
  std::map<Window, Shown> shown;
  void NoteWindow(const XEvent& ev);
  void HandleEvent(XEvent& ev);
  // Removes the border now, or on a lost display forgets it (its Display must not be touched again;
  // the server removed its windows with the connection).
  void DropBorder() {
    if (border && lost) border->Abandon();
    border.reset();
  }
  void HandleRaw(const XIRawEvent* raw, unsigned long serial);
  void Fail(const DesktopError& e) {
    if (callbacks.failed) callbacks.failed(e);
  }
  static void NoteLost(Display*, void* data) { static_cast<Impl*>(data)->lost = true; }
};

}  // namespace runboard::desktop
