// Types every desktop capability shares (reader, inputter, window manager, capture, actions).
// Plain C++: no Node, no platform headers, so a macOS or Windows backend fills the same shapes.
#pragma once
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace runboard::desktop {

struct Rect {
  int x = 0, y = 0, w = 0, h = 0;
};

// Element state bits (a platform maps its own states onto these).
enum StateBits : uint32_t {
  kFocused = 1u << 0,
  kEnabled = 1u << 1,
  kSelected = 1u << 2,
  kVisible = 1u << 3,  // showing and visible according to the toolkit
  kChecked = 1u << 4,
  kEditable = 1u << 5,
  kFocusable = 1u << 6,
  kActive = 1u << 7,  // the active window
  kExpanded = 1u << 8,
  kMultiLine = 1u << 9,
};

struct WindowInfo {
  uint64_t id = 0;  // the platform's window id (X11: the client window)
  int pid = 0;
  std::string app;       // accessibility application name when known, else the window class
  std::string appClass;  // X11 WM_CLASS class (macOS: bundle id, later)
  std::string title;
  Rect bounds;  // outer bounds (frame included), physical screen pixels
  bool focused = false;
};

struct AppInfo {
  std::string name;
  int pid = 0;
  bool accessible = false;  // has an accessibility tree
  int windows = 0;
};

struct Element {
  int id = 0;        // pre-order index over the window's whole tree (stable across filters)
  std::string role;  // the platform role name (AT-SPI: "push button", ...)
  std::string name, value, description;
  Rect bounds;          // physical screen pixels
  uint32_t states = 0;  // StateBits
  bool secret = false;  // a password field: value never read
  std::vector<std::string> actions;
  std::vector<Element> children;
};

struct WindowQuery {
  std::string app;    // case-insensitive substring of app name or class
  std::string title;  // case-insensitive substring of the title
  uint64_t windowId = 0;
  int pid = 0;
};

struct ReadOptions {
  WindowQuery target;
  int depth = -1;                  // -1: unlimited; 1: the window's direct children only
  std::vector<std::string> roles;  // platform role names to include (others are skipped, children kept)
  bool hasBbox = false;
  Rect bbox;
  bool visibleOnly = true;
  bool actions = true;  // read action names
};

struct ReadStats {
  int nodes = 0;       // nodes in the window's tree
  int returned = 0;    // elements in the result
  int roundTrips = 0;  // batched round trips to the accessibility bus
  double ms = 0;
  bool kept = false;  // the tree kept from an earlier read, with what events named re-read (KeepTrees)
  int refreshed = 0;  // objects re-read because an event named them (kept trees only)
};

struct ReadResult {
  WindowInfo window;
  double scale = 1;  // toolkit scale applied to accessibility bounds (GDK_SCALE)
  std::vector<Element> elements;
  ReadStats stats;
};

// An error a user can act on: `code` is stable (the CLI maps it to an exit code and a remediation).
class DesktopError : public std::runtime_error {
 public:
  DesktopError(std::string code, const std::string& message) : std::runtime_error(message), code_(std::move(code)) {}
  const std::string& code() const { return code_; }

 private:
  std::string code_;
};

// How a thread of its own (the key watcher, the recorder) ends, besides its own events.
struct ThreadEndCallbacks {
  std::function<void(const DesktopError&)> failed;  // at start-up or later (display gone); the thread ends
  std::function<void()> ended;                      // the thread's last act: nothing is called after it
};

// Stable error codes.
inline constexpr const char* kNoDisplay = "NO_DISPLAY";
inline constexpr const char* kNoA11yBus = "NO_ACCESSIBILITY_BUS";
inline constexpr const char* kAppNotFound = "APP_NOT_FOUND";
inline constexpr const char* kNoA11yTree = "NO_ACCESSIBILITY_TREE";
inline constexpr const char* kAppNotResponding = "APP_NOT_RESPONDING";  // its process is stopped
inline constexpr const char* kElementNotFound = "ELEMENT_NOT_FOUND";
inline constexpr const char* kInvalidArgument = "INVALID_ARGUMENT";
inline constexpr const char* kActionFailed = "ACTION_FAILED";
inline constexpr const char* kCaptureFailed = "CAPTURE_FAILED";

}  // namespace runboard::desktop
