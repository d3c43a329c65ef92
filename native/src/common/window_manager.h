// Window manager capability: bring a window to the front and give it the keyboard focus.
#pragma once
#include "common/desktop_types.h"

namespace runboard::desktop {

// Focuses and raises the best match (the active one if it matches, else the top-most); returns it.
WindowInfo FocusWindow(const WindowQuery& target);

}  // namespace runboard::desktop
