// Monitors on Linux: RandR 1.5 monitors (XRRGetMonitors), which is what toolkits and window managers use
// to place windows; it covers both real outputs and monitors a user defined with `xrandr --setmonitor`.
#include <X11/extensions/Xrandr.h>

#include "common/monitors.h"
#include "linux/x11_session.h"

namespace runboard::desktop {

std::vector<MonitorInfo> ListMonitors() {
  auto& s = x11::Session::Get();
  std::vector<MonitorInfo> out;
  int event = 0, error = 0, major = 0, minor = 0;
  if (XRRQueryExtension(s.dpy(), &event, &error) && XRRQueryVersion(s.dpy(), &major, &minor) &&
      (major > 1 || (major == 1 && minor >= 5))) {
    int n = 0;
    XRRMonitorInfo* mons = XRRGetMonitors(s.dpy(), s.root(), True, &n);
    for (int i = 0; mons && i < n; i++) {
      MonitorInfo m;
      char* name = mons[i].name ? XGetAtomName(s.dpy(), mons[i].name) : nullptr;
      m.name = name ? name : std::to_string(i);
      if (name) XFree(name);
      m.bounds = {mons[i].x, mons[i].y, mons[i].width, mons[i].height};
      m.primary = mons[i].primary;
      out.push_back(m);
    }
    if (mons) XRRFreeMonitors(mons);
  }
  if (out.empty()) {
    XWindowAttributes a{};
    XGetWindowAttributes(s.dpy(), s.root(), &a);
    out.push_back({"screen", {0, 0, a.width, a.height}, true});
  }
  return out;
}

}  // namespace runboard::desktop
