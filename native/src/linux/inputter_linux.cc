// Inputter on Linux: XTest. Characters missing from the keyboard layout are mapped onto free keycodes
// with one XChangeKeyboardMapping per text and the mapping is kept (restoring it right after typing
// drops characters: apps read the keymap lazily; and every change costs the WM and the server CPU).
// A keycode typed on is mapped to another character only once the app holding the focus has read
// the keys typed so far (AppReadKeys): an app translates a key event with the mapping of the moment it
// reads the event, so a busy app read earlier keys as the later characters (the loaded pass).
#include <X11/XKBlib.h>
#include <X11/Xatom.h>
#include <X11/Xutil.h>
#include <X11/extensions/XTest.h>
#include <X11/keysym.h>

#include <poll.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>

#include "common/inputter.h"
#include "linux/atspi_bus.h"
#include "linux/input_util_linux.h"
#include "linux/keys_handled_linux.h"
#include "linux/x11_session.h"

namespace runboard::desktop {
namespace {

Display* Dpy() {
  auto& s = x11::Session::Get();
  int ev, err, major, minor;
  static bool checked = false;
  if (!checked) {
    if (!XTestQueryExtension(s.dpy(), &ev, &err, &major, &minor))
      throw DesktopError(kNoDisplay, "the X server has no XTest extension: input cannot be injected");
    checked = true;
  }
  return s.dpy();
}

void Pause(Display* d, int ms) {
  if (ms > 0) {
    XFlush(d);
    Sleep(ms);
  }
}

KeySym KeysymFor(uint32_t cp) {
  if (cp == '\n' || cp == '\r') return XK_Return;
  if (cp == '\t') return XK_Tab;
  if (cp == '\b') return XK_BackSpace;
  if ((cp >= 0x20 && cp <= 0x7e) || (cp >= 0xa0 && cp <= 0xff)) return cp;
  return 0x01000000 | cp;
}

std::vector<uint32_t> DecodeUtf8(const std::string& s) {
  std::vector<uint32_t> out;
  for (size_t i = 0; i < s.size();) {
    unsigned char c = s[i];
    uint32_t cp;
    int len;
    if (c < 0x80) cp = c, len = 1;
    else if ((c >> 5) == 6) cp = c & 0x1f, len = 2;
    else if ((c >> 4) == 14) cp = c & 0x0f, len = 3;
    else if ((c >> 3) == 30) cp = c & 0x07, len = 4;
    else throw DesktopError(kInvalidArgument, "the text is not valid UTF-8");
    if (i + len > s.size()) throw DesktopError(kInvalidArgument, "the text is not valid UTF-8");
    for (int k = 1; k < len; k++) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3f);
    out.push_back(cp);
    i += len;
  }
  return out;
}

struct KeyStroke {
  KeyCode code = 0;
  bool shift = false;
};

// Finds keystrokes for keysyms; maps the missing ones onto free keycodes in one mapping change.
class Keymap {
 public:
  std::vector<KeyStroke> Resolve(Display* d, const std::vector<KeySym>& syms) {
    std::vector<KeyStroke> out(syms.size());
    std::vector<KeySym> missing;
    for (size_t i = 0; i < syms.size(); i++) {
      if (!Find(d, syms[i], out[i]) && std::find(missing.begin(), missing.end(), syms[i]) == missing.end())
        missing.push_back(syms[i]);
    }
    if (missing.empty()) return out;
    Map(d, missing, syms);
    for (size_t i = 0; i < syms.size(); i++)
      if (!out[i].code && !Find(d, syms[i], out[i]))
        throw DesktopError(kInvalidArgument, "cannot map a key for keysym 0x" + Hex(syms[i]));
    return out;
  }

