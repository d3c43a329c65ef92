// Kept trees for long-lived processes (observe, serve): the first read of a window loads its tree
// whole; with KeepTrees on, later reads of the same window re-read only the objects that AT-SPI
// events (atspi_events.h) named since: children-changed, property-change, state-changed. Extents,
// text and values are still read at every read (scrolling and moving a window send no event).
// Internal to the Linux backend; desktop thread only.
#pragma once
#include "common/desktop_types.h"
#include "linux/atspi_tree.h"

namespace runboard::desktop::atspi {

void KeepTrees(bool on);

struct TreeUse {
  bool kept = false;  // served from a kept tree
  int refreshed = 0;  // objects re-read for the events
};

// The window's tree: with KeepTrees off, loaded whole into `scratch`; on, the kept one brought up to
// date (or loaded whole and kept).
WindowTree& WindowTreeFor(const WindowQuery& q, bool expandHidden, WindowTree& scratch, TreeUse* use);

}  // namespace runboard::desktop::atspi
