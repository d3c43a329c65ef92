#include "linux/atspi_tree.h"

#include <atspi/atspi.h>

#include <strings.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string_view>

#include "linux/input_util_linux.h"
#include "linux/lazy_lib.h"

namespace runboard::desktop::atspi {
namespace {

constexpr const char* kRootPath = "/org/a11y/atspi/accessible/root";

}  // namespace

uint32_t IfaceBit(std::string_view name) {
  static const std::pair<const char*, uint32_t> table[] = {
      {"org.a11y.atspi.Component", kComponent},
      {"org.a11y.atspi.Text", kText},
      {"org.a11y.atspi.Value", kValue},
      {"org.a11y.atspi.Action", kAction},
      {"org.a11y.atspi.EditableText", kEditableText},
      {"org.a11y.atspi.Collection", kCollection},
  };
  for (auto& [n, bit] : table)
    if (name == n) return bit;
  return 0;
}

namespace {

// GDK_SCALE of a process: AT-SPI reports a scaled GTK app's extents in logical pixels.
double ProcessScale(int pid) {
  if (pid <= 0) return 1;
  std::ifstream f("/proc/" + std::to_string(pid) + "/environ", std::ios::binary);
  std::string env((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  size_t pos = 0;
  while (pos < env.size()) {
    size_t end = env.find('\0', pos);
    if (end == std::string::npos) end = env.size();
    if (env.compare(pos, 10, "GDK_SCALE=") == 0) {
      int v = std::atoi(env.c_str() + pos + 10);
      return v >= 1 && v <= 8 ? v : 1;
    }
    pos = end + 1;
  }
  return 1;
}

// Cache.GetItems' reply, a((so)(so)(so)iiassusau), read in place: object, application, parent,
// index in parent, child count, interfaces, name, role, description, states.
void ParseItems(wire::Reader r, std::vector<Node>& nodes, std::unordered_map<std::string, int>& byPath) {
  size_t end = r.Array(8);
  nodes.reserve(nodes.size() + end / 96);
  while (r.Before(end)) {
    r.Align(8);
    Node n;
    r.Align(8);
    r.Str();
    n.path = r.Str();
    r.Align(8);
    r.Str();
    r.Str();
    r.Align(8);
    r.Str();
    n.parent = r.Str();
    n.index = r.I32();
    n.childCount = r.I32();
    for (size_t e = r.Array(4); r.Before(e);) {
      std::string_view iface = r.Str();
      n.ifaces |= IfaceBit(iface);
    }
    n.name = r.Str();
    n.role = r.U32();
    n.description = r.Str();
    int word = 0;
    for (size_t e = r.Array(4); r.Before(e); word++) {
      uint32_t v = r.U32();
      if (word < 2) n.states |= static_cast<uint64_t>(v) << (32 * word);
    }
    if (!r.ok()) break;
    if (byPath.count(n.path)) continue;
    byPath.emplace(n.path, static_cast<int>(nodes.size()));
    nodes.push_back(std::move(n));
  }
}

}  // namespace

void LinkChildren(std::vector<Node>& nodes, std::unordered_map<std::string, int>& byPath) {
  for (auto& n : nodes) n.children.clear();
  for (size_t i = 0; i < nodes.size(); i++) {
    auto p = byPath.find(nodes[i].parent);
    if (p != byPath.end() && p->second != static_cast<int>(i)) nodes[p->second].children.push_back(static_cast<int>(i));
  }
  for (auto& n : nodes)
    std::stable_sort(n.children.begin(), n.children.end(),
                     [&](int a, int b) { return nodes[a].index < nodes[b].index; });
}

const std::string& ToolkitName(const Peer& peer, const std::string& app) {
  static std::unordered_map<std::string, std::string> byApp;  // unique bus name -> toolkit
  auto known = byApp.find(app);
  if (known != byApp.end()) return known->second;
  std::string toolkit;
  GVariant* v = Bus::Get().CallOne(peer, {kRootPath, "org.freedesktop.DBus.Properties", "Get",
                                          g_variant_new("(ss)", "org.a11y.atspi.Application", "ToolkitName")});
  if (v) {
    GVariant* inner = nullptr;
    g_variant_get(v, "(v)", &inner);
    if (inner && g_variant_is_of_type(inner, G_VARIANT_TYPE_STRING)) toolkit = g_variant_get_string(inner, nullptr);
    if (inner) g_variant_unref(inner);
    g_variant_unref(v);
  }
  return byApp[app] = toolkit;
}

void AssignIds(WindowTree& t) {
  t.byId.clear();
  std::vector<int> stack{t.root};
  while (!stack.empty()) {
    int i = stack.back();
    stack.pop_back();
    t.nodes[i].id = static_cast<int>(t.byId.size());
    t.byId.push_back(i);
    const auto& ch = t.nodes[i].children;
    for (auto it = ch.rbegin(); it != ch.rend(); ++it) stack.push_back(*it);
  }
}

std::vector<std::vector<std::string>> ActionNames(Bus& bus, const Peer& peer, const std::vector<std::string>& paths,
                                                  bool firstOnly) {
  std::vector<std::vector<std::string>> names(paths.size());
  std::vector<wire::Call> calls;
  std::vector<std::pair<size_t, int>> unnamed;
  std::vector<wire::Reply> replies;
  size_t seen = 0, named = 0;  // actions, and actions GetActions gave a name
  auto getActions = [&](size_t from, size_t to) {
    calls.clear();
    for (size_t k = from; k < to; k++) calls.push_back({paths[k], "org.a11y.atspi.Action", "GetActions", "", ""});
    wire::Conn& c = bus.WireCallMany(peer, calls, replies);
    for (size_t k = from; k < to; k++) {  // a(sss): name, description, key binding
      if (!replies[k - from].ok) continue;
      wire::Reader r = c.Body(replies[k - from]);
      for (size_t end = r.Array(8); r.Before(end);) {
        r.Align(8);
        std::string_view name = r.Str();
        r.Str();
        r.Str();
        if (!r.ok()) break;
        seen++;
        if (!name.empty()) named++;
        if (name.empty() && (!firstOnly || names[k].empty())) unnamed.push_back({k, static_cast<int>(names[k].size())});
        names[k].emplace_back(name);
      }
    }
  };
  // An app whose GetActions names nothing (Chromium gives no localized names) is found on a sample: the
  // rest are asked only for their first action's name (with firstOnly, all that would be kept), which
  // saves a call per object (2,000 on a big web page).
  constexpr size_t kSample = 24;
  size_t sampled = firstOnly && paths.size() > 2 * kSample ? kSample : paths.size();
  getActions(0, sampled);
  if (sampled < paths.size()) {
    if (seen > 0 && named == 0) {
      for (size_t k = sampled; k < paths.size(); k++) {
        unnamed.push_back({k, 0});
        names[k].emplace_back();
      }
    } else {
      getActions(sampled, paths.size());
    }
  }
  if (!unnamed.empty()) {
    calls.clear();
    for (auto& [k, i] : unnamed) {
      wire::Writer w;
      w.I32(i);
      calls.push_back({paths[k], "org.a11y.atspi.Action", "GetName", "i", std::move(w.bytes())});
    }
    wire::Conn& c = bus.WireCallMany(peer, calls, replies);
    for (size_t u = 0; u < unnamed.size(); u++) {
      if (!replies[u].ok) continue;
      wire::Reader r = c.Body(replies[u]);
      std::string_view s = r.Str();
      if (r.ok()) names[unnamed[u].first][unnamed[u].second] = s;
    }
  }
  for (auto& list : names)  // nameless actions cannot be asked for by name: leave them out
    list.erase(std::remove(list.begin(), list.end(), std::string()), list.end());
  return names;
}

bool HasState(const Node& n, int state) { return (n.states >> state) & 1; }

const std::string& RoleName(uint32_t role) {
  // Made once, whole, before any thread sees it (a static's initialisation is thread-safe): the recorder's
  // thread and the desktop thread both ask, and a table filled on first use let the second caller see it
  // half filled ("push button" read as "unknown", CI once). A throw leaves it to the next call.
  static const std::vector<std::string> names = [] {
    auto roleName =
        lazy::Need(RB_LAZY(lazy::Atspi, atspi_role_get_name), lazy::Atspi(), "atspi_role_get_name", kNoA11yBus);
    std::vector<std::string> all;
    for (int r = 0; r < ATSPI_ROLE_COUNT; r++) {
      gchar* s = roleName(static_cast<AtspiRole>(r));
      all.emplace_back(s ? s : "unknown");
      g_free(s);
    }
    return all;
  }();
  static const std::string unknown = "unknown";
  return role < names.size() ? names[role] : unknown;
}

std::vector<x11::XWin> WindowsWithApps(std::vector<AppRef>* appsOut) {
  auto wins = x11::Session::Get().ListWindows();
  std::vector<AppRef> apps;
  try {
    apps = Bus::Get().Apps();
  } catch (const DesktopError&) {
    // No accessibility bus: windows are still listed, by their class.
  }
  for (auto& w : wins)
    for (auto& a : apps)
      if (a.pid == w.pid && w.pid) w.a11yName = a.name;
  if (appsOut) *appsOut = std::move(apps);
  return wins;
}

WindowTree FindWindow(const WindowQuery& q) {
  WindowTree t;
  std::vector<AppRef> apps;
  auto wins = WindowsWithApps(&apps);
  auto matches = x11::MatchWindows(wins, q);
  if (matches.empty()) {
    std::string names;
    for (auto& w : wins) names += (names.empty() ? "" : ", ") + std::string("\"") + w.title + "\"";
    throw DesktopError(kAppNotFound, "no window matches the query (windows: " + (names.empty() ? "none" : names) + ")");
  }
  t.window = matches[0];
  auto& bus = Bus::Get();
  const AppRef* app = nullptr;
  for (auto& a : apps)
    if (a.pid == t.window.pid) app = &a;
  if (!app)
    throw DesktopError(kNoA11yTree, "window \"" + t.window.title + "\" (pid " + std::to_string(t.window.pid) +
                                        ") has no accessibility tree on the AT-SPI bus");
  if (ProcessStopped(app->pid))
    throw DesktopError(kAppNotResponding, "the app of window \"" + t.window.title + "\" (pid " +
                                              std::to_string(app->pid) +
                                              ") is stopped (SIGSTOP, job control or a debugger): it answers no "
                                              "accessibility call until it is continued (kill -CONT " +
                                              std::to_string(app->pid) + ")");
  t.app = *app;
  t.peer = bus.PeerFor(app->busName);
  t.scale = ProcessScale(app->pid);
  return t;
}

void AskInterfacesFor(const WindowTree& t) {
  g_askInterfaces = strcasecmp(ToolkitName(t.peer, t.app.busName).c_str(), "gtk") == 0;
}

void LoadTree(WindowTree& t, bool expandHidden) {
  auto& bus = Bus::Get();
  AskInterfacesFor(t);
  auto& byPath = t.byPath;
  byPath.clear();
  t.nodes.clear();

  const bool trace = Trace();
  auto t0 = g_get_monotonic_time();
  if (trace) g_printerr("load: window + apps found\n");
  {
    std::vector<wire::Call> calls{{"/org/a11y/atspi/cache", "org.a11y.atspi.Cache", "GetItems", "", ""}};
    std::vector<wire::Reply> replies;
    wire::Conn& c = bus.WireCallMany(t.peer, calls, replies);
    if (replies[0].ok) ParseItems(c.Body(replies[0]), t.nodes, byPath);
  }
  // The app's root is not in its own cache; add it so that its children (the windows) link to it.
  if (!byPath.count(kRootPath)) {
    Node r;
    r.path = kRootPath;
    GVariant* kids = bus.CallOne(t.peer, {kRootPath, "org.a11y.atspi.Accessible", "GetChildren", nullptr});
    if (kids) {
      GVariantIter* it = nullptr;
      g_variant_get(kids, "(a(so))", &it);
      r.childCount = static_cast<int>(g_variant_iter_n_children(it));
      g_variant_iter_free(it);
      g_variant_unref(kids);
    }
    r.states = (1ull << ATSPI_STATE_SHOWING) | (1ull << ATSPI_STATE_VISIBLE);
    byPath.emplace(r.path, static_cast<int>(t.nodes.size()));
    t.nodes.push_back(std::move(r));
  }
  if (trace) g_printerr("load: items parsed: %zu in %.1f ms\n", t.nodes.size(), (g_get_monotonic_time() - t0) / 1000.0);
  LinkChildren(t.nodes, byPath);
  int appRoot = byPath[kRootPath];
  if (static_cast<int>(t.nodes[appRoot].children.size()) < t.nodes[appRoot].childCount)
    ExpandUncached(bus, t.peer, t.nodes, byPath, appRoot, true);
  // The window's node: a top-level child of the app with the window's title; when several match,
  // the one whose extents are nearest the X window.
  std::vector<int> cands;
  for (int c : t.nodes[appRoot].children)
    if (t.nodes[c].name == t.window.title) cands.push_back(c);
  if (cands.empty())
    for (int c : t.nodes[appRoot].children)
      if (!t.nodes[c].name.empty() && x11::ContainsFold(t.window.title, t.nodes[c].name)) cands.push_back(c);
  if (cands.empty() && t.nodes[appRoot].children.size() == 1) cands = t.nodes[appRoot].children;
  if (cands.empty())
    throw DesktopError(
        kNoA11yTree, "the accessibility tree of \"" + t.app.name + "\" has no window named \"" + t.window.title + "\"");
  t.root = cands[0];
  if (cands.size() > 1) {
    std::vector<Call> calls;
    for (int c : cands)
      calls.push_back({t.nodes[c].path, "org.a11y.atspi.Component", "GetExtents", g_variant_new("(u)", 0u)});
    Replies r{bus.CallMany(t.peer, calls)};
    long best = -1;
    for (size_t k = 0; k < cands.size(); k++) {
      if (!r.v[k]) continue;
      gint32 x, y, w, h;
      g_variant_get(r.v[k], "((iiii))", &x, &y, &w, &h);
      long d = std::labs(std::lround(x * t.scale) - t.window.client.x) +
               std::labs(std::lround(y * t.scale) - t.window.client.y);
      if (best < 0 || d < best) best = d, t.root = cands[k];
    }
  }
  std::vector<int> walked;
  ExpandUncached(bus, t.peer, t.nodes, byPath, t.root, expandHidden, &walked);
  t.walkRoots.clear();
  t.eventsCover = true;
  for (int i : walked) {
    t.walkRoots.push_back(t.nodes[i].path);
    if (!HasState(t.nodes[i], ATSPI_STATE_MANAGES_DESCENDANTS)) t.eventsCover = false;
  }
  AssignIds(t);
}

WindowTree LoadWindowTree(const WindowQuery& q, bool expandHidden) {
  WindowTree t = FindWindow(q);
  LoadTree(t, expandHidden);
  return t;
}

}  // namespace runboard::desktop::atspi