  // Keycodes that can carry a mapped character: empty ones and ones mapped by us (this or an earlier
  // process). A text with more distinct such characters is typed in chunks of at most this many.
  int UsableSlots(Display* d) {
    int minCode, maxCode, per;
    XDisplayKeycodes(d, &minCode, &maxCode);
    KeySym* map = XGetKeyboardMapping(d, minCode, maxCode - minCode + 1, &per);
    if (!map) return 0;
    int n = 0;
    for (int c = minCode; c <= maxCode; c++) {
      const KeySym* k = &map[(c - minCode) * per];
      bool empty = true;
      for (int j = 0; j < per; j++) empty = empty && k[j] == NoSymbol;
      if (empty || IsOurs(k, per)) n++;
    }
    XFree(map);
    return n;
  }

  // Our signature: one Unicode keysym beyond Latin-1 on every level it has (the server's XKB layer may
  // copy the two levels we set into the second group's columns).
  static bool IsOurs(const KeySym* k, int per) {
    bool ours = per >= 2 && k[0] >= 0x01000100 && k[0] == k[1];
    for (int j = 2; j < per && ours; j++) ours = k[j] == NoSymbol || k[j] == k[0];
    return ours;
  }

 private:
  static std::string Hex(KeySym k) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "%lx", k);
    return buf;
  }

  bool Find(Display* d, KeySym sym, KeyStroke& ks) {
    auto mine = mapped_.find(sym);
    if (mine != mapped_.end()) {
      ks = {mine->second, false};
      return true;
    }
    KeyCode code = XKeysymToKeycode(d, sym);
    if (!code) return false;
    if (XkbKeycodeToKeysym(d, code, 0, 0) == sym) ks = {code, false};
    else if (XkbKeycodeToKeysym(d, code, 0, 1) == sym) ks = {code, true};
    else return false;  // only on a level we do not drive (AltGr...): map it
    return true;
  }

  void Map(Display* d, const std::vector<KeySym>& syms, const std::vector<KeySym>& keep) {
    int minCode, maxCode, per;
    XDisplayKeycodes(d, &minCode, &maxCode);
    KeySym* map = XGetKeyboardMapping(d, minCode, maxCode - minCode + 1, &per);
    if (!map) throw DesktopError(kNoDisplay, "cannot read the keyboard mapping");
    // Free keycodes: no keysym at all. Codes we mapped before (in this process) are reused last.
    std::vector<int> free;
    for (int c = maxCode; c >= minCode; c--) {
      bool empty = true;
      for (int k = 0; k < per; k++) empty = empty && map[(c - minCode) * per + k] == NoSymbol;
      if (empty) free.push_back(c);
    }
    const size_t unused = free.size();
    if (free.size() < syms.size()) {
      // Slots an earlier process mapped (our signature: one Unicode keysym on the first two levels,
      // nothing else) and this text does not need.
      for (int c = maxCode; c >= minCode && free.size() < syms.size() + 8; c--) {
        const KeySym* k = &map[(c - minCode) * per];
        if (IsOurs(k, per) && std::find(keep.begin(), keep.end(), k[0]) == keep.end() &&
            std::find(free.begin(), free.end(), c) == free.end() && !mapped_.count(k[0]))
          free.push_back(c);
      }
    }
    if (free.size() < syms.size()) {  // recycle our own oldest slots
      for (auto& [sym, code] : order_) {
        if (free.size() >= syms.size()) break;
        if (std::find(keep.begin(), keep.end(), sym) != keep.end()) continue;
        free.push_back(code);
        mapped_.erase(sym);
      }
    }
    if (std::min(free.size(), syms.size()) > unused) {
      // Slots taken back (ours or an earlier process's, which may have typed on them a moment ago):
      // apps read key events lazily and translate them with the mapping of the moment they read
      // them, so the app must have read what was typed on those keycodes before they change.
      AppReadKeys(d);
    }
    if (free.size() < syms.size()) {
      XFree(map);
      throw DesktopError(kInvalidArgument, "too many distinct characters missing from the keyboard layout (" +
                                               std::to_string(syms.size()) + " to map, " + std::to_string(free.size()) +
                                               " keycodes free)");
    }
    int lo = maxCode, hi = minCode;
    for (size_t i = 0; i < syms.size(); i++) {
      int c = free[i];
      for (int k = 0; k < per; k++) map[(c - minCode) * per + k] = k < 2 ? syms[i] : NoSymbol;
      lo = std::min(lo, c);
      hi = std::max(hi, c);
      mapped_[syms[i]] = static_cast<KeyCode>(c);
      order_.erase(std::remove_if(order_.begin(), order_.end(), [&](auto& p) { return p.second == c; }), order_.end());
      order_.push_back({syms[i], static_cast<KeyCode>(c)});
    }
    XChangeKeyboardMapping(d, lo, per, map + (lo - minCode) * per, hi - lo + 1);
    XFree(map);
    XSync(d, False);
  }

  std::map<KeySym, KeyCode> mapped_;
  std::vector<std::pair<KeySym, KeyCode>> order_;
};

