#include "linux/tree_cache.h"

#include <atspi/atspi.h>

#include <strings.h>

#include <algorithm>
#include <cstdlib>
#include <unordered_map>
#include <unordered_set>

#include "linux/atspi_events.h"
#include "linux/input_util_linux.h"

namespace runboard::desktop::atspi {
namespace {

constexpr const char* kAppRoot = "/org/a11y/atspi/accessible/root";
constexpr size_t kMaxKept = 4;  // windows

struct Kept {
  uint64_t windowId = 0;
  std::string app;  // unique bus name
  bool expandHidden = false;
  uint64_t used = 0;
  WindowTree tree;
};

bool g_keep = false;
std::vector<Kept> g_kept;
uint64_t g_clock = 0;

// Toolkits whose events were seen to name every change a read would see (tests/desktop,
// tree-cache): GTK. Chromium 156 sent none for its page content (a page filled or changed after the
// first read stayed as it was), so its trees, and those of toolkits not seen yet, are read whole.
bool EventsFaithful(const WindowTree& t) {
  const std::string& toolkit = ToolkitName(t.peer, t.app.busName);
  bool faithful = strcasecmp(toolkit.c_str(), "gtk") == 0;
  if (Trace())
    std::fprintf(stderr, "kept trees: toolkit \"%s\": %s\n", toolkit.c_str(), faithful ? "kept" : "read whole");
  return faithful;
}

// Re-reads what the events named. False when the tree is better loaded again (the window's node is
// gone, or removed objects piled up).
bool Refresh(WindowTree& t, const Dirty& d, bool expandHidden, int* refreshed) {
  if (d.all || t.root < 0) return false;
  auto& bus = Bus::Get();
  AskInterfacesFor(t);
  auto& nodes = t.nodes;
  auto& byPath = t.byPath;
  // Subtrees walked because the cache lacks them (tree views) are walked again: taken out here, so that
  // their objects come back as new ones and are read whole.
  std::vector<int> info, parents;
  for (auto& root : t.walkRoots) {
    auto r = byPath.find(root);
    if (r == byPath.end()) continue;
    info.push_back(r->second);
    std::vector<int> stack(nodes[r->second].children);
    while (!stack.empty()) {
      int i = stack.back();
      stack.pop_back();
      byPath.erase(nodes[i].path);
      nodes[i].parent.clear();
      for (int ch : nodes[i].children) stack.push_back(ch);
    }
  }
  size_t fromEvents = 0;
  for (auto& p : d.children) {
    auto it = byPath.find(p);
    if (it != byPath.end()) parents.push_back(it->second);
  }
  size_t rewalk = info.size();
  for (auto& p : d.info) {
    auto it = byPath.find(p);
    if (it != byPath.end()) info.push_back(it->second);
  }
  for (auto& p : t.recheck) {  // shown but not yet showing (GTK maps a widget after saying it is visible)
    auto it = byPath.find(p);
    if (it != byPath.end() && !d.info.count(p)) info.push_back(it->second);
  }
  for (int i : parents)  // their child count changed too
    if (!d.info.count(nodes[i].path)) info.push_back(i);
  fromEvents = info.size() - rewalk;
  if (!info.empty()) {
    FetchInfo(bus, t.peer, nodes, info, false);
    for (int i : info) nodes[i].actionsKnown = false;
  }
  t.recheck.clear();
  for (size_t k = rewalk; k < info.size(); k++) {
    const Node& n = nodes[info[k]];
    if (HasState(n, ATSPI_STATE_VISIBLE) && !HasState(n, ATSPI_STATE_SHOWING)) t.recheck.insert(n.path);
  }
  std::vector<int> fresh;
  if (!parents.empty()) {
    std::vector<wire::Call> calls;
    calls.reserve(parents.size());
    for (int i : parents) calls.push_back({nodes[i].path, "org.a11y.atspi.Accessible", "GetChildren", "", ""});
    std::vector<wire::Reply> replies;
    wire::Conn& c = bus.WireCallMany(t.peer, calls, replies);
    for (size_t k = 0; k < parents.size(); k++) {
      if (!replies[k].ok) continue;  // gone: its own parent's event takes it out
      const std::string parent = nodes[parents[k]].path;
      std::unordered_set<std::string> now;
      int index = 0;
      wire::Reader b = c.Body(replies[k]);
      for (size_t end = b.Array(8); b.Before(end);) {  // a(so)
        b.Align(8);
        b.Str();
        std::string path(b.Str());
        if (!b.ok()) break;
        now.insert(path);
        PlaceChild(nodes, byPath, std::move(path), parent, index++, fresh);
      }
      for (int ch : nodes[parents[k]].children)  // (the lists of the last LinkChildren)
        if (nodes[ch].parent == parent && !now.count(nodes[ch].path)) nodes[ch].parent.clear();
    }
  }
  if (!fresh.empty()) FetchInfo(bus, t.peer, nodes, fresh, false);
  LinkChildren(nodes, byPath);
  // The new objects' own children, what became showing, and the walked subtrees again, level by level
  // as a first read does.
  ExpandUncached(bus, t.peer, nodes, byPath, t.root, expandHidden);
  size_t before = t.byId.size();
  AssignIds(t);
  *refreshed = static_cast<int>(fromEvents + fresh.size());  // what events named, and new children
  // The window's node must still hang from the app's root; objects taken out stay in `nodes` (never
  // visited) until they outnumber the tree, and then the tree is loaded again.
  auto root = byPath.find(kAppRoot);
  if (root == byPath.end()) return false;
  for (const Node* n = &nodes[t.root]; n != &nodes[root->second];) {
    auto up = byPath.find(n->parent);
    if (n->parent.empty() || up == byPath.end()) return false;
    n = &nodes[up->second];
  }
  if (nodes.size() > 2 * t.byId.size() + 1000) return false;
  if (Trace())
    std::fprintf(stderr, "kept tree: %zu events, %zu re-read, %zu new, %zu -> %zu nodes\n",
                 d.children.size() + d.info.size(), info.size(), fresh.size(), before, t.byId.size());
  return true;
}

}  // namespace

void KeepTrees(bool on) {
  g_keep = on;
  if (!on) {
    g_kept.clear();
    Events::StopAll();
  }
}

WindowTree& WindowTreeFor(const WindowQuery& q, bool expandHidden, WindowTree& scratch, TreeUse* use) {
  if (!g_keep) {
    scratch = FindWindow(q);
    LoadTree(scratch, expandHidden);
    return scratch;
  }
  WindowTree found = FindWindow(q);
  if (!EventsFaithful(found)) {
    scratch = std::move(found);
    LoadTree(scratch, expandHidden);
    return scratch;
  }
  Events* events = Events::Start(Bus::Get().address());
  Dirty dirty;
  // Every event the app sent before now is noted (and before a first load, forgotten: the load sees it).
  bool synced = events && events->Take(found.app.busName, dirty);
  Kept* k = nullptr;
  for (auto& e : g_kept)
    if (e.windowId == found.window.id && e.app == found.app.busName && e.expandHidden == expandHidden) k = &e;
  if (k && synced && k->tree.eventsCover) {
    k->used = ++g_clock;
    k->tree.window = found.window;  // its title, bounds and focus as X says now
    k->tree.peer = found.peer;
    k->tree.scale = found.scale;
    bool fresh = false;
    try {
      fresh = Refresh(k->tree, dirty, expandHidden, &use->refreshed);
    } catch (...) {  // half re-read: not kept
      g_kept.erase(g_kept.begin() + (k - g_kept.data()));
      throw;
    }
    if (fresh) {
      use->kept = true;
      return k->tree;
    }
  }
  if (!synced) {  // no events to keep it by
    scratch = std::move(found);
    LoadTree(scratch, expandHidden);
    return scratch;
  }
  LoadTree(found, expandHidden);  // (a failure keeps nothing)
  if (!found.eventsCover) {       // walked parts that send no events: read whole every time
    if (k) g_kept.erase(g_kept.begin() + (k - g_kept.data()));
    scratch = std::move(found);
    return scratch;
  }
  if (!k) {
    if (g_kept.size() >= kMaxKept)
      g_kept.erase(
          std::min_element(g_kept.begin(), g_kept.end(), [](const Kept& a, const Kept& b) { return a.used < b.used; }));
    g_kept.emplace_back();
    k = &g_kept.back();
  }
  k->windowId = found.window.id;
  k->app = found.app.busName;
  k->expandHidden = expandHidden;
  k->used = ++g_clock;
  k->tree = std::move(found);
  return k->tree;
}

}  // namespace runboard::desktop::atspi
