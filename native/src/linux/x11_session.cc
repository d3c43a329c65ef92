#include "linux/x11_session.h"

#include <X11/Xatom.h>
#include <X11/Xutil.h>
#include <X11/extensions/XInput2.h>
#include <X11/extensions/Xrandr.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_map>

namespace runboard::desktop::x11 {
namespace {

// Windows come and go while we read them; a BadWindow must not abort the process.
int IgnoreXErrors(Display*, XErrorEvent*) { return 0; }

// A lost X connection (the display went away) must not end the process either, which is what Xlib
// does by default: mark it, and open a new one on the next call.
bool g_connectionLost = false;
int NoteIOError(Display*) { return 0; }
void NoteIOErrorExit(Display*, void*) { g_connectionLost = true; }

std::unordered_map<std::string, Atom>& AtomCache() {
  static std::unordered_map<std::string, Atom> cache;
  return cache;
}

}  // namespace

void InstallProcessHandlers() {
  static std::once_flag once;
  std::call_once(once, [] {
    XSetErrorHandler(IgnoreXErrors);
    XSetIOErrorHandler(NoteIOError);
  });
}

Session& Session::Get() {
  static Session s;
  if (g_connectionLost) {  // the old Display is unusable; it is left as is (closing it would touch the dead socket)
    g_connectionLost = false;
    s.dpy_ = nullptr;
    AtomCache().clear();
  }
  if (!s.dpy_) {
    const char* name = std::getenv("DISPLAY");
    if (!name || !*name) throw DesktopError(kNoDisplay, "DISPLAY is not set: there is no X display to use");
    Display* d = XOpenDisplay(name);
    if (!d) throw DesktopError(kNoDisplay, std::string("cannot open X display ") + name);
    InstallProcessHandlers();
    XSetIOErrorExitHandler(d, NoteIOErrorExit, nullptr);
    s.dpy_ = d;
    s.root_ = DefaultRootWindow(d);
    s.width_ = DisplayWidth(d, DefaultScreen(d));
    s.height_ = DisplayHeight(d, DefaultScreen(d));
  }
  return s;
}

Atom Session::atom(const char* name) {
  auto& cache = AtomCache();
  auto it = cache.find(name);
  if (it != cache.end()) return it->second;
  Atom a = XInternAtom(dpy_, name, False);
  cache.emplace(name, a);
  return a;
}

std::vector<unsigned long> Session::Cardinals(Window w, const char* prop, Atom type) {
  std::vector<unsigned long> out;
  Atom actual;
  int format;
  unsigned long n = 0, after = 0;
  unsigned char* data = nullptr;
  if (XGetWindowProperty(dpy_, w, atom(prop), 0, 1 << 16, False, type, &actual, &format, &n, &after, &data) ==
          Success &&
      data) {
    if (format == 32) {
      auto* v = reinterpret_cast<unsigned long*>(data);  // Xlib returns 32-bit items as longs
      out.assign(v, v + n);
    }
    XFree(data);
  }
  return out;
}

std::string Session::Text(Window w, const char* prop) {
  std::string out;
  Atom actual;
  int format;
  unsigned long n = 0, after = 0;
  unsigned char* data = nullptr;
  if (XGetWindowProperty(dpy_, w, atom(prop), 0, 1 << 16, False, AnyPropertyType, &actual, &format, &n, &after,
                         &data) == Success &&
      data) {
    if (format == 8) out.assign(reinterpret_cast<char*>(data), n);
    XFree(data);
  }
  return out;
}

std::string Session::Title(Window w) {
  std::string t = Text(w, "_NET_WM_NAME");
  return t.empty() ? Text(w, "WM_NAME") : t;
}

Window Session::ActiveWindow() {
  auto v = Cardinals(root_, "_NET_ACTIVE_WINDOW", XA_WINDOW);
  return v.empty() ? 0 : v[0];
}

Rect Session::ClientRect(Window w) {
  Window child, rootRet;
  int x = 0, y = 0, gx, gy;
  unsigned int width = 0, height = 0, border, depth;
  if (!XGetGeometry(dpy_, w, &rootRet, &gx, &gy, &width, &height, &border, &depth)) return {};
  XTranslateCoordinates(dpy_, w, root_, 0, 0, &x, &y, &child);
  return {x, y, static_cast<int>(width), static_cast<int>(height)};
}

std::vector<XWin> Session::ListWindows() {
  std::vector<XWin> out;
  auto list = Cardinals(root_, "_NET_CLIENT_LIST", XA_WINDOW);
  auto stacking = Cardinals(root_, "_NET_CLIENT_LIST_STACKING", XA_WINDOW);
  Window active = ActiveWindow();
  for (unsigned long id : list) {
    XWin w;
    w.id = id;
    auto pid = Cardinals(id, "_NET_WM_PID", XA_CARDINAL);
    w.pid = pid.empty() ? 0 : static_cast<int>(pid[0]);
    w.title = Title(id);
    XClassHint hint{};
    if (XGetClassHint(dpy_, id, &hint)) {
      if (hint.res_name) w.instance = hint.res_name, XFree(hint.res_name);
      if (hint.res_class) w.cls = hint.res_class, XFree(hint.res_class);
    }
    w.client = ClientRect(id);
    w.outer = w.client;
    auto ext = Cardinals(id, "_NET_FRAME_EXTENTS", XA_CARDINAL);  // left, right, top, bottom
    if (ext.size() == 4) {
      w.outer.x -= static_cast<int>(ext[0]);
      w.outer.y -= static_cast<int>(ext[2]);
      w.outer.w += static_cast<int>(ext[0] + ext[1]);
      w.outer.h += static_cast<int>(ext[2] + ext[3]);
    }
    w.active = id == active;
    auto it = std::find(stacking.begin(), stacking.end(), id);
    w.stacking = it == stacking.end() ? -1 : static_cast<int>(it - stacking.begin());
    out.push_back(std::move(w));
  }
  return out;
}

std::vector<MonitorInfo> Monitors(Display* dpy, Window root) {
  std::vector<MonitorInfo> out;
  int ev = 0, err = 0, major = 0, minor = 0, n = 0;
  if (!XRRQueryExtension(dpy, &ev, &err) || !XRRQueryVersion(dpy, &major, &minor)) return out;
  if (major < 1 || (major == 1 && minor < 5)) return out;  // no RandR 1.5 monitors
  XRRMonitorInfo* mons = XRRGetMonitors(dpy, root, True, &n);
  for (int i = 0; mons && i < n; i++) {
    MonitorInfo m;
    char* name = mons[i].name ? XGetAtomName(dpy, mons[i].name) : nullptr;
    m.name = name ? name : std::to_string(i);
    if (name) XFree(name);
    m.bounds = {mons[i].x, mons[i].y, mons[i].width, mons[i].height};
    m.primary = mons[i].primary;
    out.push_back(m);
  }
  if (mons) XRRFreeMonitors(mons);
  return out;
}

bool MonitorAt(Display* dpy, Window root, int x, int y, Rect* bounds, std::string* name, bool* primary) {
  auto mons = Monitors(dpy, root);
  auto inside = [&](const MonitorInfo& m) {
    return x >= m.bounds.x && y >= m.bounds.y && x < m.bounds.x + m.bounds.w && y < m.bounds.y + m.bounds.h;
  };
  const MonitorInfo* pick = nullptr;
  for (const auto& m : mons)
    if (!pick && inside(m)) pick = &m;
  for (const auto& m : mons)
    if (!pick && m.primary) pick = &m;
  if (!pick && !mons.empty()) pick = &mons[0];
  if (!pick) return false;
  *bounds = pick->bounds;
  *name = pick->name;
  *primary = pick->primary;
  return true;
}

bool ContainsFold(const std::string& haystack, const std::string& needle) {
  if (needle.empty()) return true;
  auto it = std::search(haystack.begin(), haystack.end(), needle.begin(), needle.end(), [](char a, char b) {
    return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
  });
  return it != haystack.end();
}

std::vector<XWin> MatchWindows(const std::vector<XWin>& all, const WindowQuery& q) {
  std::vector<XWin> out;
  for (const auto& w : all) {
    if (q.windowId && w.id != q.windowId) continue;
    if (q.pid && w.pid != q.pid) continue;
    if (!q.title.empty() && !ContainsFold(w.title, q.title)) continue;
    if (!q.app.empty() && !ContainsFold(w.cls, q.app) && !ContainsFold(w.instance, q.app) &&
        !ContainsFold(w.a11yName, q.app))
      continue;
    out.push_back(w);
  }
  std::stable_sort(out.begin(), out.end(), [](const XWin& a, const XWin& b) {
    if (a.active != b.active) return a.active;
    return a.stacking > b.stacking;
  });
  return out;
}

namespace {

// The XTest slaves have the boolean device property "XTEST Device" (set by the server); the name is
// the fallback.
bool IsXTestDevice(Display* d, int id, const std::string& name) {
  Atom prop = XInternAtom(d, "XTEST Device", True);
  if (prop != None) {
    Atom type = None;
    int format = 0;
    unsigned long n = 0, after = 0;
    unsigned char* data = nullptr;
    if (XIGetProperty(d, id, prop, 0, 1, False, AnyPropertyType, &type, &format, &n, &after, &data) == Success &&
        data) {
      bool yes = n > 0 && format == 8 && data[0] != 0;
      XFree(data);
      return yes;
    }
  }
  return name.find("XTEST") != std::string::npos;
}

}  // namespace

Display* OpenOwnDisplay(const char* purpose, void (*onLost)(Display*, void*), void* data) {
  const char* name = std::getenv("DISPLAY");
  if (!name || !*name)
    throw DesktopError(kNoDisplay, std::string("DISPLAY is not set: there is no X display ") + purpose);
  InstallProcessHandlers();
  Display* dpy = XOpenDisplay(name);
  if (!dpy) throw DesktopError(kNoDisplay, std::string("cannot open X display ") + name);
  XSetIOErrorExitHandler(dpy, onLost, data);
  return dpy;
}

namespace {
// libXi keeps one record per process of the displays that use XInput and frees it, with no lock, when
// the last of them closes (XInputClose), while another thread's first XInput call on its own display
// may be reading it: a watcher starting as another stopped crashed in XextAddDisplay with that record
// gone (a core dump showed it NULL). Opening XInput on a display and closing such a display are
// serialised here; a display that keeps XInput open keeps the record alive for everyone else.
std::mutex& XInputLock() {
  static std::mutex m;
  return m;
}
}  // namespace

void CloseDisplay(Display* dpy) {
  std::lock_guard<std::mutex> hold(XInputLock());
  XCloseDisplay(dpy);
}

int RequireXInput2(Display* dpy, const char* needed) {
  std::lock_guard<std::mutex> hold(XInputLock());
  int opcode = 0, ev = 0, err = 0;
  if (!XQueryExtension(dpy, "XInputExtension", &opcode, &ev, &err))
    throw DesktopError("UNSUPPORTED", std::string("the X server has no XInput extension: ") + needed);
  int major = 2, minor = 2;
  if (XIQueryVersion(dpy, &major, &minor) != Success)
    throw DesktopError("UNSUPPORTED",
                       std::string("the X server has no XInput 2 (2.2 or later is needed ") + needed + ")");
  return opcode;
}

std::map<int, std::pair<std::string, bool>> InputDevices(Display* dpy) {
  std::map<int, std::pair<std::string, bool>> devices;
  int n = 0;
  XIDeviceInfo* info = XIQueryDevice(dpy, XIAllDevices, &n);
  for (int i = 0; i < n; i++) {
    std::string name = info[i].name ? info[i].name : "";
    devices[info[i].deviceid] = {name, IsXTestDevice(dpy, info[i].deviceid, name)};
  }
  if (info) XIFreeDeviceInfo(info);
  return devices;
}

}  // namespace runboard::desktop::x11