Keymap& TheKeymap() {
  static Keymap k;
  return k;
}

void Tap(Display* d, const KeyStroke& ks, int delayMs) {
  static KeyCode shift = XKeysymToKeycode(d, XK_Shift_L);
  if (ks.shift) XTestFakeKeyEvent(d, shift, True, 0);
  XTestFakeKeyEvent(d, ks.code, True, 0);
  XTestFakeKeyEvent(d, ks.code, False, 0);
  if (ks.shift) XTestFakeKeyEvent(d, shift, False, 0);
  Pause(d, delayMs);
}

KeySym NamedKey(std::string name) {
  if (DecodeUtf8(name).size() == 1) {
    uint32_t cp = DecodeUtf8(name)[0];
    if (cp < 0x80) cp = std::tolower(static_cast<int>(cp));
    return KeysymFor(cp);
  }
  std::string lower = name;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  static const std::map<std::string, KeySym> names = {
      {"ctrl", XK_Control_L},
      {"control", XK_Control_L},
      {"cmd", XK_Control_L},
      {"command", XK_Control_L},
      {"shift", XK_Shift_L},
      {"alt", XK_Alt_L},
      {"option", XK_Alt_L},
      {"opt", XK_Alt_L},
      {"super", XK_Super_L},
      {"win", XK_Super_L},
      {"meta", XK_Super_L},
      {"enter", XK_Return},
      {"return", XK_Return},
      {"tab", XK_Tab},
      {"esc", XK_Escape},
      {"escape", XK_Escape},
      {"backspace", XK_BackSpace},
      {"delete", XK_Delete},
      {"del", XK_Delete},
      {"space", XK_space},
      {"up", XK_Up},
      {"down", XK_Down},
      {"left", XK_Left},
      {"right", XK_Right},
      {"home", XK_Home},
      {"end", XK_End},
      {"pageup", XK_Prior},
      {"pgup", XK_Prior},
      {"pagedown", XK_Next},
      {"pgdn", XK_Next},
      {"insert", XK_Insert},
      {"menu", XK_Menu},
      {"plus", XK_plus},
      {"minus", XK_minus},
  };
  auto it = names.find(lower);
  if (it != names.end()) return it->second;
  if (lower.size() >= 2 && lower[0] == 'f' && std::all_of(lower.begin() + 1, lower.end(), ::isdigit)) {
    int n = std::atoi(lower.c_str() + 1);
    if (n >= 1 && n <= 35) return XK_F1 + (n - 1);
  }
  KeySym ks = XStringToKeysym(name.c_str());
  if (ks == NoSymbol) throw DesktopError(kInvalidArgument, "unknown key \"" + name + "\"");
  return ks;
}

}  // namespace

PointerInfo QueryPointer() {
  auto& s = x11::Session::Get();
  PointerInfo p;
  Window rootRet = 0, child = 0;
  int wx = 0, wy = 0;
  unsigned int mask = 0;
  p.onScreen = XQueryPointer(s.dpy(), s.root(), &rootRet, &child, &p.x, &p.y, &wx, &wy, &mask);
  p.screen = {0, 0, s.screenWidth(), s.screenHeight()};
  p.buttons = ((mask & Button1Mask) ? 1u : 0u) | ((mask & Button2Mask) ? 2u : 0u) | ((mask & Button3Mask) ? 4u : 0u);
  if (p.onScreen) p.hasMonitor = x11::MonitorAt(s.dpy(), s.root(), p.x, p.y, &p.monitor, &p.monitorName, &p.primary);
  return p;
}

