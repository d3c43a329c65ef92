// Has the app holding the keyboard focus handled the keys typed so far? (decisions 110, 119)
#pragma once

#include <X11/Xlib.h>

namespace runboard::desktop {

// Waits until the app holding the keyboard focus has read every event the server delivered to it so far,
// the keys typed included (a _NET_WM_PING answered after them). With stoppedIsDone, a stopped app is not
// waited for. An app that takes no ping gets a grace of 250 ms, one that does not answer 20 s; a window
// that goes (closed or unmapped by the keys) ends the wait.
void AppReadKeys(Display* d, bool stoppedIsDone = false);

// Does the keyboard focus send keys to some window (a window, or the one under the pointer)?
bool KeysGoToAWindow(Display* d);

}  // namespace runboard::desktop
