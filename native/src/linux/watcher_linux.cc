// Watcher on Linux (X11): a thread with its own Display that blocks in poll() on the X socket and an
// eventfd (commands, stop). Key presses come from XInput 2 raw events (XI_RawKeyPress, selected on the
// root for all devices), which carry the source (slave) device: what XTest injects comes from the
// server's XTest slave ("Virtual core XTEST keyboard", which has the "XTEST Device" property); a
// person's key from a real keyboard's slave. XRecord cannot tell them apart (XTest events reach it as
// core events). The HUD is an override-redirect window (the WM neither manages nor focuses it) with an
// empty XShape input region (clicks fall through to the windows below), a pre-rendered background
// pixmap (the server repaints it on every map, no Expose round trip) and rounded bottom corners (the
// bounding shape); it is raised again whenever another top-level window is mapped or restacked.
#include <X11/XKBlib.h>
#include <X11/Xatom.h>
#include <X11/Xft/Xft.h>
#include <X11/Xutil.h>
#include <X11/extensions/XInput2.h>
#include <X11/extensions/shape.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <thread>

#include "common/watcher.h"
#include "linux/desktop_thread.h"
#include "linux/lazy_lib.h"
#include "linux/x11_session.h"

namespace runboard::desktop {
namespace {

// libXft, opened at the first HUD (linux/lazy_lib.h): `ok` when the library and every function the
// HUD calls are there; otherwise the HUD draws its text with the core X font.
struct XftApi {
#define RB_FN(fn) decltype(&::fn) fn = lazy::Sym<decltype(&::fn)>(lazy::Xft(), #fn);
  RB_FN(XftFontOpenName)
  RB_FN(XftTextExtentsUtf8)
  RB_FN(XftDrawCreate)
  RB_FN(XftColorAllocValue)
  RB_FN(XftDrawStringUtf8)
  RB_FN(XftColorFree)
  RB_FN(XftDrawDestroy)
  RB_FN(XftFontClose)
#undef RB_FN
  bool ok = XftFontOpenName && XftTextExtentsUtf8 && XftDrawCreate && XftColorAllocValue && XftDrawStringUtf8 &&
            XftColorFree && XftDrawDestroy && XftFontClose;
};

const XftApi& Xft() {
  static const XftApi api;
  return api;
}

}  // namespace

struct Watcher::Impl : DesktopThread {
  WatcherOptions options;
  WatcherCallbacks callbacks;
  std::deque<std::pair<bool, std::function<void()>>> commands;  // HUD changes; once ended, none is taken

  // Thread state (the watcher thread only).
  Display* dpy = nullptr;
  bool lost = false;
  Window root = 0, hud = 0;
  bool hudShown = false;
  std::chrono::steady_clock::time_point raiseWindowStart;
  int raises = 0;
  int xiOpcode = 0;
  std::map<int, std::pair<std::string, bool>> devices;  // id → name, is XTest
  std::vector<KeySym> wanted;

