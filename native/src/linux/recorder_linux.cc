// Recorder on Linux (X11): a thread with its own Display that blocks in poll() on the X socket and an
// eventfd (pause, stop), like the key watcher. Input comes from XInput 2 raw events selected on the
// root for all devices (XI_RawKeyPress/Release, XI_RawButtonPress/Release): they reach every client
// that asks, whoever has the focus or a grab, and nothing is grabbed. Raw events carry no pointer
// position or modifier state. The position comes from XRecord (device events, with the root
// coordinates at the event) on a second connection, matched to the raw event by server time and
// button: reading the pointer when the event is handled would be late during a drag (XQueryPointer
// only when XRecord is missing). The modifiers are followed from the raw key stream itself (reading the server's state
// later would be wrong for scripted input, which presses and releases Shift within a millisecond).
//
// The pre-action frame: an event reaches this client after the fact, so the screen is never grabbed
// "before" it; instead frames are taken on this same connection (XShmGetImage) when the screen changed
// (DAMAGE; at most every frameIntervalMs), and each event is placed among frames and changes by request
// serial: the X server handles one request or one input event at a time, and an event carries the serial
// of the last request it had handled. The newest frame before the event, with what changed after it
// taken from the first frame after the event, is the screen at the event (recorder_damage_linux.cc).
// Without DAMAGE: a frame every frameIntervalMs and settleMs after each burst, and the newest before.
#include "linux/recorder_impl_linux.h"