// The pointer buttons held now (core state mask: Button1Mask...).
unsigned ButtonsDown(Display* d) {
  Window root = 0, child = 0;
  int rx, ry, wx, wy;
  unsigned mask = 0;
  XQueryPointer(d, DefaultRootWindow(d), &root, &child, &rx, &ry, &wx, &wy, &mask);
  return mask & (Button1Mask | Button2Mask | Button3Mask | Button4Mask | Button5Mask);
}

unsigned ButtonMask(MouseButton button) {
  unsigned b = static_cast<unsigned>(button);
  return b >= 1 && b <= 5 ? Button1Mask << (b - 1) : 0;
}

// Returns once the server has taken the release of the buttons in `mask` (those this process pressed).
// A window manager that focuses on click (openbox: Focus and Raise on Press) grabs the buttons of
// client windows synchronously: the press freezes the pointer until the manager replays it to the app,
// while keys typed meanwhile go straight through. A click that focused a field then reached the app
// after the first keys typed into it and moved its cursor among them (characters out of order). The
// release is processed only when the freeze ends, after the press went to the app: a button seen up
// means the click was delivered. A manager that never replays is waited for kAppReadLimitMs.
void ClickDelivered(Display* d, unsigned mask) {
  if (!mask) return;
  auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(kAppReadLimitMs);
  while (ButtonsDown(d) & mask) {
    if (std::chrono::steady_clock::now() >= until) {
      if (Trace()) std::fprintf(stderr, "click: the pointer stayed frozen; going on\n");
      return;
    }
    Sleep(2);
  }
}

void MoveMouse(int x, int y) {
  Display* d = Dpy();
  XTestFakeMotionEvent(d, -1, x, y, 0);
  XSync(d, False);
}

void Click(int x, int y, MouseButton button, int count) {
  Display* d = Dpy();
  // GTK drops the first press of a multi-press that starts, within its double-click time, far from
  // the previous click: after such a click from this process, wait the double-click time out.
  static auto lastTime = std::chrono::steady_clock::time_point();
  static int lastX = -10000, lastY = -10000;
  auto now = std::chrono::steady_clock::now();
  if (count > 1 && (std::abs(x - lastX) > 4 || std::abs(y - lastY) > 4)) {
    auto since = std::chrono::duration_cast<std::chrono::milliseconds>(now - lastTime).count();
    if (since < 450) Sleep(static_cast<int>(450 - since));
  }
  // a button someone holds already (a person's) is not waited for
  const unsigned ours = ButtonMask(button) & ~ButtonsDown(d);
  XTestFakeMotionEvent(d, -1, x, y, 0);
  for (int i = 0; i < std::max(1, count); i++) {
    // Toolkits see a double click only when the clicks are apart in time as a person's are (GTK took
    // back-to-back XTest clicks as one).
    if (i > 0) Pause(d, 40);
    XTestFakeButtonEvent(d, static_cast<unsigned>(button), True, 0);
    XTestFakeButtonEvent(d, static_cast<unsigned>(button), False, 0);
  }
  XSync(d, False);
  ClickDelivered(d, ours);
  lastTime = std::chrono::steady_clock::now();
  lastX = x;
  lastY = y;
}

void Scroll(int x, int y, int dx, int dy) {
  Display* d = Dpy();
  XTestFakeMotionEvent(d, -1, x, y, 0);
  auto wheel = [&](unsigned b, int n) {
    for (int i = 0; i < n; i++) {
      XTestFakeButtonEvent(d, b, True, 0);
      XTestFakeButtonEvent(d, b, False, 0);
    }
  };
  wheel(dy > 0 ? 5 : 4, std::abs(dy));
  wheel(dx > 0 ? 7 : 6, std::abs(dx));
  XSync(d, False);
}

