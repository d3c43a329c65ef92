#include "linux/atspi_bus.h"

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <map>

#include "common/desktop_types.h"
#include "linux/x11_session.h"

namespace runboard::desktop::atspi {
namespace {

constexpr int kTimeoutMs = 5000;

// Replies are taken off the connection by a filter, on GDBus's own worker thread, and matched to
// their calls by serial number: no GTask and no main-loop dispatch per call, which is most of what a
// call costs the client when hundreds are in flight.
struct Pending {
  std::mutex mu;
  std::condition_variable cv;
  std::unordered_map<guint32, size_t> serials;  // serial -> index in the current batch
  std::vector<GVariant*>* replies = nullptr;
  std::vector<std::string>* errors = nullptr;
  size_t left = 0;
};

std::unordered_map<GDBusConnection*, Pending*>& PendingByConn() {
  static std::unordered_map<GDBusConnection*, Pending*> m;
  return m;
}

GDBusMessage* ReplyFilter(GDBusConnection*, GDBusMessage* msg, gboolean incoming, gpointer data) {
  if (!incoming) return msg;
  auto type = g_dbus_message_get_message_type(msg);
  if (type != G_DBUS_MESSAGE_TYPE_METHOD_RETURN && type != G_DBUS_MESSAGE_TYPE_ERROR) return msg;
  auto* p = static_cast<Pending*>(data);
  std::lock_guard<std::mutex> lock(p->mu);
  auto it = p->serials.find(g_dbus_message_get_reply_serial(msg));
  if (it == p->serials.end()) return msg;  // someone else's (a synchronous call's) reply
  size_t i = it->second;
  p->serials.erase(it);
  if (type == G_DBUS_MESSAGE_TYPE_METHOD_RETURN) {
    GVariant* body = g_dbus_message_get_body(msg);
    (*p->replies)[i] = body ? g_variant_ref(body) : g_variant_ref_sink(g_variant_new("()"));
  } else if (p->errors) {
    GError* err = nullptr;
    g_dbus_message_to_gerror(msg, &err);
    (*p->errors)[i] = err ? err->message : "error";
    g_clear_error(&err);
  }
  if (--p->left == 0) p->cv.notify_one();
  g_object_unref(msg);
  return nullptr;
}

Pending& PendingFor(GDBusConnection* conn) {
  auto& m = PendingByConn();
  auto it = m.find(conn);
  if (it != m.end()) return *it->second;
  auto* p = new Pending();  // lives as long as the process: the connection keeps a pointer to it
  g_dbus_connection_add_filter(conn, ReplyFilter, p, nullptr);
  m.emplace(conn, p);
  return *p;
}

}  // namespace

GDBusConnection* ConnectBus(const std::string& address, const std::string& failure) {
  GError* err = nullptr;
  GDBusConnection* conn = g_dbus_connection_new_for_address_sync(
      address.c_str(),
      static_cast<GDBusConnectionFlags>(G_DBUS_CONNECTION_FLAGS_AUTHENTICATION_CLIENT |
                                        G_DBUS_CONNECTION_FLAGS_MESSAGE_BUS_CONNECTION),
      nullptr, nullptr, &err);
  if (!conn) {
    std::string msg = err ? err->message : "?";
    g_clear_error(&err);
    throw DesktopError(kNoA11yBus, failure + ": " + msg);
  }
  g_dbus_connection_set_exit_on_close(conn, FALSE);
  return conn;
}

// The root window property at-spi-bus-launcher sets (what libatspi reads first), else ask org.a11y.Bus on
// the session bus. Never autolaunch a bus (the "two buses" trap).
std::string BusAddress(const std::function<std::string()>& rootProperty) {
  if (const char* env = std::getenv("AT_SPI_BUS_ADDRESS"); env && *env) return env;
  std::string fromRoot = rootProperty();
  if (!fromRoot.empty()) return fromRoot;
  const char* session = std::getenv("DBUS_SESSION_BUS_ADDRESS");
  if (!session || !*session)
    throw DesktopError(kNoA11yBus,
                       "no AT-SPI bus: the display has no AT_SPI_BUS property and DBUS_SESSION_BUS_ADDRESS is not set");
  GDBusConnection* sb = ConnectBus(session, "cannot reach the session bus");
  GError* err = nullptr;
  GVariant* r = g_dbus_connection_call_sync(sb, "org.a11y.Bus", "/org/a11y/bus", "org.a11y.Bus", "GetAddress", nullptr,
                                            G_VARIANT_TYPE("(s)"), G_DBUS_CALL_FLAGS_NONE, kTimeoutMs, nullptr, &err);
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

Bus& Bus::Get() {
  static Bus b;
  if (b.conn_ && g_dbus_connection_is_closed(b.conn_)) b.conn_ = nullptr;  // the bus went away: reconnect
  if (!b.conn_) {
    std::string addr = BusAddress([] {
      try {
        auto& x = x11::Session::Get();
        return x.Text(x.root(), "AT_SPI_BUS");
      } catch (const DesktopError&) { return std::string(); }
    });
    b.address_ = addr;
    b.conn_ = ConnectBus(addr, "cannot connect to the AT-SPI bus at " + addr);
  }
  return b;
}

std::vector<GVariant*> Bus::CallMany(const Peer& peer, std::vector<Call>& calls, std::vector<std::string>* errors) {
  std::vector<GVariant*> replies(calls.size(), nullptr);
  if (errors) errors->assign(calls.size(), "");
  if (calls.empty()) return replies;
  Pending& p = PendingFor(peer.conn);
  auto t0 = g_get_monotonic_time();
  std::unique_lock<std::mutex> lock(p.mu);  // the filter waits until every call is registered
  p.replies = &replies;
  p.errors = errors;
  p.left = 0;
  for (size_t i = 0; i < calls.size(); i++) {
    auto& c = calls[i];
    const std::string& dest = !c.dest.empty() ? c.dest : peer.dest;
    GDBusMessage* msg = g_dbus_message_new_method_call(dest.empty() ? nullptr : dest.c_str(), c.path.c_str(),
                                                       c.iface.c_str(), c.method.c_str());
    if (c.params) g_dbus_message_set_body(msg, c.params);
    c.params = nullptr;
    g_dbus_message_set_flags(msg, G_DBUS_MESSAGE_FLAGS_NO_AUTO_START);
    guint32 serial = 0;
    GError* err = nullptr;
    if (g_dbus_connection_send_message(peer.conn, msg, G_DBUS_SEND_MESSAGE_FLAGS_NONE, &serial, &err)) {
      p.serials.emplace(serial, i);
      p.left++;
    } else if (errors) {
      (*errors)[i] = err ? err->message : "send failed";
    }
    g_clear_error(&err);
    g_object_unref(msg);
  }
  roundTrips++;
  auto t1 = g_get_monotonic_time();
  bool done = p.cv.wait_for(lock, std::chrono::milliseconds(kTimeoutMs), [&] { return p.left == 0; });
  if (!done) {
    for (auto& [serial, i] : p.serials)
      if (errors) (*errors)[i] = "no reply (timeout)";
    p.serials.clear();
    p.left = 0;
  }
  p.replies = nullptr;
  p.errors = nullptr;
  static const bool trace = std::getenv("RUNBOARD_DESKTOP_TRACE") != nullptr;
  if (trace)
    g_printerr("atspi batch: %zu x %s.%s: send %.1f ms, wait %.1f ms\n", calls.size(), calls[0].iface.c_str(),
               calls[0].method.c_str(), (t1 - t0) / 1000.0, (g_get_monotonic_time() - t1) / 1000.0);
  return replies;
}

GVariant* Bus::CallOne(const Peer& peer, Call call, std::string* error) {
  std::vector<Call> calls{std::move(call)};
  std::vector<std::string> errors;
  auto r = CallMany(peer, calls, &errors);
  if (error) *error = errors[0];
  return r[0];
}

wire::Conn& Bus::WireCallMany(const Peer& peer, const std::vector<wire::Call>& calls,
                              std::vector<wire::Reply>& replies) {
  // An app's own socket for a big batch within its budget (or once one is open), else the bus.
  wire::Conn* c = peer.p2p.empty() ? nullptr : wire::Conn::ForApp(peer.p2p, calls.size());
  const bool direct = c != nullptr;
  if (!c) c = wire::Conn::ForBus(peer.address);
  if (!c) throw DesktopError(kNoA11yBus, "cannot open a D-Bus connection to " + peer.address);
  auto t0 = g_get_monotonic_time();
  c->CallMany(calls, replies, direct ? std::string_view() : std::string_view(peer.dest));
  roundTrips++;
  static const bool trace = std::getenv("RUNBOARD_DESKTOP_TRACE") != nullptr;
  if (trace && !calls.empty())
    g_printerr("wire batch: %zu x %.*s: %.1f ms (%zu sockets%s)\n", calls.size(),
               static_cast<int>(calls[0].member.size()), calls[0].member.data(), (g_get_monotonic_time() - t0) / 1000.0,
               c->SocketsFor(calls.size()), direct ? "" : ", bus");
  return *c;
}

std::vector<AppRef> Bus::Apps() {
  Peer registry{conn_, "org.a11y.atspi.Registry", address_, ""};
  std::string err;
  GVariant* r =
      CallOne(registry, {"/org/a11y/atspi/accessible/root", "org.a11y.atspi.Accessible", "GetChildren", nullptr}, &err);
  if (!r) throw DesktopError(kNoA11yBus, "the AT-SPI registry does not answer: " + err);
  std::vector<AppRef> apps;
  GVariantIter* it = nullptr;
  g_variant_get(r, "(a(so))", &it);
  const char *bus, *path;
  while (g_variant_iter_next(it, "(&s&o)", &bus, &path)) apps.push_back({bus, 0, ""});
  g_variant_iter_free(it);
  g_variant_unref(r);
  // Pids from the bus daemon (one pipelined batch), then the names from the apps whose process is not
  // stopped (another batch): a stopped app answers nothing, and asking it held every command that lists
  // apps for the whole timeout (5 s), `type --window` several times over.
  std::vector<Call> calls;
  for (auto& a : apps)
    calls.push_back({"/org/freedesktop/DBus", "org.freedesktop.DBus", "GetConnectionUnixProcessID",
                     g_variant_new("(s)", a.busName.c_str()), "org.freedesktop.DBus"});
  {
    Replies pids{CallMany(Peer{conn_, "", address_, ""}, calls)};
    for (size_t i = 0; i < apps.size(); i++) {
      if (!pids.v[i]) continue;
      guint32 pid = 0;
      g_variant_get(pids.v[i], "(u)", &pid);
      apps[i].pid = static_cast<int>(pid);
    }
  }
  calls.clear();
  std::vector<size_t> asked;
  for (size_t i = 0; i < apps.size(); i++) {
    if (ProcessStopped(apps[i].pid)) continue;
    calls.push_back({"/org/a11y/atspi/accessible/root", "org.freedesktop.DBus.Properties", "Get",
                     g_variant_new("(ss)", "org.a11y.atspi.Accessible", "Name"), apps[i].busName});
    asked.push_back(i);
  }
  Replies names{CallMany(Peer{conn_, "", address_, ""}, calls)};
  for (size_t k = 0; k < asked.size(); k++) {
    if (!names.v[k]) continue;
    GVariant* v = nullptr;
    g_variant_get(names.v[k], "(v)", &v);
    if (v && g_variant_is_of_type(v, G_VARIANT_TYPE_STRING)) apps[asked[k]].name = g_variant_get_string(v, nullptr);
    if (v) g_variant_unref(v);
  }
  return apps;
}

Peer Bus::PeerFor(const std::string& busName) {
  static std::map<std::string, Peer> peers;
  auto it = peers.find(busName);
  if (it != peers.end()) {
    if (!g_dbus_connection_is_closed(it->second.conn)) return it->second;
    peers.erase(it);
  }
  Peer peer{conn_, busName, address_, ""};
  const char* p2p = std::getenv("RUNBOARD_ATSPI_P2P");
  if (!p2p || std::string(p2p) != "0") {
    // Apps built on atk-bridge offer a private socket: the wire reader's big batches go there (spread
    // over several sockets, dbus_wire.h ForApp). GDBus's few calls go over the bus: at-spi2-atk keeps
    // every private connection for the app's life, and a one-shot command must not leave one per run
    // (decision 113; the focus after a key is waited for, decision 110).
    GVariant* r = CallOne(
        peer, {"/org/a11y/atspi/accessible/root", "org.a11y.atspi.Application", "GetApplicationBusAddress", nullptr});
    if (r) {
      const char* addr = nullptr;
      g_variant_get(r, "(&s)", &addr);
      if (addr && *addr) peer.p2p = addr;
      g_variant_unref(r);
    }
  }
  peers.emplace(busName, peer);
  return peer;
}

bool ProcessStopped(int pid) {
  if (pid <= 0) return false;
  // /proc/<pid>/stat never blocks (unlike cmdline or environ): "pid (comm) S ...", comm may hold ')'.
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  size_t close = stat.rfind(')');
  if (close == std::string::npos || close + 2 >= stat.size()) return false;
  char state = stat[close + 2];
  return state == 'T' || state == 't';
}

}  // namespace runboard::desktop::atspi
