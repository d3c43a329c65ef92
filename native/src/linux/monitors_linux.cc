// Monitors on Linux: RandR 1.5 monitors (XRRGetMonitors), which is what toolkits and window managers use
// to place windows; it covers both real outputs and monitors a user defined with `xrandr --setmonitor`.
#include "common/monitors.h"
#include "linux/x11_session.h"

namespace runboard::desktop {

std::vector<MonitorInfo> ListMonitors() {
  auto& s = x11::Session::Get();
  auto out = x11::Monitors(s.dpy(), s.root());
  if (out.empty()) {
    XWindowAttributes a{};
    XGetWindowAttributes(s.dpy(), s.root(), &a);
    out.push_back({"screen", {0, 0, a.width, a.height}, true});
  }
  return out;
}

}  // namespace runboard::desktop
