// AT-SPI events for the kept trees (tree_cache.cc): a thread of its own, on a connection of its own to
// the accessibility bus, asks the registry for the events that change a tree (children-changed,
// property-change, state-changed) and notes, per app, the objects they name. Only long-lived
// processes start it (observe, serve: desktop.keepTrees): while it is registered every app on the bus
// sends those events.
// Internal to the Linux backend.
#pragma once
#include <string>
#include <unordered_set>

namespace runboard::desktop::atspi {

struct Dirty {
  std::unordered_set<std::string> children;  // objects whose children changed
  std::unordered_set<std::string> info;      // objects whose name, description, role or states changed
  bool all = false;                          // too many to note, or the listener restarted: load again
};

class Events {
 public:
  // Started on first use; nullptr when the bus cannot be reached.
  static Events* Start(const std::string& busAddress);
  static void StopAll();
  // Waits until every event `app` (its unique bus name) sent before now has been noted (a Ping to it
  // through the bus: its reply comes after them), then hands over what was noted for it since the last
  // Take. False when the listener failed or the app did not answer: the caller loads the tree again.
  bool Take(const std::string& app, Dirty& out, int timeoutMs = 3000);

  struct State;

 private:
  explicit Events(State* s) : s_(s) {}
  State* s_;
};

}  // namespace runboard::desktop::atspi
