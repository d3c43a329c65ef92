// The X11 connection the desktop thread uses for windows (EWMH), input (XTest) and capture (XShm).
// Internal to the Linux backend; opened lazily, on the desktop thread, and kept for the process.
#pragma once
#include <X11/Xlib.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "common/desktop_types.h"
#include "common/monitors.h"

namespace runboard::desktop::x11 {

struct XWin {
  Window id = 0;
  int pid = 0;
  std::string title, instance, cls;
  std::string a11yName;  // the accessibility app name, filled in by the reader when known
  Rect outer;            // frame included
  Rect client;           // the client window in root coordinates
  bool active = false;
  int stacking = -1;  // position in _NET_CLIENT_LIST_STACKING (higher is nearer the top)
};

class Session {
 public:
  static Session& Get();  // throws DesktopError(NO_DISPLAY)
  Display* dpy() const { return dpy_; }
  Window root() const { return root_; }
  int screenWidth() const { return width_; }
  int screenHeight() const { return height_; }
  Atom atom(const char* name);

  std::vector<unsigned long> Cardinals(Window w, const char* prop, Atom type);
  std::string Text(Window w, const char* prop);  // UTF8_STRING or STRING property
  std::string Title(Window w);
  Window ActiveWindow();
  std::vector<XWin> ListWindows();
  Rect ClientRect(Window w);

 private:
  Session() = default;
  Display* dpy_ = nullptr;
  Window root_ = 0;
  int width_ = 0, height_ = 0;
};

// Xlib's process-wide handlers, set once: X errors are ignored (windows come and go), and a lost
// connection does not exit the process (each Display also sets an exit handler of its own).
void InstallProcessHandlers();

// The monitor (RandR 1.5) that contains a point, else the primary one; false when RandR has none.
// RandR 1.5 monitors in the server's order (empty without RandR 1.5).
std::vector<MonitorInfo> Monitors(Display* dpy, Window root);
// The monitor holding (x, y), else the primary one, else the first.
bool MonitorAt(Display* dpy, Window root, int x, int y, Rect* bounds, std::string* name, bool* primary);

// A Display of a thread's own (watcher, recorder) on $DISPLAY; a lost connection calls `onLost`
// instead of exiting. `purpose` completes the errors ("to watch", "to record").
Display* OpenOwnDisplay(const char* purpose, void (*onLost)(Display*, void*), void* data);
// XInput 2.2 on the display: its major opcode; throws UNSUPPORTED, saying what `needed` needs it.
int RequireXInput2(Display* dpy, const char* needed);
// XCloseDisplay for a thread's own Display, never at the same time as another thread's RequireXInput2
// (libXi's process-wide record is not thread-safe: see x11_session.cc).
void CloseDisplay(Display* dpy);

// XInput 2 devices by id: name, and whether it is an XTest device (the server's synthetic-input slave:
// what XTest injects, the addon's own input or xdotool's, comes from it; a person's from the others).
std::map<int, std::pair<std::string, bool>> InputDevices(Display* dpy);

// Windows matching a query, best first: the active one, then top-most in stacking order.
std::vector<XWin> MatchWindows(const std::vector<XWin>& all, const WindowQuery& q);
bool ContainsFold(const std::string& haystack, const std::string& needle);

}  // namespace runboard::desktop::x11