  void Run();
  void Open();
  void LoadDevices();
  void CreateHud();
  void Show(bool visible);
  void HandleEvent(XEvent& ev);
  bool DrainCommands();  // false: stop
  void Fail(const DesktopError& e) {
    if (callbacks.failed) callbacks.failed(e);
  }
};

namespace {

void NoteLost(Display*, void* data) { static_cast<Watcher::Impl*>(data)->lost = true; }

}  // namespace

void Watcher::Impl::LoadDevices() { devices = x11::InputDevices(dpy); }

void Watcher::Impl::Open() {
  dpy = x11::OpenOwnDisplay("to watch", NoteLost, this);
  root = DefaultRootWindow(dpy);
  if (options.keys) {
    xiOpcode = x11::RequireXInput2(dpy, "to watch key presses");
    for (const auto& k : options.keyNames) {
      KeySym s = XStringToKeysym(k.c_str());
      if (s == NoSymbol)
        throw DesktopError(kInvalidArgument, "unknown key name \"" + k + "\" (X keysym names: Escape, F1, a)");
      wanted.push_back(s);
    }
    LoadDevices();
    unsigned char bits[XIMaskLen(XI_LASTEVENT)] = {0};
    XISetMask(bits, XI_RawKeyPress);
    XISetMask(bits, XI_HierarchyChanged);
    XIEventMask mask{XIAllDevices, static_cast<int>(sizeof bits), bits};
    XISelectEvents(dpy, root, &mask, 1);
  }
  if (!options.hudText.empty()) CreateHud();
  XSync(dpy, False);
  if (lost) throw DesktopError(kNoDisplay, "the X display went away");
}

void Watcher::Impl::CreateHud() {
  int ev = 0, err = 0;
  if (!XShapeQueryExtension(dpy, &ev, &err))
    throw DesktopError("UNSUPPORTED", "the X server has no SHAPE extension: the HUD cannot be click-through");
  int scr = DefaultScreen(dpy);
  Visual* visual = DefaultVisual(dpy, scr);
  Colormap cmap = DefaultColormap(dpy, scr);
  int depth = DefaultDepth(dpy, scr);

  // Font: any bold sans fontconfig finds (DejaVu Sans on Debian); the core "fixed" font if Xft fails
  // (or libXft is missing).
  const XftApi& xft = Xft();
  XftFont* font = xft.ok ? xft.XftFontOpenName(dpy, scr, "sans-serif:bold:pixelsize=14") : nullptr;
  const auto* text = reinterpret_cast<const FcChar8*>(options.hudText.data());
  int len = static_cast<int>(options.hudText.size());
  XGlyphInfo ext{};
  if (font) xft.XftTextExtentsUtf8(dpy, font, text, len, &ext);
  int textW = font ? ext.xOff : 7 * len;

  Rect mon{0, 0, DisplayWidth(dpy, scr), DisplayHeight(dpy, scr)};
  std::string monName;
  bool primary = false;
  // The monitor the run acts on (its region's centre), else the primary one.
  x11::MonitorAt(dpy, root, options.hudAtX, options.hudAtY, &mon, &monName, &primary);
  const int padX = 22, h = 34, radius = 10;
  int w = std::min(textW + 2 * padX + 18, mon.w);
  int x = mon.x + (mon.w - w) / 2, y = mon.y;

  // The look, rendered once into the window's background pixmap: magenta bar, a darker rim, a white
  // dot ("recording"), white bold text.
  Pixmap bg = XCreatePixmap(dpy, root, w, h, depth);
  GC gc = XCreateGC(dpy, bg, 0, nullptr);
  auto pixel = [&](unsigned long rgb) {
    XColor c{};
    c.red = static_cast<unsigned short>(((rgb >> 16) & 0xff) * 257);
    c.green = static_cast<unsigned short>(((rgb >> 8) & 0xff) * 257);
    c.blue = static_cast<unsigned short>((rgb & 0xff) * 257);
    XAllocColor(dpy, cmap, &c);
    return c.pixel;
  };
  XSetForeground(dpy, gc, pixel(0x7a1248));
  XFillRectangle(dpy, bg, gc, 0, 0, w, h);
  XSetForeground(dpy, gc, pixel(0xb0206a));
  XFillRectangle(dpy, bg, gc, 2, 0, w - 4, h - 2);
  XSetForeground(dpy, gc, pixel(0xffffff));
  XFillArc(dpy, bg, gc, padX - 2, h / 2 - 6, 10, 10, 0, 360 * 64);
  int textX = padX + 18;
  if (font) {
    XftDraw* draw = xft.XftDrawCreate(dpy, bg, visual, cmap);
    XRenderColor white{0xffff, 0xffff, 0xffff, 0xffff};
    XftColor color;
    xft.XftColorAllocValue(dpy, visual, cmap, &white, &color);
    int baseline = (h - 2 - (font->ascent + font->descent)) / 2 + font->ascent;
    xft.XftDrawStringUtf8(draw, &color, font, textX, baseline, text, len);
    xft.XftColorFree(dpy, visual, cmap, &color);
    xft.XftDrawDestroy(draw);
    xft.XftFontClose(dpy, font);
  } else {
    XDrawString(dpy, bg, gc, textX, h / 2 + 5, options.hudText.data(), len);
  }
  XFreeGC(dpy, gc);

  XSetWindowAttributes a{};
  a.background_pixmap = bg;
  a.override_redirect = True;
  a.save_under = True;
  hud = XCreateWindow(dpy, root, x, y, w, h, 0, depth, InputOutput, visual,
                      CWBackPixmap | CWOverrideRedirect | CWSaveUnder, &a);
  XFreePixmap(dpy, bg);  // the window keeps its own reference

  // Never focused (WM_HINTS input = False), named for tools like xwininfo.
  XWMHints hints{};
  hints.flags = InputHint;
  hints.input = False;
  XSetWMHints(dpy, hud, &hints);
  XStoreName(dpy, hud, "Runboard takeover HUD");
  Atom type = XInternAtom(dpy, "_NET_WM_WINDOW_TYPE", False);
  Atom notification = XInternAtom(dpy, "_NET_WM_WINDOW_TYPE_NOTIFICATION", False);
  XChangeProperty(dpy, hud, type, XA_ATOM, 32, PropModeReplace, reinterpret_cast<unsigned char*>(&notification), 1);

  // Click-through: an empty input region. Rounded bottom corners: the bounding region.
  XShapeCombineRectangles(dpy, hud, ShapeInput, 0, 0, nullptr, 0, ShapeSet, Unsorted);
  Pixmap mask = XCreatePixmap(dpy, hud, w, h, 1);
  GC mgc = XCreateGC(dpy, mask, 0, nullptr);
  XSetForeground(dpy, mgc, 0);
  XFillRectangle(dpy, mask, mgc, 0, 0, w, h);
  XSetForeground(dpy, mgc, 1);
  XFillRectangle(dpy, mask, mgc, 0, 0, w, h - radius);
  XFillRectangle(dpy, mask, mgc, radius, h - radius, w - 2 * radius, radius);
  XFillArc(dpy, mask, mgc, 0, h - 2 * radius, 2 * radius, 2 * radius, 180 * 64, 90 * 64);
  XFillArc(dpy, mask, mgc, w - 2 * radius - 1, h - 2 * radius, 2 * radius, 2 * radius, 270 * 64, 90 * 64);
  XShapeCombineMask(dpy, hud, ShapeBounding, 0, 0, mask, ShapeSet);
  XFreeGC(dpy, mgc);
  XFreePixmap(dpy, mask);

  // Stay on top: hear about other top-level windows being mapped or restacked.
  XSelectInput(dpy, root, SubstructureNotifyMask);
  Show(true);
}

void Watcher::Impl::Show(bool visible) {
  if (!hud) return;
  if (visible) XMapRaised(dpy, hud);
  else XUnmapWindow(dpy, hud);
  hudShown = visible;
  XSync(dpy, False);
}

void Watcher::Impl::HandleEvent(XEvent& ev) {
  if (ev.type == MappingNotify) {
    XRefreshKeyboardMapping(&ev.xmapping);
    return;
  }
  if ((ev.type == MapNotify && ev.xmap.window != hud) || (ev.type == ConfigureNotify && ev.xconfigure.window != hud)) {
    // Something may have gone above it. At most 20 raises a second: another always-on-top window
    // doing the same must not turn this into a raise storm (show() raises it again anyway).
    auto now = std::chrono::steady_clock::now();
    if (now - raiseWindowStart > std::chrono::seconds(1)) raiseWindowStart = now, raises = 0;
    if (hudShown && raises < 20) {
      raises++;
      XRaiseWindow(dpy, hud);
    }
    return;
  }
  if (ev.type != GenericEvent || ev.xcookie.extension != xiOpcode) return;
  if (!XGetEventData(dpy, &ev.xcookie)) return;
  if (ev.xcookie.evtype == XI_HierarchyChanged) {
    LoadDevices();
  } else if (ev.xcookie.evtype == XI_RawKeyPress) {
    auto* raw = static_cast<XIRawEvent*>(ev.xcookie.data);
    // With XIAllDevices each press arrives twice: from the master and from the slave. Keep the slave's.
    if (raw->deviceid == raw->sourceid && !(raw->flags & XIKeyRepeat)) {
      KeyEvent k;
      k.keycode = raw->detail;
      k.keysym = XkbKeycodeToKeysym(dpy, static_cast<KeyCode>(raw->detail), 0, 0);
      if (wanted.empty() || std::find(wanted.begin(), wanted.end(), k.keysym) != wanted.end()) {
        const char* name = k.keysym ? XKeysymToString(k.keysym) : nullptr;
        k.key = name ? name : "";
        k.deviceId = raw->sourceid;
        if (!devices.count(raw->sourceid)) LoadDevices();
        auto it = devices.find(raw->sourceid);
        k.device = it == devices.end() ? "?" : it->second.first;
        k.synthetic = it != devices.end() && it->second.second;
        k.time = raw->time;
        if (callbacks.key) callbacks.key(k);
      }
    }
  }
  XFreeEventData(dpy, &ev.xcookie);
}

bool Watcher::Impl::DrainCommands() {
  uint64_t v;
  while (read(wake, &v, sizeof v) > 0) {}
  for (;;) {
    std::pair<bool, std::function<void()>> cmd;
    {
      std::lock_guard<std::mutex> lock(mu);
      if (stopping) return false;
      if (commands.empty()) return true;
      cmd = std::move(commands.front());
      commands.pop_front();
    }
    Show(cmd.first);
    if (cmd.second) cmd.second();
  }
}

void Watcher::Impl::Run() {
  try {
    Open();
  } catch (const DesktopError& e) {
    Fail(e);
    return;
  }
  if (callbacks.ready) callbacks.ready();
  int fd = ConnectionNumber(dpy);
  while (!lost) {
    HandlePendingEvents(dpy, lost, [this](XEvent& ev) { HandleEvent(ev); });
    if (lost) break;
    // Flushing may read: xcb takes in what the server sent while it waits to write, and poll() would
    // not see those bytes again (the recorder's stop waited that way). Nothing is left to write after
    // HandlePendingEvents' last XPending today; this keeps it so whatever is added before the poll.
    if (XEventsQueued(dpy, QueuedAfterFlush) > 0) continue;
    pollfd fds[2] = {{fd, POLLIN, 0}, {wake, POLLIN, 0}};
    if (poll(fds, 2, -1) < 0) continue;  // EINTR
    if (fds[1].revents && !DrainCommands()) break;
    if (fds[0].revents & (POLLHUP | POLLERR)) XPending(dpy);  // lets Xlib notice the lost connection
  }
  if (lost) {
    Fail(DesktopError(kNoDisplay, "the X display went away"));
    return;  // the dead Display is left as is (closing it would touch the dead socket)
  }
  if (hud) XDestroyWindow(dpy, hud);
  x11::CloseDisplay(dpy);
}

Watcher::Watcher(WatcherOptions options, WatcherCallbacks callbacks) : impl_(std::make_shared<Impl>()) {
  impl_->options = std::move(options);
  impl_->callbacks = std::move(callbacks);
  // HUD changes asked for but not carried out still complete (their callers wait for them).
  StartDesktopThread(impl_, [](Impl& impl) {
    std::vector<std::function<void()>> left;
    for (auto& c : impl.commands)
      if (c.second) left.push_back(std::move(c.second));
    impl.commands.clear();
    return left;
  });
}

Watcher::~Watcher() { Stop(); }

bool Watcher::SetHudVisible(bool visible, std::function<void()> done) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  if (!impl_->Accepting()) return false;
  impl_->commands.emplace_back(visible, std::move(done));
  impl_->Wake();
  return true;
}

void Watcher::Stop() { impl_->RequestStop(); }

}  // namespace runboard::desktop
