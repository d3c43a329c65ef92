#include "linux/atspi_bus.h"

#include <cstdlib>
#include <map>

#include "common/desktop_types.h"
#include "linux/x11_session.h"

namespace runboard::desktop::atspi {
namespace {

constexpr int kTimeoutMs = 5000;

// The AT-SPI bus address: the root window property at-spi-bus-launcher sets (what libatspi reads
// first), else ask org.a11y.Bus on the session bus. Never autolaunch a bus (the "two buses" trap).
std::string BusAddress() {
  if (const char* env = std::getenv("AT_SPI_BUS_ADDRESS"); env && *env) return env;
  try {
    auto& x = x11::Session::Get();
    std::string fromRoot = x.Text(x.root(), "AT_SPI_BUS");
    if (!fromRoot.empty()) return fromRoot;
  } catch (const DesktopError&) {
  }
  const char* session = std::getenv("DBUS_SESSION_BUS_ADDRESS");
  if (!session || !*session)
    throw DesktopError(kNoA11yBus,
                       "no AT-SPI bus: the display has no AT_SPI_BUS property and DBUS_SESSION_BUS_ADDRESS is not set");
  GError* err = nullptr;
  GDBusConnection* sb = g_dbus_connection_new_for_address_sync(
      session,
      static_cast<GDBusConnectionFlags>(G_DBUS_CONNECTION_FLAGS_AUTHENTICATION_CLIENT |
                                        G_DBUS_CONNECTION_FLAGS_MESSAGE_BUS_CONNECTION),
      nullptr, nullptr, &err);
  if (!sb) {
    std::string msg = err ? err->message : "?";
    g_clear_error(&err);
    throw DesktopError(kNoA11yBus, "cannot reach the session bus: " + msg);
  }
  GVariant* r = g_dbus_connection_call_sync(sb, "org.a11y.Bus", "/org/a11y/bus", "org.a11y.Bus", "GetAddress",
                                            nullptr, G_VARIANT_TYPE("(s)"), G_DBUS_CALL_FLAGS_NONE, kTimeoutMs,
                                            nullptr, &err);
  g_dbus_connection_close_sync(sb, nullptr, nullptr);
  g_object_unref(sb);
  if (!r) {
    std::string msg = err ? err->message : "?";
    g_clear_error(&err);
    throw DesktopError(kNoA11yBus, "the session bus has no AT-SPI bus (org.a11y.Bus): " + msg);
  }
  const char* addr = nullptr;
  g_variant_get(r, "(&s)", &addr);
  std::string out = addr ? addr : "";
  g_variant_unref(r);
  return out;
}

struct Pending {
  std::vector<GVariant*>* replies;
  std::vector<std::string>* errors;
  int* left;
  size_t index;
};

void OnReply(GObject* source, GAsyncResult* res, gpointer data) {
  auto* p = static_cast<Pending*>(data);
  GError* err = nullptr;
  GVariant* r = g_dbus_connection_call_finish(G_DBUS_CONNECTION(source), res, &err);
  (*p->replies)[p->index] = r;
  if (err) {
    if (p->errors) (*p->errors)[p->index] = err->message;
    g_error_free(err);
  }
  --*p->left;
  delete p;
}

}  // namespace

Bus& Bus::Get() {
  static Bus b;
  if (!b.conn_) {
    std::string addr = BusAddress();
    if (!b.ctx_) {
      // Replies to pipelined calls are dispatched on this thread's own context, which CallMany iterates.
      b.ctx_ = g_main_context_new();
      g_main_context_push_thread_default(b.ctx_);
    }
    GError* err = nullptr;
    b.conn_ = g_dbus_connection_new_for_address_sync(
        addr.c_str(),
        static_cast<GDBusConnectionFlags>(G_DBUS_CONNECTION_FLAGS_AUTHENTICATION_CLIENT |
                                          G_DBUS_CONNECTION_FLAGS_MESSAGE_BUS_CONNECTION),
        nullptr, nullptr, &err);
    if (!b.conn_) {
      std::string msg = err ? err->message : "?";
      g_clear_error(&err);
      throw DesktopError(kNoA11yBus, "cannot connect to the AT-SPI bus at " + addr + ": " + msg);
    }
    g_dbus_connection_set_exit_on_close(b.conn_, FALSE);
  }
  return b;
}

std::vector<GVariant*> Bus::CallMany(const Peer& peer, std::vector<Call>& calls, std::vector<std::string>* errors) {
  std::vector<GVariant*> replies(calls.size(), nullptr);
  if (errors) errors->assign(calls.size(), "");
  if (calls.empty()) return replies;
  int left = static_cast<int>(calls.size());
  for (size_t i = 0; i < calls.size(); i++) {
    auto& c = calls[i];
    g_dbus_connection_call(peer.conn, peer.dest.empty() ? nullptr : peer.dest.c_str(), c.path.c_str(),
                           c.iface.c_str(), c.method.c_str(), c.params, nullptr, G_DBUS_CALL_FLAGS_NO_AUTO_START,
                           kTimeoutMs, nullptr, OnReply, new Pending{&replies, errors, &left, i});
    c.params = nullptr;
  }
  roundTrips++;
  while (left > 0) g_main_context_iteration(ctx_, TRUE);
  return replies;
}

GVariant* Bus::CallOne(const Peer& peer, Call call, std::string* error) {
  std::vector<Call> calls{std::move(call)};
  std::vector<std::string> errors;
  auto r = CallMany(peer, calls, &errors);
  if (error) *error = errors[0];
  return r[0];
}

std::vector<AppRef> Bus::Apps() {
  Peer registry{conn_, "org.a11y.atspi.Registry"};
  std::string err;
  GVariant* r = CallOne(registry, {"/org/a11y/atspi/accessible/root", "org.a11y.atspi.Accessible", "GetChildren", nullptr}, &err);
  if (!r) throw DesktopError(kNoA11yBus, "the AT-SPI registry does not answer: " + err);
  std::vector<AppRef> apps;
  GVariantIter* it = nullptr;
  g_variant_get(r, "(a(so))", &it);
  const char *bus, *path;
  while (g_variant_iter_next(it, "(&s&o)", &bus, &path)) apps.push_back({bus, 0, ""});
  g_variant_iter_free(it);
  g_variant_unref(r);
  // Name and pid of every app, in one pipelined batch per destination.
  std::vector<Call> names, pids;
  for (size_t i = 0; i < apps.size(); i++) {
    names.push_back({"/org/a11y/atspi/accessible/root", "org.freedesktop.DBus.Properties", "Get",
                     g_variant_new("(ss)", "org.a11y.atspi.Accessible", "Name")});
  }
  std::vector<GVariant*> nameReplies(apps.size(), nullptr), pidReplies(apps.size(), nullptr);
  // Names go to each app; pids to the bus daemon. Send them all before waiting.
  int left = static_cast<int>(apps.size() * 2);
  for (size_t i = 0; i < apps.size(); i++) {
    g_dbus_connection_call(conn_, apps[i].busName.c_str(), names[i].path.c_str(), names[i].iface.c_str(),
                           names[i].method.c_str(), names[i].params, nullptr, G_DBUS_CALL_FLAGS_NO_AUTO_START,
                           kTimeoutMs, nullptr, OnReply, new Pending{&nameReplies, nullptr, &left, i});
    g_dbus_connection_call(conn_, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                           "GetConnectionUnixProcessID", g_variant_new("(s)", apps[i].busName.c_str()), nullptr,
                           G_DBUS_CALL_FLAGS_NONE, kTimeoutMs, nullptr, OnReply,
                           new Pending{&pidReplies, nullptr, &left, i});
  }
  roundTrips++;
  while (left > 0) g_main_context_iteration(ctx_, TRUE);
  for (size_t i = 0; i < apps.size(); i++) {
    if (nameReplies[i]) {
      GVariant* v = nullptr;
      g_variant_get(nameReplies[i], "(v)", &v);
      if (v && g_variant_is_of_type(v, G_VARIANT_TYPE_STRING)) apps[i].name = g_variant_get_string(v, nullptr);
      if (v) g_variant_unref(v);
      g_variant_unref(nameReplies[i]);
    }
    if (pidReplies[i]) {
      guint32 pid = 0;
      g_variant_get(pidReplies[i], "(u)", &pid);
      apps[i].pid = static_cast<int>(pid);
      g_variant_unref(pidReplies[i]);
    }
  }
  return apps;
}

Peer Bus::PeerFor(const std::string& busName) {
  static std::map<std::string, Peer> peers;
  auto it = peers.find(busName);
  if (it != peers.end()) {
    if (!g_dbus_connection_is_closed(it->second.conn)) return it->second;
    if (it->second.conn != conn_) g_object_unref(it->second.conn);
    peers.erase(it);
  }
  Peer viaBus{conn_, busName};
  Peer chosen = viaBus;
  const char* p2p = std::getenv("RUNBOARD_ATSPI_P2P");
  if (!p2p || std::string(p2p) != "0") {
    // Apps built on atk-bridge offer a private socket: talking to it directly skips the bus daemon's hop.
    GVariant* r = CallOne(viaBus, {"/org/a11y/atspi/accessible/root", "org.a11y.atspi.Application",
                                   "GetApplicationBusAddress", nullptr});
    if (r) {
      const char* addr = nullptr;
      g_variant_get(r, "(&s)", &addr);
      if (addr && *addr) {
        GDBusConnection* c = g_dbus_connection_new_for_address_sync(
            addr, G_DBUS_CONNECTION_FLAGS_AUTHENTICATION_CLIENT, nullptr, nullptr, nullptr);
        if (c) {
          g_dbus_connection_set_exit_on_close(c, FALSE);
          chosen = Peer{c, ""};
        }
      }
      g_variant_unref(r);
    }
  }
  peers.emplace(busName, chosen);
  return chosen;
}

}  // namespace runboard::desktop::atspi
