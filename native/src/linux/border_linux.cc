// The recording border (border_linux.h): four click-through override-redirect windows, kept on top,
// and the frames of the recorded area repainted without them from the windows' own (Composite) images.
#include "linux/border_linux.h"

#include <X11/Xatom.h>
#include <X11/Xutil.h>
#include <X11/extensions/Xcomposite.h>
#include <X11/extensions/shape.h>

#include <algorithm>

namespace runboard::desktop::x11 {

namespace {

constexpr unsigned long kRed = 0xe0241b;

Rect Intersect(const Rect& a, const Rect& b) {
  int x0 = std::max(a.x, b.x), y0 = std::max(a.y, b.y);
  int x1 = std::min(a.x + a.w, b.x + b.w), y1 = std::min(a.y + a.h, b.y + b.h);
  return x1 > x0 && y1 > y0 ? Rect{x0, y0, x1 - x0, y1 - y0} : Rect{};
}

// Where a mask's bits start and how many there are (TrueColor channels).
void MaskShape(unsigned long mask, int* shift, int* bits) {
  *shift = 0;
  *bits = 0;
  if (!mask) return;
  while (!(mask & 1)) mask >>= 1, ++*shift;
  while (mask & 1) mask >>= 1, ++*bits;
}

// Copies an XImage (of `at`, screen coordinates) into the RGBA frame of `area`.
void CopyInto(XImage* img, const Rect& at, std::vector<uint8_t>& rgba, const Rect& area) {
  int rs, rb, gs, gb, bs, bb;
  MaskShape(img->red_mask, &rs, &rb);
  MaskShape(img->green_mask, &gs, &gb);
  MaskShape(img->blue_mask, &bs, &bb);
  auto channel = [](unsigned long p, int shift, int bits) -> uint8_t {
    if (!bits) return 0;
    unsigned long v = (p >> shift) & ((1ul << bits) - 1);
    return static_cast<uint8_t>(bits >= 8 ? v >> (bits - 8) : v * 255 / ((1ul << bits) - 1));
  };
  for (int y = 0; y < at.h; y++) {
    uint8_t* out = &rgba[(static_cast<size_t>(at.y - area.y + y) * area.w + (at.x - area.x)) * 4];
    for (int x = 0; x < at.w; x++, out += 4) {
      unsigned long p = XGetPixel(img, x, y);
      out[0] = channel(p, rs, rb);
      out[1] = channel(p, gs, gb);
      out[2] = channel(p, bs, bb);
      out[3] = 255;
    }
  }
}

}  // namespace

RecordingBorder::RecordingBorder(Display* dpy, Window root, Rect area, int width)
    : dpy_(dpy), root_(root), area_(area), width_(std::max(1, std::min({width, area.w / 2, area.h / 2}))) {
  int ev = 0, err = 0, major = 0, minor = 2;
  if (XCompositeQueryExtension(dpy, &ev, &err) && XCompositeQueryVersion(dpy, &major, &minor) &&
      (major > 0 || minor >= 2)) {
    XCompositeRedirectSubwindows(dpy, root, CompositeRedirectAutomatic);
    composite_ = true;
  }
  const int w = width_;
  strips_ = {{area.x, area.y, area.w, w},
             {area.x, area.y + area.h - w, area.w, w},
             {area.x, area.y + w, w, area.h - 2 * w},
             {area.x + area.w - w, area.y + w, w, area.h - 2 * w}};
  int scr = DefaultScreen(dpy);
  XColor red{};
  red.red = static_cast<unsigned short>(((kRed >> 16) & 0xff) * 257);
  red.green = static_cast<unsigned short>(((kRed >> 8) & 0xff) * 257);
  red.blue = static_cast<unsigned short>((kRed & 0xff) * 257);
  XAllocColor(dpy, DefaultColormap(dpy, scr), &red);
  bool shape = XShapeQueryExtension(dpy, &ev, &err);
  Atom type = XInternAtom(dpy, "_NET_WM_WINDOW_TYPE", False);
  Atom notification = XInternAtom(dpy, "_NET_WM_WINDOW_TYPE_NOTIFICATION", False);
  for (const Rect& s : strips_) {
    if (s.w <= 0 || s.h <= 0) continue;
    XSetWindowAttributes a{};
    a.background_pixel = red.pixel;  // the server paints it: nothing to draw, no Expose to answer
    a.override_redirect = True;
    Window win = XCreateWindow(dpy, root, s.x, s.y, s.w, s.h, 0, CopyFromParent, InputOutput, CopyFromParent,
                               CWBackPixel | CWOverrideRedirect, &a);
    XWMHints hints{};
    hints.flags = InputHint;
    hints.input = False;
    XSetWMHints(dpy, win, &hints);
    XStoreName(dpy, win, "Runboard recording border");
    XChangeProperty(dpy, win, type, XA_ATOM, 32, PropModeReplace, reinterpret_cast<unsigned char*>(&notification), 1);
    // Click-through: an empty input region (without SHAPE the strips take the clicks on them).
    if (shape) XShapeCombineRectangles(dpy, win, ShapeInput, 0, 0, nullptr, 0, ShapeSet, Unsorted);
    windows_.push_back(win);
  }
  for (Window win : windows_) XMapRaised(dpy, win);
  XSelectInput(dpy, root, SubstructureNotifyMask);
  XSync(dpy, False);
}

RecordingBorder::~RecordingBorder() {
  if (!dpy_) return;
  XSelectInput(dpy_, root_, NoEventMask);
  for (Window win : windows_) XDestroyWindow(dpy_, win);
  if (composite_) XCompositeUnredirectSubwindows(dpy_, root_, CompositeRedirectAutomatic);
  XSync(dpy_, False);
}

bool RecordingBorder::Owns(Window w) const { return std::find(windows_.begin(), windows_.end(), w) != windows_.end(); }

void RecordingBorder::Raise() {
  for (Window win : windows_) XRaiseWindow(dpy_, win);
}

bool RecordingBorder::Handle(const XEvent& ev) {
  switch (ev.type) {
    case MapNotify:
      if (!Owns(ev.xmap.window)) Raise();
      return true;
    case ConfigureNotify:
      if (!Owns(ev.xconfigure.window)) Raise();
      return true;
    case CirculateNotify:
      if (!Owns(ev.xcirculate.window)) Raise();
      return true;
    case UnmapNotify:
    case DestroyNotify:
    case CreateNotify:
    case ReparentNotify:
    case GravityNotify:
      return true;
    default:
      return false;
  }
}

void RecordingBorder::Smear(std::vector<uint8_t>& rgba, const Rect& area, const Rect& strip) {
  const Rect inner{area_.x + width_, area_.y + width_, area_.w - 2 * width_, area_.h - 2 * width_};
  if (inner.w <= 0 || inner.h <= 0) return;
  for (int y = strip.y; y < strip.y + strip.h; y++) {
    int sy = std::clamp(y, inner.y, inner.y + inner.h - 1);
    for (int x = strip.x; x < strip.x + strip.w; x++) {
      int sx = std::clamp(x, inner.x, inner.x + inner.w - 1);
      if (sx < area.x || sy < area.y || sx >= area.x + area.w || sy >= area.y + area.h) continue;
      std::copy_n(&rgba[(static_cast<size_t>(sy - area.y) * area.w + (sx - area.x)) * 4], 4,
                  &rgba[(static_cast<size_t>(y - area.y) * area.w + (x - area.x)) * 4]);
    }
  }
}

void RecordingBorder::PaintBeneath(std::vector<uint8_t>& rgba, const Rect& area) {
  std::vector<Rect> strips;
  for (const Rect& s : strips_) {
    Rect r = Intersect(s, area);
    if (r.w > 0) strips.push_back(r);
  }
  if (strips.empty()) return;
  if (!composite_) {
    for (const Rect& s : strips) Smear(rgba, area, s);
    return;
  }
  // The desktop's background first (a wallpaper set as _XROOTPMAP_ID, else black), then every viewable
  // top-level window from the bottom of the stack up, each from its own image.
  for (const Rect& s : strips)
    for (int y = 0; y < s.h; y++) {
      uint8_t* row = &rgba[(static_cast<size_t>(s.y - area.y + y) * area.w + (s.x - area.x)) * 4];
      for (int x = 0; x < s.w; x++) row[x * 4] = row[x * 4 + 1] = row[x * 4 + 2] = 0, row[x * 4 + 3] = 255;
    }
  Atom type = None;
  int format = 0;
  unsigned long n = 0, after = 0;
  unsigned char* data = nullptr;
  Atom rootPixmap = XInternAtom(dpy_, "_XROOTPMAP_ID", True);
  if (rootPixmap != None &&
      XGetWindowProperty(dpy_, root_, rootPixmap, 0, 1, False, XA_PIXMAP, &type, &format, &n, &after, &data) ==
          Success &&
      data && n == 1 && format == 32) {
    Pixmap wallpaper = *reinterpret_cast<Pixmap*>(data);
    for (const Rect& s : strips)
      if (XImage* img = XGetImage(dpy_, wallpaper, s.x, s.y, s.w, s.h, AllPlanes, ZPixmap)) {
        CopyInto(img, s, rgba, area);
        XDestroyImage(img);
      }
  }
  if (data) XFree(data);
  Window r = 0, parent = 0, *kids = nullptr;
  unsigned count = 0;
  if (!XQueryTree(dpy_, root_, &r, &parent, &kids, &count)) return;
  for (unsigned i = 0; i < count; i++) {
    if (Owns(kids[i])) continue;
    XWindowAttributes wa;
    if (!XGetWindowAttributes(dpy_, kids[i], &wa) || wa.map_state != IsViewable || wa.c_class != InputOutput) continue;
    const int bw = wa.border_width;
    const Rect outer{wa.x, wa.y, wa.width + 2 * bw, wa.height + 2 * bw};
    for (const Rect& s : strips) {
      Rect part = Intersect(outer, s);
      if (part.w <= 0) continue;
      // Relative to the window's inside corner; a redirected window answers from its own pixmap.
      XImage* img =
          XGetImage(dpy_, kids[i], part.x - wa.x - bw, part.y - wa.y - bw, part.w, part.h, AllPlanes, ZPixmap);
      if (!img) continue;  // gone meanwhile
      CopyInto(img, part, rgba, area);
      XDestroyImage(img);
    }
  }
  if (kids) XFree(kids);
}

}  // namespace runboard::desktop::x11
