// The red border a recording shows around the recorded area (seed 000), and capture without it.
//
// What a person sees on X11 is the screen's framebuffer, which is also what every grab of the root
// window (ours, ffmpeg's x11grab) reads: a border that is visible is in the grab. So the border is made
// of four thin override-redirect windows (never managed or focused, an empty XShape input region so
// clicks fall through), and the top-level windows are redirected with the Composite extension
// (automatic mode: the server still draws the screen as before, and several clients may ask for it): each
// then keeps its whole image in a pixmap of its own, hidden parts included. PaintBeneath() redraws the
// border's strips of a grabbed frame from the windows below the border, bottom to top, which is exactly
// what the screen would show there without it. Without Composite the strips repeat their inner
// neighbours' pixels (nothing below them is kept anywhere). Internal to the Linux recorder; it uses the
// recorder thread's Display and lives as long as it (the X server removes the windows and the
// redirection when the connection closes, so a crash leaves no border behind).
#pragma once
#include <X11/Xlib.h>

#include <cstdint>
#include <vector>

#include "common/desktop_types.h"

namespace runboard::desktop::x11 {

class RecordingBorder {
 public:
  // Shows a border `width` pixels thick just inside `area` (screen coordinates).
  RecordingBorder(Display* dpy, Window root, Rect area, int width);
  ~RecordingBorder();
  RecordingBorder(const RecordingBorder&) = delete;
  RecordingBorder& operator=(const RecordingBorder&) = delete;

  // An event of the root's substructure (the constructor selects them): another window mapped or
  // restacked puts the border back on top. True when it was such an event.
  bool Handle(const XEvent& ev);
  // Redraws the border's strips of `rgba` (rows of `area.w * 4` bytes, the frame of `area`) from what is
  // below the border.
  void PaintBeneath(std::vector<uint8_t>& rgba, const Rect& area);
  bool Owns(Window w) const;
  // The display is gone: the destructor then touches nothing.
  void Abandon() { dpy_ = nullptr; }

 private:
  void Raise();
  void Smear(std::vector<uint8_t>& rgba, const Rect& area, const Rect& strip);
  Display* dpy_;
  Window root_;
  Rect area_;
  int width_;
  bool composite_ = false;
  std::vector<Window> windows_;
  std::vector<Rect> strips_;
};

}  // namespace runboard::desktop::x11
