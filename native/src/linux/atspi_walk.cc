// The part of a window's tree that the app's cache lacks (web content, tree views), fetched object by
// object in pipelined batches, level by level (atspi_tree.h). Internal to the Linux backend.
#include <atspi/atspi.h>

#include <cstdlib>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "linux/atspi_tree.h"
#include "linux/input_util_linux.h"

namespace runboard::desktop::atspi {

bool g_askInterfaces = true;

namespace {
constexpr int kMaxUncached = 20000;
}  // namespace

// Role, states, interfaces and the Accessible properties (name, description, child count, parent)
// of objects the cache does not hold, in one pipelined batch.
// The interfaces a walked object is taken to have, from its role, instead of a GetInterfaces call (one
// call in four of a walk): every object is asked for its extents, text and actions only where the
// reader wants them, and an object without the interface answers that call with an error, which reads
// as "none". Value is the one interface whose call is made for every element that has it: only the roles
// that carry a value get it.
static uint32_t GuessInterfaces(uint32_t role) {
  uint32_t ifaces = kComponent | kText | kAction;
  switch (role) {
    case ATSPI_ROLE_SLIDER:
    case ATSPI_ROLE_SPIN_BUTTON:
    case ATSPI_ROLE_PROGRESS_BAR:
    case ATSPI_ROLE_SCROLL_BAR:
    case ATSPI_ROLE_LEVEL_BAR:
    case ATSPI_ROLE_DIAL:
      ifaces |= kValue;
      break;
    default:
      break;
  }
  return ifaces;
}

void FetchInfo(Bus& bus, const Peer& peer, std::vector<Node>& nodes, const std::vector<int>& fresh, bool setParent,
               const std::unordered_set<std::string>* knownStatic) {
  // GTK answers a call on an interface an object lacks with a CRITICAL in the app's log (seen with tree
  // views' cells), and walks little (its cache holds nearly everything): it is asked. Web content is
  // walked by the thousand, and its objects have the interfaces the reader asks for.
  const bool askInterfaces = g_askInterfaces;
  std::vector<wire::Call> info;
  info.reserve(fresh.size() * (askInterfaces ? 4 : 3));
  // Where each object's replies are: role (-1 when its role is known: a text run that a GetMatches of its
  // document named), states, properties, interfaces (-1 when not asked).
  struct At {
    int role, state, props, ifaces;
  };
  std::vector<At> at(fresh.size());
  wire::Writer accessible;
  accessible.Str("org.a11y.atspi.Accessible");
  for (size_t k = 0; k < fresh.size(); k++) {
    Node& n = nodes[fresh[k]];
    const std::string& path = n.path;
    At& x = at[k];
    x.role = -1;
    if (knownStatic && knownStatic->count(path)) {
      n.role = ATSPI_ROLE_STATIC;
    } else {
      x.role = static_cast<int>(info.size());
      info.push_back({path, "org.a11y.atspi.Accessible", "GetRole", "", ""});
    }
    x.state = static_cast<int>(info.size());
    info.push_back({path, "org.a11y.atspi.Accessible", "GetState", "", ""});
    x.props = static_cast<int>(info.size());
    info.push_back({path, "org.freedesktop.DBus.Properties", "GetAll", "s", accessible.bytes()});
    x.ifaces = -1;
    if (askInterfaces) {
      x.ifaces = static_cast<int>(info.size());
      info.push_back({path, "org.a11y.atspi.Accessible", "GetInterfaces", "", ""});
    }
  }
  std::vector<wire::Reply> r;
  wire::Conn& c = bus.WireCallMany(peer, info, r);
  for (size_t k = 0; k < fresh.size(); k++) {
    Node& n = nodes[fresh[k]];
    const At& x = at[k];
    if (x.role >= 0 && r[x.role].ok) {
      wire::Reader b = c.Body(r[x.role]);
      uint32_t role = b.U32();
      if (b.ok()) n.role = role;
    }
    if (x.ifaces >= 0) {
      if (r[x.ifaces].ok) {
        wire::Reader b = c.Body(r[x.ifaces]);
        for (size_t end = b.Array(4); b.Before(end);) n.ifaces |= IfaceBit(b.Str());
      }
    } else {
      n.ifaces |= GuessInterfaces(n.role);
    }
    if (r[x.state].ok) {
      wire::Reader b = c.Body(r[x.state]);
      uint64_t states = 0;
      int word = 0;
      for (size_t end = b.Array(4); b.Before(end); word++) {
        uint32_t v = b.U32();
        if (word < 2) states |= static_cast<uint64_t>(v) << (32 * word);
      }
      if (b.ok()) n.states = states;
    }
    if (r[x.props].ok) {  // a{sv}
      wire::Reader b = c.Body(r[x.props]);
      for (size_t end = b.Array(8); b.Before(end);) {
        b.Align(8);
        std::string_view key = b.Str();
        std::string_view sig = b.Sig();
        if ((key == "Name" || key == "Description") && sig == "s") {
          std::string_view v = b.Str();
          (key == "Name" ? n.name : n.description) = v;
        } else if (key == "ChildCount" && sig == "i") {
          n.childCount = b.I32();
        } else if (key == "Parent" && sig == "(so)") {
          b.Align(8);
          b.Str();
          std::string_view p = b.Str();
          if (setParent) n.parent = p;
        } else {
          b.SkipValue(sig);
        }
      }
    }
  }
}

void PlaceChild(std::vector<Node>& nodes, std::unordered_map<std::string, int>& byPath, std::string path,
                const std::string& parent, int pos, std::vector<int>& fresh) {
  auto known = byPath.find(path);
  if (known != byPath.end()) {
    Node& k = nodes[known->second];  // re-attached (GTK has children whose Parent points elsewhere)
    k.parent = parent;
    k.index = pos;
    return;
  }
  Node n;
  n.path = std::move(path);
  n.parent = parent;
  n.index = pos;
  byPath.emplace(n.path, static_cast<int>(nodes.size()));
  fresh.push_back(static_cast<int>(nodes.size()));
  nodes.push_back(std::move(n));
}

// An object reference list, a(so), as paths.
template <typename F>
static void ForEachRef(wire::Reader b, F&& f) {
  for (size_t end = b.Array(8); b.Before(end);) {
    b.Align(8);
    b.Str();
    std::string_view p = b.Str();
    if (!b.ok()) break;
    f(p);
  }
}

// Fetches what the cache lacks: descendants of objects whose cached children are fewer than their
// child count (web content, tree views). Objects with the Collection interface hand over their whole
// subtree in one GetMatches call (in tree order; parents come from the Parent property); the others
// are walked level by level, one pipelined batch for the children lists and one for the new objects.
void ExpandUncached(Bus& bus, const Peer& peer, std::vector<Node>& nodes, std::unordered_map<std::string, int>& byPath,
                    int root, bool expandHidden, std::vector<int>* walked) {
  std::vector<int> frontier;
  std::vector<int> stack{root};
  while (!stack.empty()) {  // nodes of the window's subtree whose children are missing
    int i = stack.back();
    stack.pop_back();
    const Node& n = nodes[i];
    if (!expandHidden && !HasState(n, ATSPI_STATE_SHOWING)) continue;
    // Objects that manage their descendants (tree views, web content) leave them out of the cache,
    // and may report no child count there either: ask them.
    if (static_cast<int>(n.children.size()) < n.childCount ||
        (HasState(n, ATSPI_STATE_MANAGES_DESCENDANTS) && n.children.empty()))
      frontier.push_back(i);
    for (int c : n.children) stack.push_back(c);
  }
  if (walked) *walked = frontier;
  int added = 0;
  std::vector<wire::Call> calls;
  std::vector<wire::Reply> replies;
  // Subtrees the cache lacks entirely through Collection.GetMatches (one call each); the rest level by
  // level through GetChildren: a partly cached subtree is walked, which also re-attaches children
  // whose Parent property points elsewhere (GTK has a few).
  // The match rule (aiia{ss}iaiiasib): states (showing objects only, unless hidden ones are asked
  // for: their ancestors are showing too, so the tree stays whole), attributes, roles, interfaces,
  // each with MATCH_ALL, not inverted; then canonical order, no count limit, traverse.
  wire::Writer rule;
  rule.Align(8);
  if (!expandHidden) {
    rule.U32(8);
    rule.I32(static_cast<int32_t>(1u << ATSPI_STATE_SHOWING));
    rule.I32(0);
  } else {
    rule.U32(0);
  }
  rule.I32(ATSPI_Collection_MATCH_ALL);
  rule.U32(0);  // a{ss}: empty, its elements aligned to 8
  rule.Align(8);
  rule.I32(ATSPI_Collection_MATCH_ALL);
  rule.U32(0);  // ai
  rule.I32(ATSPI_Collection_MATCH_ALL);
  rule.U32(0);  // as
  rule.I32(ATSPI_Collection_MATCH_ALL);
  rule.U32(0);  // invert: false
  rule.U32(ATSPI_Collection_SORT_ORDER_CANONICAL);
  rule.I32(0);
  rule.U32(1);  // traverse
  if (Trace())
    for (int i : frontier)
      g_printerr("uncached: %s \"%s\" children %zu/%d\n", RoleName(nodes[i].role).c_str(), nodes[i].name.c_str(),
                 nodes[i].children.size(), nodes[i].childCount);
  // Text runs (role "static"), wherever they are below a document: states none, roles {static} (a bit
  // set of four words, MATCH_ANY), canonical order, no count limit, traverse.
  wire::Writer textRuns;
  textRuns.Align(8);
  textRuns.U32(0);
  textRuns.I32(ATSPI_Collection_MATCH_ALL);
  textRuns.U32(0);
  textRuns.Align(8);
  textRuns.I32(ATSPI_Collection_MATCH_ALL);
  textRuns.U32(16);
  for (int w = 0; w < 4; w++) textRuns.U32(w == ATSPI_ROLE_STATIC / 32 ? 1u << (ATSPI_ROLE_STATIC % 32) : 0);
  textRuns.I32(ATSPI_Collection_MATCH_ANY);
  textRuns.U32(0);  // as
  textRuns.I32(ATSPI_Collection_MATCH_ALL);
  textRuns.U32(0);  // invert: false
  textRuns.U32(ATSPI_Collection_SORT_ORDER_CANONICAL);
  textRuns.I32(0);
  textRuns.U32(1);
  std::vector<std::string> docs;
  std::unordered_set<std::string> statics;
  std::vector<std::string> early;              // text runs named by a query, not yet in the tree
  std::unordered_map<std::string, int> runOf;  // parent path -> its text run fetched early (-1: several)
  bool first = true;
  while (!frontier.empty() && added < kMaxUncached) {
    std::vector<int> viaCollection, rest;
    // Only on the first level: objects found by the walk below are as quick to walk on (measured: a
    // GetMatches of a 5,700-node web document and then four calls per node, against ~1,900 pipelined
    // GetChildren calls, took the same time), and a walk keeps the children's order from GetChildren.
    for (int i : frontier)
      ((nodes[i].ifaces & kCollection) && nodes[i].children.empty() && first ? viaCollection : rest).push_back(i);
    first = false;
    calls.clear();
    for (int i : viaCollection)
      calls.push_back(
          {nodes[i].path, "org.a11y.atspi.Collection", "GetMatches", "(aiia{ss}iaiiasib)uib", rule.bytes()});
    std::vector<int> fresh;
    {
      wire::Conn& c = bus.WireCallMany(peer, calls, replies);
      for (size_t k = 0; k < viaCollection.size(); k++) {
        if (!replies[k].ok) {
          rest.push_back(viaCollection[k]);
          continue;
        }
        ForEachRef(c.Body(replies[k]), [&](std::string_view p) {
          if (added >= kMaxUncached) return;
          std::string path(p);
          if (byPath.count(path)) return;
          Node n;
          n.path = std::move(path);
          n.index = static_cast<int>(nodes.size());  // tree order: keeps siblings in order
          byPath.emplace(n.path, static_cast<int>(nodes.size()));
          fresh.push_back(static_cast<int>(nodes.size()));
          nodes.push_back(std::move(n));
          added++;
        });
      }
    }
    if (!fresh.empty()) {
      FetchInfo(bus, peer, nodes, fresh, true);
      LinkChildren(nodes, byPath);
    }
    frontier = std::move(rest);
    if (frontier.empty()) break;
    calls.clear();
    for (int i : frontier) calls.push_back({nodes[i].path, "org.a11y.atspi.Accessible", "GetChildren", "", ""});
    // The text runs of web documents found on the level before, named in one GetMatches each (in the same
    // batch): they are then not asked their role one by one (3,800 of the 5,900-node test page's objects).
    for (const std::string& d : docs)
      calls.push_back({d, "org.a11y.atspi.Collection", "GetMatches", "(aiia{ss}iaiiasib)uib", textRuns.bytes()});
    fresh.clear();
    {
      wire::Conn& c = bus.WireCallMany(peer, calls, replies);
      for (size_t k = 0; k < docs.size(); k++)
        if (replies[frontier.size() + k].ok)
          ForEachRef(c.Body(replies[frontier.size() + k]), [&](std::string_view p) {
            if (statics.emplace(p).second && !byPath.count(std::string(p))) early.emplace_back(p);
          });
      docs.clear();
      for (size_t k2 = 0; k2 < frontier.size(); k2++) {
        if (!replies[k2].ok) continue;
        int index = 0;
        const std::string parent = nodes[frontier[k2]].path;
        ForEachRef(c.Body(replies[k2]),
                   [&](std::string_view p) { PlaceChild(nodes, byPath, std::string(p), parent, index++, fresh); });
      }
    }
    if (!fresh.empty()) FetchInfo(bus, peer, nodes, fresh, false, g_askInterfaces ? nullptr : &statics);
    if (!early.empty()) {
      // The text runs the query named are fetched at once, their parents from their Parent property: an
      // object whose one child is such a text run (a link and its text) then needs no GetChildren.
      std::vector<int> runs;
      for (std::string& path : early) {
        Node n;
        n.path = std::move(path);
        byPath.emplace(n.path, static_cast<int>(nodes.size()));
        runs.push_back(static_cast<int>(nodes.size()));
        nodes.push_back(std::move(n));
      }
      early.clear();
      FetchInfo(bus, peer, nodes, runs, true, &statics);
      for (int i : runs) {
        auto [it, single] = runOf.emplace(nodes[i].parent, i);
        if (!single) it->second = -1;  // several: the parent's order needs its GetChildren
      }
      added += static_cast<int>(runs.size());
    }
    std::vector<int> next;
    for (int i : fresh) {
      const Node& n = nodes[i];
      if (!g_askInterfaces && n.role == ATSPI_ROLE_DOCUMENT_WEB && n.childCount > 0) docs.push_back(n.path);
      if (n.childCount <= 0 || !(expandHidden || HasState(n, ATSPI_STATE_SHOWING))) continue;
      auto run = n.childCount == 1 ? runOf.find(n.path) : runOf.end();
      if (run != runOf.end() && run->second >= 0) {
        nodes[run->second].index = 0;  // its only child, known already
        continue;
      }
      next.push_back(i);
    }
    added += static_cast<int>(fresh.size());
    LinkChildren(nodes, byPath);
    frontier = std::move(next);
  }
}

}  // namespace runboard::desktop::atspi
