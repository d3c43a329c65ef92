// Reader on Linux: windows from X11/EWMH, trees from AT-SPI in few pipelined round trips.
#include <atspi/atspi.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <tuple>

#include "common/reader.h"
#include "linux/atspi_tree.h"
#include "linux/input_util_linux.h"
#include "linux/tree_cache.h"

namespace runboard::desktop {
namespace {

using atspi::HasState;
using atspi::Node;

WindowInfo ToInfo(const x11::XWin& w) {
  WindowInfo info;
  info.id = w.id;
  info.pid = w.pid;
  info.app = !w.a11yName.empty() ? w.a11yName : !w.cls.empty() ? w.cls : w.instance;
  info.appClass = w.cls;
  info.title = w.title;
  info.bounds = w.outer;
  info.focused = w.active;
  return info;
}

bool Intersects(const Rect& a, const Rect& b) {
  return a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h;
}

Rect Intersect(const Rect& a, const Rect& b) {
  int x1 = std::max(a.x, b.x), y1 = std::max(a.y, b.y);
  int x2 = std::min(a.x + a.w, b.x + b.w), y2 = std::min(a.y + a.h, b.y + b.h);
  return {x1, y1, std::max(0, x2 - x1), std::max(0, y2 - y1)};
}

uint32_t MapStates(const Node& n) {
  uint32_t s = 0;
  if (HasState(n, ATSPI_STATE_FOCUSED)) s |= kFocused;
  if (HasState(n, ATSPI_STATE_ENABLED) || HasState(n, ATSPI_STATE_SENSITIVE)) s |= kEnabled;
  if (HasState(n, ATSPI_STATE_SELECTED)) s |= kSelected;
  if (HasState(n, ATSPI_STATE_SHOWING) && HasState(n, ATSPI_STATE_VISIBLE)) s |= kVisible;
  if (HasState(n, ATSPI_STATE_CHECKED) || HasState(n, ATSPI_STATE_PRESSED)) s |= kChecked;
  if (HasState(n, ATSPI_STATE_EDITABLE)) s |= kEditable;
  if (HasState(n, ATSPI_STATE_FOCUSABLE)) s |= kFocusable;
  if (HasState(n, ATSPI_STATE_ACTIVE)) s |= kActive;
  if (HasState(n, ATSPI_STATE_EXPANDED)) s |= kExpanded;
  if (HasState(n, ATSPI_STATE_MULTI_LINE)) s |= kMultiLine;
  return s;
}

bool IsCheckable(uint32_t role) {
  return role == ATSPI_ROLE_CHECK_BOX || role == ATSPI_ROLE_RADIO_BUTTON || role == ATSPI_ROLE_TOGGLE_BUTTON ||
         role == ATSPI_ROLE_CHECK_MENU_ITEM || role == ATSPI_ROLE_RADIO_MENU_ITEM;
}

bool IsClip(uint32_t role) {
  return role == ATSPI_ROLE_SCROLL_PANE || role == ATSPI_ROLE_VIEWPORT || role == ATSPI_ROLE_FRAME ||
         role == ATSPI_ROLE_WINDOW || role == ATSPI_ROLE_DIALOG;
}

// Action names are read only where an agent may act: focusable objects and interactive roles. Web
// engines give every node actions (Chromium: showContextMenu, doDefault, clickAncestor), and asking
// each of hundreds of nodes costs more than the rest of the read.
bool WantsActions(const Node& n) {
  if (HasState(n, ATSPI_STATE_FOCUSABLE)) return true;
  switch (n.role) {
    case ATSPI_ROLE_PUSH_BUTTON:
    case ATSPI_ROLE_TOGGLE_BUTTON:
    case ATSPI_ROLE_CHECK_BOX:
    case ATSPI_ROLE_RADIO_BUTTON:
    case ATSPI_ROLE_LINK:
    case ATSPI_ROLE_MENU_ITEM:
    case ATSPI_ROLE_CHECK_MENU_ITEM:
    case ATSPI_ROLE_RADIO_MENU_ITEM:
    case ATSPI_ROLE_MENU:
    case ATSPI_ROLE_PAGE_TAB:
    case ATSPI_ROLE_COMBO_BOX:
    case ATSPI_ROLE_SLIDER:
    case ATSPI_ROLE_SPIN_BUTTON:
    case ATSPI_ROLE_TABLE_CELL:
    case ATSPI_ROLE_LIST_ITEM:
    case ATSPI_ROLE_TREE_ITEM:
    case ATSPI_ROLE_ENTRY:
    case ATSPI_ROLE_PASSWORD_TEXT:
    case ATSPI_ROLE_TABLE_COLUMN_HEADER:
      return true;
    default:
      return false;
  }
}

std::string FormatNumber(double v) {
  char buf[32];
  if (std::fabs(v - std::round(v)) < 1e-9) std::snprintf(buf, sizeof buf, "%.0f", v);
  else std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

struct Builder {
  atspi::WindowTree& t;
  const ReadOptions& o;
  std::vector<Rect> bounds;     // by node index
  std::vector<bool> hasBounds;  // by node index
  Rect screen;
  std::vector<std::pair<Element*, int>> included;  // for the detail batch: element, node index

  void Visit(int i, int depth, Rect clip, std::vector<Element>& out) {
    const Node& n = t.nodes[i];
    bool showing = HasState(n, ATSPI_STATE_SHOWING) && HasState(n, ATSPI_STATE_VISIBLE);
    const Rect& b = bounds[i];
    if (o.visibleOnly) {
      if (!showing) return;
      if (hasBounds[i] && (b.w <= 0 || b.h <= 0 || !Intersects(b, clip))) return;
    }
    if (o.hasBbox && hasBounds[i] && !Intersects(b, o.bbox)) return;
    bool include =
        o.roles.empty() || std::find(o.roles.begin(), o.roles.end(), atspi::RoleName(n.role)) != o.roles.end();
    Rect childClip = (IsClip(n.role) && hasBounds[i]) ? Intersect(clip, b) : clip;
    bool descend = o.depth < 0 || depth < o.depth;
    if (!include) {
      if (descend)
        for (int c : n.children) Visit(c, depth + 1, childClip, out);
      return;
    }
    out.emplace_back();
    Element& e = out.back();
    e.id = n.id;
    e.role = atspi::RoleName(n.role);
    e.name = n.name;
    e.description = n.description;
    e.bounds = b;
    e.states = MapStates(n);
    e.secret = n.role == ATSPI_ROLE_PASSWORD_TEXT;
    if (IsCheckable(n.role)) e.value = (e.states & kChecked) ? "1" : "0";
    if (descend)
      for (int c : n.children) Visit(c, depth + 1, childClip, e.children);
  }

  void Collect(std::vector<Element>& els) {  // after the tree is final (no more reallocation)
    for (auto& e : els) {
      included.push_back({&e, t.byId[e.id]});
      Collect(e.children);
    }
  }
};

}  // namespace

void KeepTrees(bool on) { atspi::KeepTrees(on); }

std::vector<WindowInfo> ListWindows(const WindowQuery& filter) {
  auto wins = atspi::WindowsWithApps();
  std::vector<WindowInfo> out;
  for (auto& w : x11::MatchWindows(wins, filter)) out.push_back(ToInfo(w));
  std::sort(out.begin(), out.end(), [](const WindowInfo& a, const WindowInfo& b) { return a.id < b.id; });
  return out;
}

std::vector<AppInfo> ListApps() {
  std::vector<atspi::AppRef> apps;
  auto wins = atspi::WindowsWithApps(&apps);
  std::map<int, AppInfo> byPid;
  for (auto& a : apps) {
    if (a.pid <= 0 || a.pid == static_cast<int>(getpid())) continue;
    auto& info = byPid[a.pid];
    info.name = a.name;
    info.pid = a.pid;
    info.accessible = true;
  }
  for (auto& w : wins) {
    auto& info = byPid[w.pid];
    if (info.name.empty()) info.name = !w.cls.empty() ? w.cls : w.instance;
    info.pid = w.pid;
    info.windows++;
  }
  std::vector<AppInfo> out;
  for (auto& [pid, info] : byPid) out.push_back(info);
  return out;
}

ReadResult ReadTree(const ReadOptions& o) {
  auto t0 = std::chrono::steady_clock::now();
  auto phase = [&](const char* what) {
    if (Trace())
      std::fprintf(stderr, "read: %s at %.1f ms\n", what,
                   std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  };
  auto& x = x11::Session::Get();  // no display is the first thing to report
  auto& bus = atspi::Bus::Get();
  int trips0 = bus.roundTrips;
  atspi::WindowTree scratch;
  atspi::TreeUse use;
  // The whole tree, hidden parts included, whatever the filters: an id is the pre-order index over the
  // window's whole tree (types.ts), so a visible-only read that left hidden subtrees unfetched (web
  // content's, which the app's cache lacks) numbered the elements after them differently.
  atspi::WindowTree& t = atspi::WindowTreeFor(o.target, true, scratch, &use);
  phase(use.kept ? "kept tree brought up to date" : "tree loaded");

  Builder b{t,
            o,
            std::vector<Rect>(t.nodes.size()),
            std::vector<bool>(t.nodes.size(), false),
            Rect{0, 0, x.screenWidth(), x.screenHeight()},
            {}};
  // Extents of every node the traversal may reach, in one pipelined batch.
  std::vector<int> want;
  std::vector<std::pair<int, int>> sameAsParent;  // node, parent: text runs given their parent's extents
  {
    std::vector<std::tuple<int, int, int>> stack{{t.root, 0, -1}};
    while (!stack.empty()) {
      auto [i, depth, parent] = stack.back();
      stack.pop_back();
      const Node& n = t.nodes[i];
      if (o.visibleOnly && !(HasState(n, ATSPI_STATE_SHOWING) && HasState(n, ATSPI_STATE_VISIBLE))) continue;
      // With a role filter, only the kept roles and the clipping containers (scroll areas, viewports)
      // need their extents: the rest is traversed by state alone (filtering roles early keeps reads fast).
      bool needed = o.roles.empty() || IsClip(n.role) ||
                    std::find(o.roles.begin(), o.roles.end(), atspi::RoleName(n.role)) != o.roles.end();
      // A web page's text run that only repeats its parent's name (a link's, a button's: Chromium
      // exposes one per text node) is left out of the compact output: it takes its parent's extents
      // instead of a call of its own (~1,000 calls on the 5,900-node page).
      if (o.roles.empty() && parent >= 0 && n.role == ATSPI_ROLE_STATIC && n.children.empty() && !n.name.empty() &&
          n.name == t.nodes[parent].name) {
        sameAsParent.push_back({i, parent});
        continue;
      }
      if ((n.ifaces & atspi::kComponent) && needed) want.push_back(i);
      if (o.depth >= 0 && depth >= o.depth) continue;
      for (int c : n.children) stack.push_back({c, depth + 1, i});
    }
  }
  {
    std::vector<atspi::wire::Call> ext;
    ext.reserve(want.size());
    atspi::wire::Writer screen;
    screen.U32(0);  // ATSPI_COORD_TYPE_SCREEN
    for (int i : want) ext.push_back({t.nodes[i].path, "org.a11y.atspi.Component", "GetExtents", "u", screen.bytes()});
    std::vector<atspi::wire::Reply> replies;
    atspi::wire::Conn& c = bus.WireCallMany(t.peer, ext, replies);
    for (size_t k = 0; k < want.size(); k++) {
      if (!replies[k].ok) continue;
      atspi::wire::Reader r = c.Body(replies[k]);  // (iiii)
      r.Align(8);
      int32_t x0 = r.I32(), y0 = r.I32(), w = r.I32(), h = r.I32();
      if (!r.ok()) continue;
      b.bounds[want[k]] = {static_cast<int>(std::lround(x0 * t.scale)), static_cast<int>(std::lround(y0 * t.scale)),
                           static_cast<int>(std::lround(w * t.scale)), static_cast<int>(std::lround(h * t.scale))};
      b.hasBounds[want[k]] = true;
    }
    for (auto [i, parent] : sameAsParent) {
      b.bounds[i] = b.bounds[parent];
      b.hasBounds[i] = b.hasBounds[parent];
    }
  }
  phase("extents");
  ReadResult result;
  result.window = ToInfo(t.window);
  result.scale = t.scale;
  Rect clip = b.screen;
  const Node& rootNode = t.nodes[t.root];
  if (o.depth < 0 || o.depth > 0)
    for (int c : rootNode.children) b.Visit(c, 1, clip, result.elements);
  b.Collect(result.elements);

  // Details of the elements that passed the filters only: text of editable fields (never of a
  // password field), the text of labels whose accessible name says something else (a status line named
  // "Status" that shows "Saved: …": the name alone would hide what it shows), and numeric values, in one
  // pipelined batch; then action names.
  std::vector<atspi::Call> calls;
  std::vector<std::pair<Element*, int>> kinds;  // element, 0: text, 1: value, 2: label text
  for (auto& [e, i] : b.included) {
    const Node& n = t.nodes[i];
    bool editable = HasState(n, ATSPI_STATE_EDITABLE) || n.role == ATSPI_ROLE_ENTRY || n.role == ATSPI_ROLE_TEXT;
    // A web page's text run (Chromium's "static") is named by the very text it shows: asking for its
    // text again was most of the details batch on big pages (4,000 of 6,000 nodes). Unnamed: asked.
    bool label = n.role == ATSPI_ROLE_LABEL || n.role == ATSPI_ROLE_STATUS_BAR ||
                 (n.role == ATSPI_ROLE_STATIC && n.name.empty());
    if ((n.ifaces & atspi::kText) && !e->secret && (editable || label)) {
      calls.push_back({n.path, "org.a11y.atspi.Text", "GetText", g_variant_new("(ii)", 0, -1)});
      kinds.push_back({e, editable ? 0 : 2});
    }
    if ((n.ifaces & atspi::kValue) && !e->secret) {
      calls.push_back({n.path, "org.freedesktop.DBus.Properties", "Get",
                       g_variant_new("(ss)", "org.a11y.atspi.Value", "CurrentValue")});
      kinds.push_back({e, 1});
    }
  }
  {
    atspi::Replies r{bus.CallMany(t.peer, calls)};
    for (size_t k = 0; k < kinds.size(); k++) {
      if (!r.v[k]) continue;
      Element* e = kinds[k].first;
      switch (kinds[k].second) {
        case 0: {
          const char* s = nullptr;
          g_variant_get(r.v[k], "(&s)", &s);
          if (s) e->value = s;
          break;
        }
        case 2: {
          const char* s = nullptr;
          g_variant_get(r.v[k], "(&s)", &s);
          if (s && *s && e->name != s) e->value = s;
          break;
        }
        default: {
          GVariant* v = nullptr;
          g_variant_get(r.v[k], "(v)", &v);
          if (v && g_variant_is_of_type(v, G_VARIANT_TYPE_DOUBLE)) e->value = FormatNumber(g_variant_get_double(v));
          if (v) g_variant_unref(v);
          break;
        }
      }
    }
  }
  phase("details");
  if (o.actions) {  // names already read for a kept tree's objects are used again
    std::vector<std::string> paths;
    std::vector<int> asked;
    for (auto& [e, i] : b.included) {
      Node& n = t.nodes[i];
      if (!(n.ifaces & atspi::kAction) || !WantsActions(n)) continue;
      if (n.actionsKnown) {
        e->actions = n.actions;
        continue;
      }
      paths.push_back(n.path);
      asked.push_back(i);
    }
    auto names = atspi::ActionNames(bus, t.peer, paths, true);
    for (size_t k = 0; k < asked.size(); k++) {
      Node& n = t.nodes[asked[k]];
      n.actions = std::move(names[k]);
      n.actionsKnown = true;
    }
    for (auto& [e, i] : b.included)
      if (t.nodes[i].actionsKnown && e->actions.empty()) e->actions = t.nodes[i].actions;
  }
  phase("actions");
  result.stats.nodes = static_cast<int>(t.byId.size());
  result.stats.returned = static_cast<int>(b.included.size());
  result.stats.roundTrips = bus.roundTrips - trips0;
  result.stats.kept = use.kept;
  result.stats.refreshed = use.refreshed;
  result.stats.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return result;
}

}  // namespace runboard::desktop
