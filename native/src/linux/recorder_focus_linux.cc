#include "linux/recorder_focus_linux.h"

#include <atspi/atspi-constants.h>
#include <gio/gio.h>
#include <time.h>

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "linux/atspi_bus.h"
#include "linux/atspi_tree.h"

namespace runboard::desktop {

int64_t MonotonicMs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

namespace {

constexpr int kCallTimeoutMs = 3000;

struct Change {
  int64_t monoMs;
  bool focused;
  std::string app, path;
};

}  // namespace

struct FocusListener::State {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<Change> queue;
  bool stopping = false;
  bool closed = false;  // no more changes taken (the filter may still run once, on GDBus's thread)
  GDBusConnection* conn = nullptr;
  guint filter = 0;
  std::function<unsigned long(int64_t)> toServerTime;
  std::function<void(const RecordedFocus&)> sink;
  std::thread thread;

  void Describe(const Change& c);
  void Loop();
};

namespace {

// Runs on GDBus's reader thread as each message arrives: a focus change is stamped here, first.
GDBusMessage* OnMessage(GDBusConnection*, GDBusMessage* msg, gboolean incoming, gpointer data) {
  if (!incoming || g_dbus_message_get_message_type(msg) != G_DBUS_MESSAGE_TYPE_SIGNAL) return msg;
  const char* iface = g_dbus_message_get_interface(msg);
  const char* member = g_dbus_message_get_member(msg);
  if (!iface || !member || std::string(iface) != "org.a11y.atspi.Event.Object" || std::string(member) != "StateChanged")
    return msg;
  int64_t now = MonotonicMs();
  GVariant* body = g_dbus_message_get_body(msg);
  if (!body || !g_variant_is_of_type(body, G_VARIANT_TYPE("(siiva{sv})"))) return msg;
  const char* kind = nullptr;
  gint32 detail1 = 0, detail2 = 0;
  g_variant_get(body, "(&sii@v@a{sv})", &kind, &detail1, &detail2, nullptr, nullptr);
  if (!kind || std::string(kind) != "focused") return msg;
  const char* sender = g_dbus_message_get_sender(msg);
  const char* path = g_dbus_message_get_path(msg);
  auto* state = static_cast<std::shared_ptr<FocusListener::State>*>(data)->get();
  {
    std::lock_guard<std::mutex> lock(state->mu);
    if (!state->closed) state->queue.push_back({now, detail1 != 0, sender ? sender : "", path ? path : ""});
  }
  state->cv.notify_one();
  return msg;
}

GVariant* Call(GDBusConnection* conn, const std::string& dest, const std::string& path, const char* iface,
               const char* method, GVariant* params, const char* replyType) {
  GError* err = nullptr;
  GVariant* r =
      g_dbus_connection_call_sync(conn, dest.c_str(), path.c_str(), iface, method, params, G_VARIANT_TYPE(replyType),
                                  G_DBUS_CALL_FLAGS_NO_AUTO_START, kCallTimeoutMs, nullptr, &err);
  g_clear_error(&err);
  return r;
}

}  // namespace

// What the element that took the focus is: read once, just after the change (the stamp is the
// change's arrival, not this read's).
void FocusListener::State::Describe(const Change& c) {
  RecordedFocus f;
  f.time = toServerTime(c.monoMs);
  f.focused = c.focused;
  f.app = c.app;
  f.path = c.path;
  if (c.focused) {
    uint32_t role = 0;
    if (GVariant* r = Call(conn, c.app, c.path, "org.a11y.atspi.Accessible", "GetRole", nullptr, "(u)")) {
      g_variant_get(r, "(u)", &role);
      g_variant_unref(r);
      f.role = atspi::RoleName(role);
    }
    if (GVariant* r = Call(conn, c.app, c.path, "org.freedesktop.DBus.Properties", "Get",
                           g_variant_new("(ss)", "org.a11y.atspi.Accessible", "Name"), "(v)")) {
      GVariant* v = nullptr;
      g_variant_get(r, "(v)", &v);
      if (v && g_variant_is_of_type(v, G_VARIANT_TYPE_STRING)) f.name = g_variant_get_string(v, nullptr);
      if (v) g_variant_unref(v);
      g_variant_unref(r);
    }
    uint64_t states = 0;
    if (GVariant* r = Call(conn, c.app, c.path, "org.a11y.atspi.Accessible", "GetState", nullptr, "(au)")) {
      GVariantIter* it = nullptr;
      g_variant_get(r, "(au)", &it);
      guint32 word = 0;
      for (int i = 0; it && i < 2 && g_variant_iter_next(it, "u", &word); i++)
        states |= static_cast<uint64_t>(word) << (32 * i);
      if (it) g_variant_iter_free(it);
      g_variant_unref(r);
    }
    if (GVariant* r =
            Call(conn, c.app, c.path, "org.a11y.atspi.Component", "GetExtents", g_variant_new("(u)", 0u), "((iiii))")) {
      g_variant_get(r, "((iiii))", &f.bounds.x, &f.bounds.y, &f.bounds.w, &f.bounds.h);
      g_variant_unref(r);
    }
    f.secret = role == ATSPI_ROLE_PASSWORD_TEXT;
    f.editable = (states & (1ull << ATSPI_STATE_EDITABLE)) != 0 || role == ATSPI_ROLE_ENTRY ||
                 role == ATSPI_ROLE_TEXT || f.secret;
  }
  sink(f);
}

void FocusListener::State::Loop() {
  for (;;) {
    Change c;
    {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return stopping || !queue.empty(); });
      if (queue.empty()) return;  // stopping, and every change that came before it described
      c = std::move(queue.front());
      queue.pop_front();
    }
    Describe(c);
  }
}

