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
// "before" it; instead frames are taken all the time on this same connection (XShmGetImage, every
// frameIntervalMs, plus settleMs after each burst of events, when the action's outcome is drawn), and
// each event is paired by request serial: the X server handles one request or one input event at a
// time, and an event carries the serial of the last request it had handled, so the frame whose
// GetImage serial is <= the event's serial is exactly the newest image taken before the event.
#include <X11/XKBlib.h>
#include <X11/Xatom.h>
#include <X11/Xproto.h>
#include <X11/Xutil.h>
#include <X11/extensions/XInput2.h>
#include <X11/extensions/XShm.h>
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
  Window ClientOf(Window w);
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
};

namespace {

void NoteLost(Display*, void* data) { static_cast<Recorder::Impl*>(data)->lost = true; }

void OnRecorded(XPointer closure, XRecordInterceptData* d) {
  auto* impl = reinterpret_cast<Recorder::Impl*>(closure);
  if (d->category == XRecordFromServer && d->data && d->data_len * 4 >= sizeof(xEvent)) {
    const auto* ev = reinterpret_cast<const xEvent*>(d->data);
    int type = ev->u.u.type & 0x7f;
    impl->pointerLog.push_back({type, ev->u.u.detail, static_cast<unsigned long>(ev->u.keyButtonPointer.time),
                                ev->u.keyButtonPointer.rootX, ev->u.keyButtonPointer.rootY});
    if (impl->pointerLog.size() > 512) impl->pointerLog.pop_front();
  }
  XRecordFreeData(d);
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
  dpy = x11::OpenOwnDisplay("to record", NoteLost, this);
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
  if (options.borderWidth > 0) border = std::make_unique<x11::RecordingBorder>(dpy, root, area, options.borderWidth);
  XSetWindowAttributes wa{};
  wa.event_mask = PropertyChangeMask;
  stampWindow = XCreateWindow(dpy, root, -1, -1, 1, 1, 0, 0, InputOnly, CopyFromParent, CWEventMask, &wa);
  stampAtom = XInternAtom(dpy, "_RUNBOARD_RECORDER_STOP", False);
  XSync(dpy, False);
  if (lost) throw DesktopError(kNoDisplay, "the X display went away");
  // The server's clock against ours: a property change's PropertyNotify carries the server time.
  Atom clockAtom = XInternAtom(dpy, "_RUNBOARD_RECORDER_CLOCK", False);
  XChangeProperty(dpy, stampWindow, clockAtom, XA_INTEGER, 32, PropModeAppend, nullptr, 0);
  XEvent ev;
  XWindowEvent(dpy, stampWindow, PropertyChangeMask, &ev);
  NoteClock(ev.xproperty.time);
}

// The AT-SPI bus: AT_SPI_BUS_ADDRESS, else the root window's AT_SPI_BUS (what at-spi-bus-launcher sets),
// else org.a11y.Bus on the session bus. A recording without it still records; its steps then say their
// focus could not be followed.
void Recorder::Impl::StartFocus() {
  if (!callbacks.focus) return;
  auto fail = [this](const std::string& why) {
    RecordedFocus f;
    f.error = why;
    callbacks.focus(f);
  };
  std::string address;
  if (const char* env = std::getenv("AT_SPI_BUS_ADDRESS"); env && *env) address = env;
  if (address.empty()) {
    Atom type = None;
    int format = 0;
    unsigned long n = 0, after = 0;
    unsigned char* data = nullptr;
    if (XGetWindowProperty(dpy, root, XInternAtom(dpy, "AT_SPI_BUS", False), 0, 1024, False, AnyPropertyType, &type,
                           &format, &n, &after, &data) == Success &&
        data && format == 8)
      address.assign(reinterpret_cast<char*>(data), n);
    if (data) XFree(data);
  }
  if (address.empty()) {
    const char* session = std::getenv("DBUS_SESSION_BUS_ADDRESS");
    if (!session || !*session) return fail("no AT-SPI bus (no AT_SPI_BUS on the display, no DBUS_SESSION_BUS_ADDRESS)");
    try {
      GError* err = nullptr;
      GDBusConnection* sb = g_dbus_connection_new_for_address_sync(
          session,
          static_cast<GDBusConnectionFlags>(G_DBUS_CONNECTION_FLAGS_AUTHENTICATION_CLIENT |
                                            G_DBUS_CONNECTION_FLAGS_MESSAGE_BUS_CONNECTION),
          nullptr, nullptr, &err);
      g_clear_error(&err);
      if (!sb) return fail("cannot reach the session bus");
      GVariant* r =
          g_dbus_connection_call_sync(sb, "org.a11y.Bus", "/org/a11y/bus", "org.a11y.Bus", "GetAddress", nullptr,
                                      G_VARIANT_TYPE("(s)"), G_DBUS_CALL_FLAGS_NONE, 3000, nullptr, &err);
      g_clear_error(&err);
      g_dbus_connection_close_sync(sb, nullptr, nullptr);
      g_object_unref(sb);
      if (!r) return fail("the session bus has no AT-SPI bus (org.a11y.Bus)");
      const char* a = nullptr;
      g_variant_get(r, "(&s)", &a);
      address = a ? a : "";
      g_variant_unref(r);
    } catch (const DesktopError& e) { return fail(e.what()); }
  }
  try {
    focusListener = std::make_unique<FocusListener>(
        address, [this](int64_t mono) { return static_cast<unsigned long>(mono - monoMinusServer.load()); },
        callbacks.focus);
  } catch (const DesktopError& e) { fail(e.what()); }
}

// XRecord on a data connection of its own (its replies never end); without the extension, button
// positions fall back to XQueryPointer.
void Recorder::Impl::OpenRecord() {
  int major = 0, minor = 0;
  if (!XRecordQueryVersion(dpy, &major, &minor)) return;
  rec = XOpenDisplay(DisplayString(dpy));
  if (!rec) return;
  XSetIOErrorExitHandler(rec, NoteLost, this);
  XRecordRange* range = XRecordAllocRange();
  if (!range) return;
  range->device_events.first = ButtonPress;
  range->device_events.last = ButtonRelease;
  XRecordClientSpec clients = XRecordAllClients;
  recContext = XRecordCreateContext(dpy, 0, &clients, 1, &range, 1);
  XFree(range);
  XSync(dpy, False);
  if (!recContext || !XRecordEnableContextAsync(rec, recContext, OnRecorded, reinterpret_cast<XPointer>(this))) {
    if (recContext) XRecordFreeContext(dpy, recContext);
    recContext = 0;
    x11::CloseDisplay(rec);
    rec = nullptr;
  }
}

// Where the pointer was at a raw button event: XRecord's copy of the same event (same server time and
// button), waiting up to ~50 ms for it to arrive on its connection.
bool Recorder::Impl::PointerOf(const XIRawEvent* raw, int* x, int* y) {
  if (!rec) return false;
  int type = raw->evtype == XI_RawButtonPress ? ButtonPress : ButtonRelease;
  for (int attempt = 0; attempt < 10 && !lost; attempt++) {
    XPending(rec);
    XRecordProcessReplies(rec);
    for (auto it = pointerLog.rbegin(); it != pointerLog.rend(); ++it) {
      if (it->type == type && it->button == raw->detail && it->time == raw->time) {
        *x = it->x;
        *y = it->y;
        return true;
      }
      if (it->time < raw->time) break;
    }
    pollfd p{ConnectionNumber(rec), POLLIN, 0};
    poll(&p, 1, 5);
  }
  return false;
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
  while (frames.size() > 4) frames.pop_front();
}

std::shared_ptr<const RecorderFrame> Recorder::Impl::FrameBefore(unsigned long serial) const {
  for (auto it = frames.rbegin(); it != frames.rend(); ++it)
    if (it->first <= serial) return it->second;
  return frames.empty() ? nullptr : frames.front().second;
}

// The top-level client window (the one with WM_STATE) holding `w`, or the root's child when none has.
Window Recorder::Impl::ClientOf(Window w) {
  if (!w || w == root || w == PointerRoot) return 0;
  for (;;) {  // up to the root's child (the frame the window manager put around the client)
    Window r = 0, parent = 0, *kids = nullptr;
    unsigned n = 0;
    if (!XQueryTree(dpy, w, &r, &parent, &kids, &n)) return 0;
    if (kids) XFree(kids);
    if (parent == root || !parent) break;
    w = parent;
  }
  Atom wmState = XInternAtom(dpy, "WM_STATE", False);
  std::deque<std::pair<Window, int>> todo{{w, 0}};
  while (!todo.empty()) {  // breadth first: the client sits one or two levels below the frame
    auto [cur, depth] = todo.front();
    todo.pop_front();
    Atom type = None;
    int format = 0;
    unsigned long n = 0, after = 0;
    unsigned char* data = nullptr;
    if (XGetWindowProperty(dpy, cur, wmState, 0, 0, False, AnyPropertyType, &type, &format, &n, &after, &data) ==
            Success &&
        type != None) {
      if (data) XFree(data);
      return cur;
    }
    if (data) XFree(data);
    if (depth >= 3) continue;
    Window r = 0, parent = 0, *kids = nullptr;
    unsigned count = 0;
    if (XQueryTree(dpy, cur, &r, &parent, &kids, &count) && kids) {
      for (unsigned i = 0; i < count; i++) todo.emplace_back(kids[i], depth + 1);
      XFree(kids);
    }
  }
  return w;
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
  e.frame = FrameBefore(serial);
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
  if (border && border->Handle(ev)) return;
  if (ev.type == PropertyNotify && ev.xproperty.window == stampWindow) {
    stampSeen = true;
    stopTime = ev.xproperty.time;
    return;
  }
  if (ev.type != GenericEvent || ev.xcookie.extension != xiOpcode) return;
  unsigned long serial = ev.xcookie.serial;
  if (!XGetEventData(dpy, &ev.xcookie)) return;
  if (ev.xcookie.evtype == XI_HierarchyChanged) devices = x11::InputDevices(dpy);
  else HandleRaw(static_cast<XIRawEvent*>(ev.xcookie.data), serial);
  XFreeEventData(dpy, &ev.xcookie);
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
  while (!lost) {
    HandlePendingEvents(dpy, lost, [this](XEvent& ev) { HandleEvent(ev); });
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
    if (!isPaused && (now >= lastFrame + interval || (settlePending && now >= settleDue))) {
      TakeFrame();
      continue;  // events that came during the capture are handled first
    }
    auto due = isPaused ? now + std::chrono::hours(1) : lastFrame + interval;
    if (!isPaused && settlePending) due = std::min(due, settleDue);
    int timeout = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(due - now).count()) + 1;
    XFlush(dpy);
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
  std::lock_guard<std::mutex> lock(impl_->mu);
  if (!impl_->Accepting()) return;
  impl_->paused = paused;
  impl_->Wake();
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
