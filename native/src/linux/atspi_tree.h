// A window's accessibility tree loaded in few round trips: the app's whole cache in one call
// (org.a11y.atspi.Cache.GetItems), then only what the cache lacks (children of objects that manage
// their descendants, such as web content and tree views), level by level, pipelined.
// Internal to the Linux backend; shared by the reader and the actions capability.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "common/desktop_types.h"
#include "linux/atspi_bus.h"
#include "linux/x11_session.h"

namespace runboard::desktop::atspi {

enum Iface : uint32_t {
  kComponent = 1,
  kText = 2,
  kValue = 4,
  kAction = 8,
  kEditableText = 16,
  kCollection = 32,
};

struct Node {
  std::string path;
  std::string parent;
  int index = 0;
  int childCount = 0;
  uint32_t ifaces = 0;
  std::string name, description;
  uint32_t role = 0;
  uint64_t states = 0;  // AT-SPI state bits (AtspiStateType positions)
  std::vector<int> children;
  int id = -1;  // pre-order index from the window (the window is 0)
  // Action names once read (a kept tree keeps them until an event names the object).
  bool actionsKnown = false;
  std::vector<std::string> actions;
};

struct WindowTree {
  x11::XWin window;
  AppRef app;
  Peer peer;
  std::vector<Node> nodes;
  int root = -1;  // the window's node
  double scale = 1;
  std::vector<int> byId;  // id -> node index
  std::unordered_map<std::string, int> byPath;
  // Objects whose children the cache lacked and that were walked; eventsCover: each of them manages its
  // descendants (a tree view: re-walked at every kept read). Otherwise (Chromium's web content, which
  // sends no children-changed) the tree is not kept (tree_cache.cc).
  std::vector<std::string> walkRoots;
  bool eventsCover = true;
  std::unordered_set<std::string> recheck;  // shown but not yet showing when last re-read
};

bool HasState(const Node& n, int state);
const std::string& RoleName(uint32_t role);

// Finds the window for a query and loads its tree. `expandHidden` also fetches uncached children of
// objects that are not showing.
WindowTree LoadWindowTree(const WindowQuery& q, bool expandHidden);
// The two halves of LoadWindowTree: the window, its app and peer; then its tree.
WindowTree FindWindow(const WindowQuery& q);
void LoadTree(WindowTree& t, bool expandHidden);

// The app's toolkit ("GTK", "Chromium", …), asked once per app.
const std::string& ToolkitName(const Peer& peer, const std::string& app);
// Whether FetchInfo asks objects for their interfaces (GTK) or takes them from their role (the rest).
void AskInterfacesFor(const WindowTree& t);
extern bool g_askInterfaces;  // for the load under way (LoadTree, tree_cache.cc's Refresh), set by AskInterfacesFor
// The interface bit of an AT-SPI interface name (0 for the ones the reader does not use).
uint32_t IfaceBit(std::string_view name);

// The pieces the kept trees (tree_cache.cc) re-use on the objects that events named.
// Role, states, interfaces, name, description and child count of `fresh` (and their parent).
// knownStatic: paths known to be text runs (role static): they are not asked their role.
void FetchInfo(Bus& bus, const Peer& peer, std::vector<Node>& nodes, const std::vector<int>& fresh, bool setParent,
               const std::unordered_set<std::string>* knownStatic = nullptr);
// One child of a GetChildren reply, at position pos under parent: an object known already is moved
// there (GTK has children whose Parent property points elsewhere); a new one is added to nodes, byPath
// and fresh.
void PlaceChild(std::vector<Node>& nodes, std::unordered_map<std::string, int>& byPath, std::string path,
                const std::string& parent, int pos, std::vector<int>& fresh);
// Children lists from the parents' paths, in index order.
void LinkChildren(std::vector<Node>& nodes, std::unordered_map<std::string, int>& byPath);
// Fetches the children of objects below `root` that have fewer than their child count.
// `walked` (when given): the objects whose children were fetched (the walk's first level).
void ExpandUncached(Bus& bus, const Peer& peer, std::vector<Node>& nodes, std::unordered_map<std::string, int>& byPath,
                    int root, bool expandHidden, std::vector<int>* walked = nullptr);
// Ids in pre-order from the window (0).
void AssignIds(WindowTree& t);
// Action names of objects, in two pipelined batches at most: GetActions, then GetName for the
// actions it left unnamed (Chromium gives no localized names; GTK does). With firstOnly, only the
// first (default) action of such objects is named: the others (Chromium: showContextMenu) are dropped,
// and when a sample of the objects has no named action at all, the rest are asked GetName(0) alone.
std::vector<std::vector<std::string>> ActionNames(Bus& bus, const Peer& peer, const std::vector<std::string>& paths,
                                                  bool firstOnly = false);
// Annotates X windows with accessibility app names (one pipelined batch).
std::vector<x11::XWin> WindowsWithApps(std::vector<AppRef>* appsOut = nullptr);

}  // namespace runboard::desktop::atspi