namespace runboard::desktop {

namespace {

constexpr const char* kPauseAtom = "_RUNBOARD_RECORDER_PAUSE";
constexpr const char* kMarkAtom = "_RUNBOARD_RECORDER_MARK";

void IgnoreLostPauser(Display*, void*) {}

// A connection of the caller's own for a stamp (a pause, a resume, a mark); nullptr when none opens.
Display* OpenStamper(const char* purpose) {
  try {
    return x11::OpenOwnDisplay(purpose, IgnoreLostPauser, nullptr);
  } catch (const DesktopError&) { return nullptr; }
}

// The text a keysym types: Latin-1 keysyms are their code point, Unicode keysyms carry theirs;
// everything else (Return, Tab, arrows, F-keys, modifiers) types nothing here.
std::string KeysymText(KeySym sym) {
  unsigned long cp = 0;
  if ((sym >= 0x20 && sym <= 0x7e) || (sym >= 0xa0 && sym <= 0xff)) cp = sym;
  else if ((sym & 0xff000000UL) == 0x01000000UL) cp = sym & 0x00ffffffUL;
  if (!cp || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return "";
  std::string out;
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xc0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xe0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  } else {
    out += static_cast<char>(0xf0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  }
  return out;
}

}  // namespace

void Recorder::Impl::LoadModifiers() {
  modifierOfKey.clear();
  XModifierKeymap* map = XGetModifierMapping(dpy);
  if (!map) return;
  // Shift, Lock, Control, Mod1 (Alt), Mod2 (Num Lock), Mod3, Mod4 (Super), Mod5 (AltGr).
  const unsigned bits[8] = {kModShift, kModCapsLock, kModControl, kModAlt, 0, 0, kModSuper, 0};
  for (int m = 0; m < 8; m++) {
    for (int k = 0; k < map->max_keypermod; k++) {
      int kc = map->modifiermap[m * map->max_keypermod + k];
      if (kc && bits[m]) modifierOfKey[kc] |= bits[m];
    }
  }
  XFreeModifiermap(map);
}

void Recorder::Impl::Open() {
  dpy = x11::OpenOwnDisplay("to record", Impl::NoteLost, this);
  root = DefaultRootWindow(dpy);
  int scr = DefaultScreen(dpy);
  Rect screen{0, 0, DisplayWidth(dpy, scr), DisplayHeight(dpy, scr)};
  area = screen;
  if (options.hasRegion) {
    const Rect& r = options.region;
    if (r.w <= 0 || r.h <= 0 || r.x < 0 || r.y < 0 || r.x + r.w > screen.w || r.y + r.h > screen.h)
      throw DesktopError(kInvalidArgument, "the area to record is not on the screen (" + std::to_string(screen.w) +
                                               "x" + std::to_string(screen.h) + ")");
    area = r;
  }
  xiOpcode = x11::RequireXInput2(dpy, "to record input");
  devices = x11::InputDevices(dpy);
  LoadModifiers();
  OpenRecord();
  XkbStateRec state{};
  if (XkbGetState(dpy, XkbUseCoreKbd, &state) == Success) capsLocked = (state.locked_mods & LockMask) != 0;
  unsigned char bits[XIMaskLen(XI_LASTEVENT)] = {0};
  XISetMask(bits, XI_RawKeyPress);
  XISetMask(bits, XI_RawKeyRelease);
  XISetMask(bits, XI_RawButtonPress);
  XISetMask(bits, XI_RawButtonRelease);
  XISetMask(bits, XI_HierarchyChanged);
  XIEventMask mask{XIAllDevices, static_cast<int>(sizeof bits), bits};
  XISelectEvents(dpy, root, &mask, 1);
  if (XShmQueryExtension(dpy)) {
    shmImage =
        XShmCreateImage(dpy, DefaultVisual(dpy, scr), DefaultDepth(dpy, scr), ZPixmap, nullptr, &shm, area.w, area.h);
    if (shmImage) {
      shm.shmid =
          shmget(IPC_PRIVATE, static_cast<size_t>(shmImage->bytes_per_line) * shmImage->height, IPC_CREAT | 0600);
      void* addr = shm.shmid < 0 ? reinterpret_cast<void*>(-1) : shmat(shm.shmid, nullptr, 0);
      if (addr == reinterpret_cast<void*>(-1)) {
        if (shm.shmid >= 0) shmctl(shm.shmid, IPC_RMID, nullptr);
        XDestroyImage(shmImage);
        shmImage = nullptr;  // XGetImage instead
      } else {
        shm.shmaddr = shmImage->data = static_cast<char*>(addr);
        shm.readOnly = False;
        XShmAttach(dpy, &shm);
        XSync(dpy, False);
        shmctl(shm.shmid, IPC_RMID, nullptr);  // freed once both sides detach
      }
    }
  }
  int damageError = 0, major = 1, minor = 1;
  if (XDamageQueryExtension(dpy, &damageEvent, &damageError) && XDamageQueryVersion(dpy, &major, &minor))
    damage = XDamageCreate(dpy, root, XDamageReportRawRectangles);
  else damageEvent = 0;
  if (options.borderWidth > 0) border = std::make_unique<x11::RecordingBorder>(dpy, root, area, options.borderWidth);
  // The windows' maps, moves and unmaps (decision 140); the border selects the same on this connection.
  XSelectInput(dpy, root, SubstructureNotifyMask);
  XSetWindowAttributes wa{};
  wa.event_mask = PropertyChangeMask;
  stampWindow = XCreateWindow(dpy, root, -1, -1, 1, 1, 0, 0, InputOnly, CopyFromParent, CWEventMask, &wa);
  stampAtom = XInternAtom(dpy, "_RUNBOARD_RECORDER_STOP", False);
  pauseAtom = XInternAtom(dpy, kPauseAtom, False);
  markAtom = XInternAtom(dpy, kMarkAtom, False);
  XSync(dpy, False);
  if (lost) throw DesktopError(kNoDisplay, "the X display went away");
  // The server's clock against ours: a property change's PropertyNotify carries the server time.
  Atom clockAtom = XInternAtom(dpy, "_RUNBOARD_RECORDER_CLOCK", False);
  XChangeProperty(dpy, stampWindow, clockAtom, XA_INTEGER, 32, PropModeAppend, nullptr, 0);
  XEvent ev;
  XWindowEvent(dpy, stampWindow, PropertyChangeMask, &ev);
  NoteClock(ev.xproperty.time);
}

void Recorder::Impl::TakeFrame() {
  unsigned long serial = NextRequest(dpy);
  XImage* img = nullptr;
  bool owned = false;
  if (shmImage && XShmGetImage(dpy, root, shmImage, area.x, area.y, AllPlanes)) img = shmImage;
  if (!img) {
    serial = NextRequest(dpy);
    img = XGetImage(dpy, root, area.x, area.y, area.w, area.h, AllPlanes, ZPixmap);
    owned = true;
  }
  if (damage) XDamageSubtract(dpy, damage, None, None);  // (raw reports need no region kept)
  lastFrame = Clock::now();
  settlePending = false;
  if (!img) return;  // (the display is going away: the loop notices)
  auto frame = std::make_shared<RecorderFrame>();
  frame->id = ++nextFrameId;
  frame->source = area;
  frame->width = area.w;
  frame->height = area.h;
  frame->rgba.resize(static_cast<size_t>(area.w) * area.h * 4);
  bool fast = img->bits_per_pixel == 32 && img->red_mask == 0xff0000 && img->blue_mask == 0xff;
  for (int y = 0; y < area.h; y++) {
    uint8_t* out = &frame->rgba[static_cast<size_t>(y) * area.w * 4];
    const uint8_t* in = reinterpret_cast<const uint8_t*>(img->data) + static_cast<size_t>(y) * img->bytes_per_line;
    for (int x = 0; x < area.w; x++, out += 4) {
      unsigned long p = fast ? (in[x * 4] | (in[x * 4 + 1] << 8) | (in[x * 4 + 2] << 16)) : XGetPixel(img, x, y);
      out[0] = (p >> 16) & 0xff;
      out[1] = (p >> 8) & 0xff;
      out[2] = p & 0xff;
      out[3] = 255;
    }
  }
  if (owned) XDestroyImage(img);
  if (border) border->PaintBeneath(frame->rgba, area);
  frames.emplace_back(serial, std::move(frame));
  // Events are handled as they arrive, so only the newest frames are ever asked for.
  while (frames.size() > 8) frames.pop_front();
}

std::shared_ptr<const RecorderFrame> Recorder::Impl::FrameBefore(unsigned long serial) const {
  for (auto it = frames.rbegin(); it != frames.rend(); ++it)
    if (it->first <= serial) return it->second;
  return frames.empty() ? nullptr : frames.front().second;
}

void Recorder::Impl::HandleRaw(const XIRawEvent* raw, unsigned long serial) {
  if (stampSeen) return;  // after the stop's instant: not part of the recording
  // With XIAllDevices each event arrives twice: from the master and from the slave. Keep the slave's.
  if (raw->deviceid != raw->sourceid) return;
  NoteClock(raw->time);
  bool key = raw->evtype == XI_RawKeyPress || raw->evtype == XI_RawKeyRelease;
  bool press = raw->evtype == XI_RawKeyPress || raw->evtype == XI_RawButtonPress;
  unsigned modifiers = capsLocked ? static_cast<unsigned>(kModCapsLock) : 0u;
  for (int kc : down) {
    auto it = modifierOfKey.find(kc);
    if (it != modifierOfKey.end()) modifiers |= it->second & ~kModCapsLock;
  }
  RecordedEvent e;
  if (key) {
    int kc = raw->detail;
    if (!press) {
      down.erase(kc);
      return;  // releases only end a modifier
    }
    down.insert(kc);
    KeySym base = XkbKeycodeToKeysym(dpy, static_cast<KeyCode>(kc), 0, 0);
    if (base == XK_Caps_Lock && !(raw->flags & XIKeyRepeat)) capsLocked = !capsLocked;
    e.modifierKey = modifierOfKey.count(kc) > 0 || IsModifierKey(base);
    if (e.modifierKey && (raw->flags & XIKeyRepeat)) return;
    if (paused) return;
    bool shift = (modifiers & kModShift) != 0;
    KeySym sym = shift ? XkbKeycodeToKeysym(dpy, static_cast<KeyCode>(kc), 0, 1) : base;
    if (sym == NoSymbol) sym = base;
    if (modifiers & kModCapsLock) {
      KeySym lower = 0, upper = 0;
      XConvertCase(sym, &lower, &upper);
      if (lower != upper) sym = shift ? lower : upper;
    }
    e.kind = RecordedKind::kKeyPress;
    e.keycode = kc;
    e.keysym = sym;
    const char* n = sym ? XKeysymToString(sym) : nullptr;
    e.key = n ? n : "";
    e.text = e.modifierKey ? "" : KeysymText(sym);
    Window focus = 0;
    int revert = 0;
    XGetInputFocus(dpy, &focus, &revert);
    e.window = ClientOf(focus);
  } else {
    if (paused) return;
    e.kind = press ? RecordedKind::kButtonPress : RecordedKind::kButtonRelease;
    e.button = raw->detail;
    Window r = 0, child = 0;
    int px = 0, py = 0, wx = 0, wy = 0;
    unsigned mask = 0;
    XQueryPointer(dpy, root, &r, &child, &px, &py, &wx, &wy, &mask);
    if (!PointerOf(raw, &e.x, &e.y)) e.x = px, e.y = py;
    // The window under the event's position (the pointer may have moved on since).
    Window under = 0;
    int cx = 0, cy = 0;
    if (XTranslateCoordinates(dpy, root, root, e.x, e.y, &cx, &cy, &under)) child = under;
    e.window = ClientOf(child);
  }
  e.modifiers = modifiers;
  e.time = raw->time;
  if (!devices.count(raw->sourceid)) devices = x11::InputDevices(dpy);
  auto dev = devices.find(raw->sourceid);
  e.device = dev == devices.end() ? "?" : dev->second.first;
  e.synthetic = dev != devices.end() && dev->second.second;
  e.frame = FrameAt(serial);
  settleDue = Clock::now() + std::chrono::milliseconds(options.settleMs);
  settlePending = true;
  if (callbacks.event) callbacks.event(e);
}

void Recorder::Impl::HandleEvent(XEvent& ev) {
  if (ev.type == MappingNotify) {
    XRefreshKeyboardMapping(&ev.xmapping);
    if (ev.xmapping.request == MappingModifier) LoadModifiers();
    return;
  }
  if (damageEvent && ev.type == damageEvent + XDamageNotify) {
    NoteDamage(reinterpret_cast<const XDamageNotifyEvent&>(ev), ev.xany.serial);
    return;
  }
  NoteWindow(ev);
  if (border && border->Handle(ev)) return;
  if (ev.type == PropertyNotify && ev.xproperty.window == stampWindow) {
    if (ev.xproperty.atom == pauseAtom) {  // a pause or a resume, at its place among the events
      bool applied = false;
      {
        std::lock_guard<std::mutex> lock(mu);
        if (!pauseStamps.empty()) {
          paused = pauseStamps.front();
          pauseStamps.pop_front();
          applied = true;
        }
      }
      // After every event before it was reported: the caller can tell what is in flight from what is not.
      if (applied && callbacks.paused) callbacks.paused(paused, ev.xproperty.time);
      return;
    }
    if (ev.xproperty.atom == markAtom) {
      bool ours = false;
      {
        std::lock_guard<std::mutex> lock(mu);
        ours = marksSent > 0;
        if (ours) marksSent--;
      }
      if (!ours || stampSeen || !callbacks.marked) return;
      // The screen at the mark's instant, placed by its serial as an input event's is (paused or not);
      // without DAMAGE no frame says what changed since the newest (none is taken while paused): one now.
      std::shared_ptr<const RecorderFrame> frame;
      if (damageEvent) frame = FrameAt(ev.xproperty.serial);
      else {
        TakeFrame();
        if (!frames.empty()) frame = frames.back().second;
      }
      callbacks.marked(ev.xproperty.time, frame);
      return;
    }
    if (ev.xproperty.atom != stampAtom) return;
    stampSeen = true;
    stopTime = ev.xproperty.time;
    return;
  }
  if (ev.type != GenericEvent || ev.xcookie.extension != xiOpcode || !ev.xcookie.data) return;
  if (ev.xcookie.evtype == XI_HierarchyChanged) devices = x11::InputDevices(dpy);
  else HandleRaw(static_cast<XIRawEvent*>(ev.xcookie.data), ev.xcookie.serial);
}

void Recorder::Impl::Run() {
  try {
    Open();
    TakeFrame();
    if (frames.empty()) throw DesktopError(kCaptureFailed, "the X server returned no image of the recorded area");
  } catch (const DesktopError& e) {
    DropBorder();
    Fail(e);
    return;
  }
  StartFocus();  // listening before the first input is reported
  if (callbacks.ready) callbacks.ready(frames.back().second);
  int fd = ConnectionNumber(dpy);
  const auto interval = std::chrono::milliseconds(std::max(options.frameIntervalMs, 20));
  std::vector<XEvent> batch;
  while (!lost) {
    // Everything the server sent so far; then, before anything slow (each event's round trips), the
    // frame after them when one of them met a screen changed since the newest frame.
    // Until none is queued: the handlers' round trips queue the events that came meanwhile, which the
    // socket's poll below would not see.
    while (!lost && XPending(dpy) > 0) {
      batch.clear();
      while (!lost && XPending(dpy) > 0) {
        batch.emplace_back();
        XNextEvent(dpy, &batch.back());
        if (batch.back().type == GenericEvent) XGetEventData(dpy, &batch.back().xcookie);
      }
      if (!lost && !paused && !stampSeen && FrameFirst(batch)) TakeFrame();
      for (XEvent& ev : batch) {
        if (!lost) HandleEvent(ev);
        if (ev.type == GenericEvent) XFreeEventData(dpy, &ev.xcookie);
      }
    }
    if (lost) break;
    if (stampSeen) break;  // drained: every event up to the stop's instant was reported
    {
      std::lock_guard<std::mutex> lock(mu);
      if (stopping) break;
      if (drained && !stampSent) {
        // XRecord's positions of the last buttons first, then the stop's instant.
        if (rec) {
          XPending(rec);
          XRecordProcessReplies(rec);
        }
        XChangeProperty(dpy, stampWindow, stampAtom, XA_INTEGER, 32, PropModeAppend, nullptr, 0);
        XFlush(dpy);
        stampSent = true;
      }
    }
    bool isPaused = paused;
    if (wasPaused && !isPaused) lastFrame = {};  // resumed: a fresh frame at once
    wasPaused = isPaused;
    auto now = Clock::now();
    // With DAMAGE frames follow the screen's changes; without, a clock and the settle after input.
    bool wanted = ChangedSinceNewestFrame() || lastFrame == Clock::time_point{};
    bool take = damageEvent ? wanted && now >= lastFrame + interval
                            : now >= lastFrame + interval || (settlePending && now >= settleDue);
    if (!isPaused && take) {
      TakeFrame();
      continue;  // events that came during the capture are handled first
    }
    auto due = isPaused || (damageEvent && !wanted) ? now + std::chrono::hours(1) : lastFrame + interval;
    if (!isPaused && !damageEvent && settlePending) due = std::min(due, settleDue);
    int timeout = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(due - now).count()) + 1;
    XFlush(dpy);
    // Writing may read: xcb takes in what the server sent while it waits to write (the stop's
    // PropertyNotify among it), and the socket's poll would not see those again.
    if (XEventsQueued(dpy, QueuedAfterReading) > 0) continue;
    pollfd fds[3] = {{fd, POLLIN, 0}, {wake, POLLIN, 0}, {rec ? ConnectionNumber(rec) : -1, POLLIN, 0}};
    if (poll(fds, 3, timeout) < 0) continue;  // EINTR
    if (fds[2].revents) {                     // keep XRecord's stream read (the log only keeps the newest)
      XPending(rec);
      XRecordProcessReplies(rec);
    }
    if (fds[1].revents) {
      uint64_t v;
      while (read(wake, &v, sizeof v) > 0) {}
    }
    if (fds[0].revents & (POLLHUP | POLLERR)) XPending(dpy);  // lets Xlib notice the lost connection
  }
  std::function<void(unsigned long)> done;
  {
    std::lock_guard<std::mutex> lock(mu);
    done = std::move(drained);
  }
  focusListener.reset();
  if (done) done(stampSeen ? stopTime : 0);
  if (lost) {
    DropBorder();
    Fail(DesktopError(kNoDisplay, "the X display went away"));
    return;  // the dead Display is left as is (closing it would touch the dead socket)
  }
  frames.clear();
  border.reset();
  if (damage) XDamageDestroy(dpy, damage);
  if (stampWindow) XDestroyWindow(dpy, stampWindow);
  if (rec) {
    XRecordDisableContext(dpy, recContext);
    XRecordFreeContext(dpy, recContext);
    XSync(dpy, False);
    x11::CloseDisplay(rec);
  }
  if (shmImage) {
    XShmDetach(dpy, &shm);
    XDestroyImage(shmImage);
    shmdt(shm.shmaddr);
  }
  x11::CloseDisplay(dpy);
}

Recorder::Recorder(RecorderOptions options, RecorderCallbacks callbacks) : impl_(std::make_shared<Impl>()) {
  impl_->options = std::move(options);
  impl_->callbacks = std::move(callbacks);
  StartDesktopThread(impl_, [](Impl&) { return std::vector<std::function<void()>>(); });
}

Recorder::~Recorder() { Stop(); }

void Recorder::SetPaused(bool paused) {
  // At an instant of the X server (decision 120): the events generated before this call are reported
  // as before it even when the thread reads them later (a loaded machine), none after it.
  // No connection: the thread will find the display gone too; at once, as before.
  Display* own = OpenStamper("to pause the recording");
  bool atOnce = false;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    if (!impl_->Accepting()) {
      if (own) x11::CloseDisplay(own);
      return;
    }
    if (!own || !impl_->stampWindow) {
      impl_->paused = paused;
      atOnce = true;
    } else {
      impl_->pauseStamps.push_back(paused);
      Atom a = XInternAtom(own, kPauseAtom, False);
      XChangeProperty(own, impl_->stampWindow, a, XA_INTEGER, 32, PropModeAppend, nullptr, 0);
      XSync(own, False);
    }
    impl_->Wake();
  }
  if (own) x11::CloseDisplay(own);
  if (atOnce && impl_->callbacks.paused) impl_->callbacks.paused(paused, 0);
}

bool Recorder::Mark() {
  Display* own = OpenStamper("to mark the recording");
  if (!own) return false;
  bool sent = false;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    if (impl_->Accepting() && impl_->stampWindow) {
      impl_->marksSent++;
      XChangeProperty(own, impl_->stampWindow, XInternAtom(own, kMarkAtom, False), XA_INTEGER, 32, PropModeAppend,
                      nullptr, 0);
      XSync(own, False);
      impl_->Wake();
      sent = true;
    }
  }
  x11::CloseDisplay(own);
  return sent;
}

void Recorder::Stop() { impl_->RequestStop(); }

bool Recorder::Drain(std::function<void(unsigned long stopTime)> done) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  if (!impl_->Accepting() || impl_->drained) return false;
  impl_->drained = std::move(done);
  impl_->Wake();
  return true;
}

}  // namespace runboard::desktop
