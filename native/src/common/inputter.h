// Inputter capability: synthetic mouse and keyboard input at physical screen coordinates.
#pragma once
#include "common/desktop_types.h"

namespace runboard::desktop {

enum class MouseButton { kLeft = 1, kMiddle = 2, kRight = 3 };

// Where the pointer is (whoever moved it: the person, this process, another), physical pixels.
struct PointerInfo {
  int x = 0, y = 0;
  bool onScreen = true;     // false: on another X screen (x/y are then meaningless)
  Rect screen;              // the whole screen (root window)
  bool hasMonitor = false;  // the monitor under the pointer (RandR), when the server reports monitors
  Rect monitor;
  std::string monitorName;
  bool primary = false;
  unsigned int buttons = 0;  // bit 0 = left, 1 = middle, 2 = right held down
};
PointerInfo QueryPointer();

void MoveMouse(int x, int y);
void Click(int x, int y, MouseButton button, int count);
// dx/dy in wheel clicks: dy > 0 scrolls down, dx > 0 scrolls right.
void Scroll(int x, int y, int dx, int dy);
void Drag(int fromX, int fromY, int toX, int toY, int steps, int stepDelayMs, MouseButton button);
// Any Unicode text (UTF-8); characters missing from the layout are mapped onto free keycodes.
void TypeText(const std::string& utf8, int delayMs, bool waitHandled = false);
// A combo such as "ctrl+shift+t", "enter", "alt+F4". With waitHandled, returns once the app holding the
// focus has handled the keys (what it shows afterwards, its focus included, is what the keys made), or
// after a bounded wait when it cannot be asked or does not answer.
void KeyCombo(const std::string& combo, int delayMs, bool waitHandled = false);

}  // namespace runboard::desktop
