// Monitors: the rectangles of the screen that are shown on a physical (or virtual) output.
#pragma once
#include <string>
#include <vector>

#include "common/desktop_types.h"

namespace runboard::desktop {

struct MonitorInfo {
  std::string name;  // the output's name (e.g. "DP-1"), or a number when the server names none
  Rect bounds;       // physical pixels in root coordinates
  bool primary = false;
};

// The monitors in the server's order (the primary one flagged); one covering the whole screen when the
// server reports none.
std::vector<MonitorInfo> ListMonitors();

}  // namespace runboard::desktop