FocusListener::FocusListener(const std::string& address, std::function<unsigned long(int64_t)> toServerTime,
                             std::function<void(const RecordedFocus&)> sink)
    : state_(std::make_shared<State>()) {
  state_->toServerTime = std::move(toServerTime);
  state_->sink = std::move(sink);
  GDBusConnection* conn = atspi::ConnectBus(address, "cannot connect to the AT-SPI bus at " + address);
  state_->conn = conn;
  state_->filter = g_dbus_connection_add_filter(conn, OnMessage, new std::shared_ptr<State>(state_),
                                                [](gpointer p) { delete static_cast<std::shared_ptr<State>*>(p); });
  // The bus routes the signals to this connection; the apps emit them once a listener is registered.
  GVariant* r = Call(conn, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "AddMatch",
                     g_variant_new("(s)",
                                   "type='signal',interface='org.a11y.atspi.Event.Object',member='StateChanged',"
                                   "arg0='focused'"),
                     "()");
  if (!r) {
    g_dbus_connection_remove_filter(conn, state_->filter);
    g_dbus_connection_close_sync(conn, nullptr, nullptr);
    g_object_unref(conn);
    state_->conn = nullptr;
    throw DesktopError(kNoA11yBus, "the AT-SPI bus refused to route focus changes (AddMatch)");
  }
  g_variant_unref(r);
  r = Call(conn, "org.a11y.atspi.Registry", "/org/a11y/atspi/registry", "org.a11y.atspi.Registry", "RegisterEvent",
           g_variant_new("(s@ass)", "object:state-changed:focused", g_variant_new_strv(nullptr, 0), ""), "()");
  if (!r)  // an older registry takes the event alone
    r = Call(conn, "org.a11y.atspi.Registry", "/org/a11y/atspi/registry", "org.a11y.atspi.Registry", "RegisterEvent",
             g_variant_new("(s)", "object:state-changed:focused"), "()");
  if (r) g_variant_unref(r);
  state_->thread = std::thread([s = state_] { s->Loop(); });
}

FocusListener::~FocusListener() {
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->stopping = true;
    state_->closed = true;
  }
  state_->cv.notify_one();
  if (state_->thread.joinable()) state_->thread.join();
  if (state_->conn) {
    g_dbus_connection_remove_filter(state_->conn, state_->filter);
    g_dbus_connection_close_sync(state_->conn, nullptr, nullptr);
    g_object_unref(state_->conn);
  }
}

}  // namespace runboard::desktop