void Drag(int fromX, int fromY, int toX, int toY, int steps, int stepDelayMs, MouseButton button) {
  Display* d = Dpy();
  steps = std::max(1, steps);
  const unsigned ours = ButtonMask(button) & ~ButtonsDown(d);
  XTestFakeMotionEvent(d, -1, fromX, fromY, 0);
  Pause(d, stepDelayMs);
  XTestFakeButtonEvent(d, static_cast<unsigned>(button), True, 0);
  Pause(d, stepDelayMs);
  for (int i = 1; i <= steps; i++) {
    XTestFakeMotionEvent(d, -1, fromX + (toX - fromX) * i / steps, fromY + (toY - fromY) * i / steps, 0);
    Pause(d, stepDelayMs);
  }
  XTestFakeButtonEvent(d, static_cast<unsigned>(button), False, 0);
  XSync(d, False);
  ClickDelivered(d, ours);
}

void TypeText(const std::string& utf8, int delayMs, bool waitHandled) {
  Display* d = Dpy();
  std::vector<KeySym> syms;
  for (uint32_t cp : DecodeUtf8(utf8)) syms.push_back(KeysymFor(cp));
  // Chunks with no more distinct characters than there are keycodes to map them on.
  size_t limit = std::max(1, TheKeymap().UsableSlots(d));
  if (Trace()) std::fprintf(stderr, "type: %zu usable keycodes\n", limit);
  for (size_t start = 0; start < syms.size();) {
    std::vector<KeySym> distinct;
    size_t end = start;
    for (; end < syms.size(); end++) {
      if (std::find(distinct.begin(), distinct.end(), syms[end]) != distinct.end()) continue;
      if (distinct.size() == limit) break;
      distinct.push_back(syms[end]);
    }
    std::vector<KeySym> chunk(syms.begin() + start, syms.begin() + end);
    auto strokes = TheKeymap().Resolve(d, chunk);
    for (auto& ks : strokes) Tap(d, ks, delayMs);
    XSync(d, False);
    start = end;
  }
  // As KeyCombo: what the app shows after the text is read only once it has handled the keys.
  if (waitHandled && !syms.empty() && KeysGoToAWindow(d)) AppReadKeys(d, true);
}

void KeyCombo(const std::string& combo, int delayMs, bool waitHandled) {
  Display* d = Dpy();
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= combo.size()) {
    size_t plus = combo.find('+', start);
    if (plus == start && plus + 1 == combo.size()) plus = std::string::npos;  // "ctrl++": the key is '+'
    std::string part = combo.substr(start, plus == std::string::npos ? std::string::npos : plus - start);
    if (part.empty()) throw DesktopError(kInvalidArgument, "bad key combination \"" + combo + "\"");
    parts.push_back(part);
    if (plus == std::string::npos) break;
    start = plus + 1;
  }
  std::vector<KeySym> syms;
  for (auto& p : parts) syms.push_back(NamedKey(p));
  auto strokes = TheKeymap().Resolve(d, syms);
  // A key that sits on the shift level ("ctrl+!") needs shift held too, unless the combo has it.
  KeyCode shift = XKeysymToKeycode(d, XK_Shift_L);
  bool hasShift = std::any_of(strokes.begin(), strokes.end(), [&](const KeyStroke& k) { return k.code == shift; });
  if (!hasShift && std::any_of(strokes.begin(), strokes.end(), [](const KeyStroke& k) { return k.shift; }))
    strokes.insert(strokes.begin(), KeyStroke{shift, false});
  for (auto& ks : strokes) {  // press in order, release in reverse
    XTestFakeKeyEvent(d, ks.code, True, 0);
    Pause(d, delayMs);
  }
  for (auto it = strokes.rbegin(); it != strokes.rend(); ++it) {
    XTestFakeKeyEvent(d, it->code, False, 0);
    Pause(d, delayMs);
  }
  XSync(d, False);
  // A ping's answer comes after GDK dispatched every key before it (decision 110; not with an async
  // input method such as IBus). A stopped app is not waited for: reads refuse it at once anyway.
  if (waitHandled && KeysGoToAWindow(d)) AppReadKeys(d, true);
}

}  // namespace runboard::desktop
