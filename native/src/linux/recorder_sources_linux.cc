// The Linux recorder's sources of an event's details, beside the thread that runs it (recorder_linux.cc):
// XRecord for where the pointer was at a button event, the AT-SPI bus for the focus timeline, and the
// top-level client window an event went to.
#include "linux/atspi_bus.h"
#include "linux/recorder_impl_linux.h"

namespace runboard::desktop {

namespace {

void OnRecorded(XPointer closure, XRecordInterceptData* d) {
  auto* impl = reinterpret_cast<Recorder::Impl*>(closure);
  if (d->category == XRecordFromServer && d->data && d->data_len * 4 >= sizeof(xEvent)) {
    const auto* ev = reinterpret_cast<const xEvent*>(d->data);
    int type = ev->u.u.type & 0x7f;
    impl->pointerLog.push_back({type, ev->u.u.detail, static_cast<unsigned long>(ev->u.keyButtonPointer.time),
                                ev->u.keyButtonPointer.rootX, ev->u.keyButtonPointer.rootY});
    if (impl->pointerLog.size() > 512) impl->pointerLog.pop_front();
  }
  XRecordFreeData(d);
}

}  // namespace

// The AT-SPI bus (atspi::BusAddress, as the reader finds it). A recording without it still records; its
// steps then say their focus could not be followed.
void Recorder::Impl::StartFocus() {
  if (!callbacks.focus) return;
  auto fail = [this](const std::string& why) {
    RecordedFocus f;
    f.error = why;
    callbacks.focus(f);
  };
  std::string address;
  try {
    address = atspi::BusAddress([this] {  // the root window's property, on this thread's own connection
      std::string out;
      Atom type = None;
      int format = 0;
      unsigned long n = 0, after = 0;
      unsigned char* data = nullptr;
      if (XGetWindowProperty(dpy, root, XInternAtom(dpy, "AT_SPI_BUS", False), 0, 1024, False, AnyPropertyType, &type,
                             &format, &n, &after, &data) == Success &&
          data && format == 8)
        out.assign(reinterpret_cast<char*>(data), n);
      if (data) XFree(data);
      return out;
    });
  } catch (const DesktopError& e) { return fail(e.what()); }
  try {
    focusListener = std::make_unique<FocusListener>(
        address, [this](int64_t mono) { return static_cast<unsigned long>(mono - monoMinusServer.load()); },
        callbacks.focus);
  } catch (const DesktopError& e) { fail(e.what()); }
}

// XRecord on a data connection of its own (its replies never end); without the extension, button
// positions fall back to XQueryPointer.
void Recorder::Impl::OpenRecord() {
  int major = 0, minor = 0;
  if (!XRecordQueryVersion(dpy, &major, &minor)) return;
  rec = XOpenDisplay(DisplayString(dpy));
  if (!rec) return;
  XSetIOErrorExitHandler(rec, Impl::NoteLost, this);
  XRecordRange* range = XRecordAllocRange();
  if (!range) return;
  range->device_events.first = ButtonPress;
  range->device_events.last = ButtonRelease;
  XRecordClientSpec clients = XRecordAllClients;
  recContext = XRecordCreateContext(dpy, 0, &clients, 1, &range, 1);
  XFree(range);
  XSync(dpy, False);
  if (!recContext || !XRecordEnableContextAsync(rec, recContext, OnRecorded, reinterpret_cast<XPointer>(this))) {
    if (recContext) XRecordFreeContext(dpy, recContext);
    recContext = 0;
    x11::CloseDisplay(rec);
    rec = nullptr;
  }
}

// Where the pointer was at a raw button event: XRecord's copy of the same event (same server time and
// button), waiting up to ~50 ms for it to arrive on its connection.
bool Recorder::Impl::PointerOf(const XIRawEvent* raw, int* x, int* y) {
  if (!rec) return false;
  int type = raw->evtype == XI_RawButtonPress ? ButtonPress : ButtonRelease;
  for (int attempt = 0; attempt < 10 && !lost; attempt++) {
    XPending(rec);
    XRecordProcessReplies(rec);
    for (auto it = pointerLog.rbegin(); it != pointerLog.rend(); ++it) {
      if (it->type == type && it->button == raw->detail && it->time == raw->time) {
        *x = it->x;
        *y = it->y;
        return true;
      }
      if (it->time < raw->time) break;
    }
    pollfd p{ConnectionNumber(rec), POLLIN, 0};
    poll(&p, 1, 5);
  }
  return false;
}

// The top-level client window (the one with WM_STATE) holding `w`, or the root's child when none has.
Window Recorder::Impl::ClientOf(Window w) {
  if (!w || w == root || w == PointerRoot) return 0;
  for (;;) {  // up to the root's child (the frame the window manager put around the client)
    Window r = 0, parent = 0, *kids = nullptr;
    unsigned n = 0;
    if (!XQueryTree(dpy, w, &r, &parent, &kids, &n)) return 0;
    if (kids) XFree(kids);
    if (parent == root || !parent) break;
    w = parent;
  }
  Atom wmState = XInternAtom(dpy, "WM_STATE", False);
  std::deque<std::pair<Window, int>> todo{{w, 0}};
  while (!todo.empty()) {  // breadth first: the client sits one or two levels below the frame
    auto [cur, depth] = todo.front();
    todo.pop_front();
    Atom type = None;
    int format = 0;
    unsigned long n = 0, after = 0;
    unsigned char* data = nullptr;
    if (XGetWindowProperty(dpy, cur, wmState, 0, 0, False, AnyPropertyType, &type, &format, &n, &after, &data) ==
            Success &&
        type != None) {
      if (data) XFree(data);
      return cur;
    }
    if (data) XFree(data);
    if (depth >= 3) continue;
    Window r = 0, parent = 0, *kids = nullptr;
    unsigned count = 0;
    if (XQueryTree(dpy, cur, &r, &parent, &kids, &count) && kids) {
      for (unsigned i = 0; i < count; i++) todo.emplace_back(kids[i], depth + 1);
      XFree(kids);
    }
  }
  return w;
}

// A map, move, resize or unmap of a top-level window, reported with its client and its frame's
// rectangle. A round trip or two only when a frame is first seen (its client, as ClientOf finds an
// event's); a move is the event's own numbers. A restack (the same rectangle) is not reported.
void Recorder::Impl::NoteWindow(const XEvent& ev) {
  if (!callbacks.window || stampSeen) return;
  Window frame = 0;
  bool mapped = true;
  Rect bounds;
  switch (ev.type) {
    case MapNotify:
      if (ev.xmap.event != root || ev.xmap.override_redirect) return;
      frame = ev.xmap.window;
      break;
    case ConfigureNotify: {
      const XConfigureEvent& c = ev.xconfigure;
      if (c.event != root || c.override_redirect) return;
      frame = c.window;
      bounds = {c.x, c.y, c.width + 2 * c.border_width, c.height + 2 * c.border_width};
      break;
    }
    case UnmapNotify:
      if (ev.xunmap.event != root) return;
      frame = ev.xunmap.window;
      mapped = false;
      break;
    case DestroyNotify:
      if (ev.xdestroywindow.event != root) return;
      frame = ev.xdestroywindow.window;
      mapped = false;
      break;
    default:
      return;
  }
  if (frame == stampWindow || (border && border->Owns(frame))) return;
  auto it = shown.find(frame);
  if (!mapped) {
    if (it == shown.end()) return;
    RecordedWindow w{it->second.client, it->second.bounds, false};
    shown.erase(it);
    callbacks.window(w);
    return;
  }
  if (it == shown.end()) {
    // First seen (mapped now, or before the recording began): only a viewable frame of the manager's.
    XWindowAttributes a{};
    if (!XGetWindowAttributes(dpy, frame, &a) || a.map_state != IsViewable || a.override_redirect) return;
    Window client = ClientOf(frame);
    if (!client) return;
    it = shown.emplace(frame, Shown{client, {a.x, a.y, a.width + 2 * a.border_width, a.height + 2 * a.border_width}})
             .first;
  } else if (ev.type != ConfigureNotify) {
    return;  // mapped again without an unmap seen: nothing new
  } else if (bounds.x == it->second.bounds.x && bounds.y == it->second.bounds.y && bounds.w == it->second.bounds.w &&
             bounds.h == it->second.bounds.h) {
    return;  // restacked
  }
  if (ev.type == ConfigureNotify) it->second.bounds = bounds;
  callbacks.window(RecordedWindow{it->second.client, it->second.bounds, true});
}

}  // namespace runboard::desktop
