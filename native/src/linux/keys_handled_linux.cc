// Has the app holding the keyboard focus handled the keys typed so far (keys_handled_linux.h)?
#include "linux/keys_handled_linux.h"

#include <X11/Xatom.h>
#include <X11/Xutil.h>
#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>

#include "common/inputter.h"
#include "linux/atspi_bus.h"
#include "linux/input_util_linux.h"
#include "linux/x11_session.h"

namespace runboard::desktop {
namespace {

// For an app that cannot be asked whether it has read its keys (no _NET_WM_PING): how long keycodes
// typed on stay as they were before they are mapped to other characters.
constexpr int kRemapGraceMs = 250;

// Does the window take _NET_WM_PING (EWMH: the client answers it, in order with its other events)?
bool TakesPing(Display* d, Window w, Atom ping) {
  Atom* protocols = nullptr;
  int n = 0;
  bool yes = false;
  if (XGetWMProtocols(d, w, &protocols, &n)) {
    for (int i = 0; i < n && !yes; i++) yes = protocols[i] == ping;
    XFree(protocols);
  }
  return yes;
}

// The client window of the keyboard focus that answers _NET_WM_PING: the focus itself, an ancestor
// (a focus proxy), or a child (the focus on a window manager's frame); 0 when none.
Window PingableFocus(Display* d, Atom ping) {
  Window focus = 0;
  int revert = 0;
  XGetInputFocus(d, &focus, &revert);
  if (focus == None || focus == PointerRoot) return 0;
  for (Window w = focus; w;) {
    if (TakesPing(d, w, ping)) return w;
    Window root = 0, parent = 0, *kids = nullptr;
    unsigned n = 0;
    if (!XQueryTree(d, w, &root, &parent, &kids, &n)) break;
    if (kids) XFree(kids);
    if (parent == root) break;
    w = parent;
  }
  Window root = 0, parent = 0, *kids = nullptr;
  unsigned n = 0;
  Window found = 0;
  if (XQueryTree(d, focus, &root, &parent, &kids, &n)) {
    for (unsigned i = 0; i < n && !found; i++)
      if (TakesPing(d, kids[i], ping)) found = kids[i];
    if (kids) XFree(kids);
  }
  return found;
}

void IgnoreLost(Display*, void*) {}

// Is the process of window w (its _NET_WM_PID) stopped (SIGSTOP, a debugger)? It answers no ping then.
bool AppStopped(Display* d, Window w) {
  Atom pidAtom = XInternAtom(d, "_NET_WM_PID", False);
  Atom type = 0;
  int format = 0;
  unsigned long n = 0, after = 0;
  unsigned char* data = nullptr;
  long pid = 0;
  if (XGetWindowProperty(d, w, pidAtom, 0, 1, False, XA_CARDINAL, &type, &format, &n, &after, &data) == Success &&
      data && n == 1 && format == 32)
    pid = *reinterpret_cast<long*>(data);
  if (data) XFree(data);
  return pid > 0 && atspi::ProcessStopped(static_cast<int>(pid));
}

}  // namespace

// Waits until the app holding the keyboard focus has read every event the server delivered to it so
// far, the keys typed included: a _NET_WM_PING is sent to it after them (on a connection of its own,
// once this one's requests are processed), and a client reads its events in order, so its answer
// comes once it has read (and translated) those keys. An app that cannot be asked gets kRemapGraceMs.
// With stoppedIsDone, a stopped app is not waited for (what it shows cannot be read until it runs).
void AppReadKeys(Display* d, bool stoppedIsDone) {
  XSync(d, False);  // the keys are processed (delivered to the app's queue) before the ping is sent
  Display* own = nullptr;
  try {
    own = x11::OpenOwnDisplay("to type", IgnoreLost, nullptr);
  } catch (const DesktopError&) {
    Sleep(kRemapGraceMs);
    return;
  }
  Atom ping = XInternAtom(own, "_NET_WM_PING", False);
  Atom protocols = XInternAtom(own, "WM_PROTOCOLS", False);
  Window target = PingableFocus(own, ping);
  if (!target) {
    if (Trace()) std::fprintf(stderr, "type: the focused app takes no _NET_WM_PING: waiting %d ms\n", kRemapGraceMs);
    x11::CloseDisplay(own);
    Sleep(kRemapGraceMs);
    return;
  }
  if (stoppedIsDone && AppStopped(own, target)) {
    if (Trace()) std::fprintf(stderr, "type: the app of window 0x%lx is stopped: not waiting\n", target);
    x11::CloseDisplay(own);
    return;
  }
  Window root = DefaultRootWindow(own);
  XSelectInput(own, root, SubstructureNotifyMask);  // the answer comes back to the root window
  // A window closed or hidden by the keys (ctrl+w, alt+f4) answers no ping: its going ends the wait.
  XSelectInput(own, target, StructureNotifyMask);
  static unsigned long serial = 0;
  const unsigned long stamp = ++serial;  // the answer echoes it: ours, not another pinger's
  XEvent ev{};
  ev.xclient.type = ClientMessage;
  ev.xclient.window = target;
  ev.xclient.message_type = protocols;
  ev.xclient.format = 32;
  ev.xclient.data.l[0] = static_cast<long>(ping);
  ev.xclient.data.l[1] = static_cast<long>(stamp);
  ev.xclient.data.l[2] = static_cast<long>(target);
  XSendEvent(own, target, False, NoEventMask, &ev);
  XFlush(own);
  if (Trace()) std::fprintf(stderr, "type: waiting for window 0x%lx to read its keys\n", target);
  auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(kAppReadLimitMs);
  bool answered = false, gone = false;
  while (!answered && !gone) {
    while (!answered && !gone && XPending(own)) {
      XEvent got;
      XNextEvent(own, &got);
      answered = got.type == ClientMessage && got.xclient.message_type == protocols &&
                 static_cast<Atom>(got.xclient.data.l[0]) == ping &&
                 static_cast<unsigned long>(got.xclient.data.l[1]) == stamp &&
                 static_cast<Window>(got.xclient.data.l[2]) == target;
      gone = (got.type == DestroyNotify && got.xdestroywindow.window == target) ||
             (got.type == UnmapNotify && got.xunmap.window == target);
    }
    if (gone) break;
    if (answered) break;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    pollfd p{ConnectionNumber(own), POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(std::min<long long>(left.count(), 100))) < 0 && errno != EINTR) break;
  }
  if (Trace())
    std::fprintf(stderr, "type: window 0x%lx %s\n", target,
                 answered ? "has read its keys"
                 : gone   ? "went away"
                          : "did not answer: typing on");
  x11::CloseDisplay(own);
}

// Does the keyboard focus send keys to some window (a window, or the one under the pointer)? With none,
// or the root window, no app has keys to handle and nothing is waited for.
bool KeysGoToAWindow(Display* d) {
  Window focus = None;
  int revert = 0;
  XGetInputFocus(d, &focus, &revert);
  if (focus != PointerRoot) return focus != None && focus != DefaultRootWindow(d);
  Window root = 0, child = 0;
  int rx, ry, wx, wy;
  unsigned mask = 0;
  return XQueryPointer(d, DefaultRootWindow(d), &root, &child, &rx, &ry, &wx, &wy, &mask) && child != None;
}

}  // namespace runboard::desktop
