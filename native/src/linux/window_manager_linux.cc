// Window manager on Linux: EWMH _NET_ACTIVE_WINDOW (the WM focuses and raises), then wait until the
// WM reports the window active (usually < 2 ms).
#include <X11/Xatom.h>

#include <chrono>
#include <thread>

#include "common/window_manager.h"
#include "linux/atspi_tree.h"

namespace runboard::desktop {

WindowInfo FocusWindow(const WindowQuery& q) {
  auto& s = x11::Session::Get();
  auto matches = x11::MatchWindows(atspi::WindowsWithApps(), q);
  if (matches.empty()) throw DesktopError(kAppNotFound, "no window matches the query");
  const auto& w = matches[0];
  XEvent ev{};
  ev.xclient.type = ClientMessage;
  ev.xclient.window = w.id;
  ev.xclient.message_type = s.atom("_NET_ACTIVE_WINDOW");
  ev.xclient.format = 32;
  ev.xclient.data.l[0] = 2;  // source: a pager (a direct user request), which WMs honour
  ev.xclient.data.l[1] = CurrentTime;
  XSendEvent(s.dpy(), s.root(), False, SubstructureRedirectMask | SubstructureNotifyMask, &ev);
  XRaiseWindow(s.dpy(), w.id);
  XSync(s.dpy(), False);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (s.ActiveWindow() != w.id) {
    if (std::chrono::steady_clock::now() > deadline)
      throw DesktopError(kActionFailed, "the window manager did not activate \"" + w.title + "\"");
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  WindowInfo info;
  info.id = w.id;
  info.pid = w.pid;
  info.app = !w.a11yName.empty() ? w.a11yName : w.cls;
  info.appClass = w.cls;
  info.title = w.title;
  info.bounds = w.outer;
  info.focused = true;
  return info;
}

}  // namespace runboard::desktop
