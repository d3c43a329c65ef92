// The AT-SPI bus seen through GDBus, with pipelined calls: every request of a batch is sent before the
// first reply is awaited, so a batch costs about one round trip plus the app's own work (see
// shared/DESKTOP-NOTES.md: ~10x faster than libatspi's one blocking call per attribute).
// Internal to the Linux backend; Bus is used on the desktop thread only (ConnectBus and BusAddress on any).
#pragma once
#include <gio/gio.h>

#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "linux/dbus_wire.h"

namespace runboard::desktop::atspi {

// Where an application's objects are reached: GDBus's calls through the bus daemon, the wire reader's
// big batches on the app's own (peer-to-peer) socket when it offers one (dbus_wire.h ForApp). at-spi2-atk
// never forgets a private connection, closed or not: each one costs every later turn of the app's main
// loop (decisions 108, 113).
struct Peer {
  GDBusConnection* conn = nullptr;  // the bus
  std::string dest;                 // the app's name on the bus
  std::string address;              // the bus's D-Bus address
  std::string p2p;                  // the app's own socket's address ("" when it offers none)
};

struct AppRef {
  std::string busName;
  int pid = 0;
  std::string name;
};

struct Call {
  std::string path, iface, method;
  GVariant* params = nullptr;  // floating reference taken by the call
  std::string dest = "";       // overrides the peer's destination (e.g. the bus daemon itself)
};

class Bus {
 public:
  static Bus& Get();  // throws DesktopError(NO_ACCESSIBILITY_BUS)
  GDBusConnection* conn() const { return conn_; }
  const std::string& address() const { return address_; }
  std::vector<AppRef> Apps();
  Peer PeerFor(const std::string& busName);
  // Sends every call, then waits for all replies. Replies are owned by the caller (nullptr on error;
  // the error text goes into errors when given).
  std::vector<GVariant*> CallMany(const Peer& peer, std::vector<Call>& calls,
                                  std::vector<std::string>* errors = nullptr);
  GVariant* CallOne(const Peer& peer, Call call, std::string* error = nullptr);
  // The same calls spoken on the wire directly (dbus_wire.h), for batches of thousands: replies are
  // read in place from the returned connection (valid until its next batch). Throws
  // DesktopError(NO_ACCESSIBILITY_BUS) when the peer's socket cannot be opened.
  wire::Conn& WireCallMany(const Peer& peer, const std::vector<wire::Call>& calls, std::vector<wire::Reply>& replies);
  int roundTrips = 0;

 private:
  Bus() = default;
  GDBusConnection* conn_ = nullptr;
  std::string address_;
};

// A connection to the message bus at `address` (the AT-SPI bus, or the session bus to ask it where that
// is), as a client of the bus daemon; the process lives on when the bus goes away. Throws
// DesktopError(NO_ACCESSIBILITY_BUS): `failure`, then GDBus's reason.
GDBusConnection* ConnectBus(const std::string& address, const std::string& failure);

// The AT-SPI bus's address: AT_SPI_BUS_ADDRESS, else the root window's AT_SPI_BUS as `rootProperty` reads
// it (on the caller's own display connection; "" when unset or unreadable), else org.a11y.Bus's answer on
// the session bus. Throws DesktopError(NO_ACCESSIBILITY_BUS) saying why there is none.
std::string BusAddress(const std::function<std::string()>& rootProperty);

// Whether a process is stopped (SIGSTOP, job control, a debugger): it answers no D-Bus call until it
// is continued, so each call to it would wait the whole timeout (5 s).
bool ProcessStopped(int pid);

struct Replies {  // frees a batch of replies when it goes out of scope
  std::vector<GVariant*> v;
  ~Replies() {
    for (auto* r : v)
      if (r) g_variant_unref(r);
  }
};

}  // namespace runboard::desktop::atspi
