// The screen as it was at an input event, on a busy machine too (issue 34). An event reaches the recorder
// after the fact, and a recorder that is behind (starved of CPU, or busy with the events before it) has
// often taken no frame since the screen last changed: "the newest frame before the event" is then older
// than what the person saw when they acted (the name they had just typed, missing from the picture
// before their Tab).
//
// The X server tells the order of things on this one connection: DAMAGE on the root reports each change
// to the screen as an event, queued among the input events in the order the server made them, and a
// frame is placed among them by its GetImage's request serial. So for an input event E the recorder
// knows the newest frame B taken before E and exactly which rectangles of the screen changed between B
// and E. None: B is the screen at E. Some: those rectangles are taken from the first frame A taken
// after E (taken at once when there is none yet, before anything slow): the rest of B is still the
// screen at E, and what the app drew in reply to E outside them is not in the picture. Only a rectangle
// that changed before E and again between E and A shows its later state; A is taken as soon as the
// recorder reads E, so that needs the app to have answered E before the recorder got to read it.
#include "linux/recorder_impl_linux.h"

namespace runboard::desktop {

namespace {

constexpr size_t kMaxDamaged = 4096;  // changes kept; beyond, the oldest are merged into one rectangle

Rect Union(const Rect& a, const Rect& b) {
  int x0 = std::min(a.x, b.x), y0 = std::min(a.y, b.y);
  int x1 = std::max(a.x + a.w, b.x + b.w), y1 = std::max(a.y + a.h, b.y + b.h);
  return Rect{x0, y0, x1 - x0, y1 - y0};
}

}  // namespace

void Recorder::Impl::NoteDamage(const XDamageNotifyEvent& d, unsigned long serial) {
  int x0 = std::max<int>(d.area.x, area.x), y0 = std::max<int>(d.area.y, area.y);
  int x1 = std::min<int>(d.area.x + d.area.width, area.x + area.w);
  int y1 = std::min<int>(d.area.y + d.area.height, area.y + area.h);
  if (x1 <= x0 || y1 <= y0) return;  // outside the recorded area
  damaged.push_back({serial, Rect{x0 - area.x, y0 - area.y, x1 - x0, y1 - y0}});
  damagedCount++;
  // An event still to come is placed after the oldest frame kept: changes before that frame are in it.
  while (!damaged.empty() && !frames.empty() && damaged.front().serial < frames.front().first) damaged.pop_front();
  if (damaged.size() > kMaxDamaged) {
    // Merged, a change counts as late as its newest part: a picture may take more from A, never less.
    Damaged merged = damaged.front();
    for (size_t i = 1; i < kMaxDamaged / 2; i++) merged = {damaged[i].serial, Union(merged.r, damaged[i].r)};
    damaged.erase(damaged.begin(), damaged.begin() + kMaxDamaged / 2);
    damaged.push_front(merged);
  }
}

bool Recorder::Impl::ReportsFrame(const XEvent& ev) const {
  if (ev.type == PropertyNotify) return ev.xproperty.window == stampWindow && ev.xproperty.atom == markAtom;
  if (ev.type != GenericEvent || ev.xcookie.extension != xiOpcode || !ev.xcookie.data) return false;
  const auto* raw = static_cast<const XIRawEvent*>(ev.xcookie.data);
  if (raw->deviceid != raw->sourceid) return false;
  return raw->evtype == XI_RawKeyPress || raw->evtype == XI_RawButtonPress || raw->evtype == XI_RawButtonRelease;
}

bool Recorder::Impl::FrameFirst(const std::vector<XEvent>& batch) const {
  if (!damageEvent) return false;
  bool changed = ChangedSinceNewestFrame();
  for (const XEvent& ev : batch) {
    if (ev.type == damageEvent + XDamageNotify) {
      const auto& d = reinterpret_cast<const XDamageNotifyEvent&>(ev);
      changed = changed || (d.area.x < area.x + area.w && d.area.y < area.y + area.h &&
                            d.area.x + d.area.width > area.x && d.area.y + d.area.height > area.y);
    } else if (changed && ReportsFrame(ev)) {
      return true;
    }
  }
  return false;
}

std::shared_ptr<const RecorderFrame> Recorder::Impl::FrameAt(unsigned long serial) {
  if (!damageEvent || frames.empty()) return FrameBefore(serial);
  // B: the newest frame taken before the event.
  unsigned long beforeSerial = 0;
  std::shared_ptr<const RecorderFrame> before;
  for (auto it = frames.rbegin(); it != frames.rend(); ++it)
    if (it->first <= serial) {
      beforeSerial = it->first;
      before = it->second;
      break;
    }
  if (!before) return frames.front().second;  // (every frame kept is newer: the oldest, as before)
  // What B lacks: every change noted so far came before the event (the connection's order); those the
  // server made after B's GetImage are not in B.
  std::vector<Rect> changed;
  for (auto it = damaged.rbegin(); it != damaged.rend() && it->serial >= beforeSerial; ++it) changed.push_back(it->r);
  if (changed.empty()) return before;
  // A: the first frame taken after the event; none yet: one now.
  std::shared_ptr<const RecorderFrame> after;
  for (const auto& f : frames)
    if (f.first > serial) {
      after = f.second;
      break;
    }
  if (!after) {
    TakeFrame();
    if (!frames.empty() && frames.back().first > serial) after = frames.back().second;
  }
  if (!after) return before;  // (no image: the display is going away)
  if (composed.frame && composed.before == before->id && composed.after == after->id && composed.count == damagedCount)
    return composed.frame;  // events between the same two frames with no change between them
  auto out = std::make_shared<RecorderFrame>(*before);
  out->id = ++nextFrameId;
  const size_t row = static_cast<size_t>(out->width) * 4;
  for (const Rect& r : changed)
    for (int y = r.y; y < r.y + r.h; y++) {
      size_t at = y * row + static_cast<size_t>(r.x) * 4;
      std::memcpy(&out->rgba[at], &after->rgba[at], static_cast<size_t>(r.w) * 4);
    }
  composed = {before->id, after->id, damagedCount, out};
  return out;
}

}  // namespace runboard::desktop
