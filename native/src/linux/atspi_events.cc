#include "linux/atspi_events.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <unordered_map>
#include <vector>

#include "linux/dbus_wire.h"
#include "linux/input_util_linux.h"

namespace runboard::desktop::atspi {

// More objects than this noted for one app between two reads: the tree is loaded again instead.
constexpr size_t kMaxNoted = 20000;

struct Events::State {
  std::mutex mu;
  std::condition_variable cv;
  std::unique_ptr<wire::Conn> conn;
  int wake = -1;
  bool failed = false;
  bool stopping = false;
  std::unordered_map<std::string, Dirty> dirty;         // by app (its unique bus name)
  std::deque<std::pair<uint64_t, std::string>> toPing;  // ticket, app
  std::set<uint64_t> answered;                          // tickets whose Ping was answered
  uint64_t nextTicket = 0;
};

namespace {

std::mutex g_mu;
Events* g_events = nullptr;  // never freed: its thread may outlive static destructors at exit
std::string g_address;

void Note(Events::State* s, const wire::Message& m) {
  if (m.iface != "org.a11y.atspi.Event.Object" || m.sender.empty()) return;
  bool children = m.member == "ChildrenChanged";
  if (!children && m.member != "PropertyChange" && m.member != "StateChanged") return;
  if (Trace())
    std::fprintf(stderr, "event: %.*s %.*s %.*s\n", static_cast<int>(m.sender.size()), m.sender.data(),
                 static_cast<int>(m.member.size()), m.member.data(), static_cast<int>(m.path.size()), m.path.data());
  std::lock_guard<std::mutex> lock(s->mu);
  Dirty& d = s->dirty[std::string(m.sender)];
  if (d.all) return;
  (children ? d.children : d.info).emplace(m.path);
  if (d.children.size() + d.info.size() > kMaxNoted) {
    d.all = true;
    d.children.clear();
    d.info.clear();
  }
}

void Loop(Events::State* s) {
  int fd = s->conn->fd();
  std::string out;
  uint32_t serial = 0;
  auto call = [&](std::string_view path, std::string_view iface, std::string_view member, std::string_view sig,
                  std::string body, std::string_view dest) {
    wire::AppendCall(out, {path, iface, member, sig, std::move(body)}, dest, ++serial);
  };
  call("/org/freedesktop/DBus", "org.freedesktop.DBus", "Hello", "", "", "org.freedesktop.DBus");
  wire::Writer match;
  match.Str("type='signal',interface='org.a11y.atspi.Event.Object'");
  call("/org/freedesktop/DBus", "org.freedesktop.DBus", "AddMatch", "s", match.bytes(), "org.freedesktop.DBus");
  // Apps send an event only while a listener is registered for it (at-spi2-atk asks the registry). The
  // registry tells the apps (EventListenerRegistered) before it answers, so a Ping sent after the last
  // answer reaches an app after that news: pings wait for it.
  std::set<uint32_t> registering;
  for (const char* ev : {"object:children-changed", "object:property-change", "object:state-changed"}) {
    wire::Writer w;
    w.Str(ev);
    call("/org/a11y/atspi/registry", "org.a11y.atspi.Registry", "RegisterEvent", "s", w.bytes(),
         "org.a11y.atspi.Registry");
    registering.insert(serial);
  }
  std::map<uint32_t, uint64_t> pings;  // serial -> ticket
  std::vector<char> in(1 << 16);
  size_t used = 0;
  size_t sent = 0;
  for (;;) {
    pollfd p[2] = {{fd, static_cast<short>(POLLIN | (sent < out.size() ? POLLOUT : 0)), 0}, {s->wake, POLLIN, 0}};
    int n = poll(p, 2, -1);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    if (p[1].revents & POLLIN) {
      uint64_t v;
      if (read(s->wake, &v, sizeof v) < 0) {
        // (an eventfd read only fails when it was not signalled)
      }
      std::lock_guard<std::mutex> lock(s->mu);
      if (s->stopping) break;
    }
    if (registering.empty()) {
      std::lock_guard<std::mutex> lock(s->mu);
      for (auto& [ticket, app] : s->toPing) {
        pings[serial + 1] = ticket;
        call("/", "org.freedesktop.DBus.Peer", "Ping", "", "", app);
      }
      s->toPing.clear();
    }
    if (p[0].revents & POLLOUT) {
      ssize_t w = send(fd, out.data() + sent, out.size() - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (w < 0 && errno != EAGAIN && errno != EINTR) break;
      if (w > 0) sent += static_cast<size_t>(w);
      if (sent == out.size()) out.clear(), sent = 0;
    }
    if (p[0].revents & (POLLIN | POLLHUP | POLLERR)) {
      if (in.size() - used < (1 << 15)) in.resize(in.size() * 2);
      ssize_t r = recv(fd, in.data() + used, in.size() - used, MSG_DONTWAIT);
      if (r == 0) break;
      if (r < 0 && errno != EAGAIN && errno != EINTR) break;
      if (r > 0) used += static_cast<size_t>(r);
    }
    size_t parsed = 0;
    bool bad = false;
    while (used - parsed >= 16) {
      wire::Message m;
      int whole = wire::ParseMessage(in.data() + parsed, used - parsed, m);
      if (whole < 0) bad = true;
      if (whole <= 0) break;
      if (m.type == 4) {
        Note(s, m);
      } else if (m.type == 2 || m.type == 3) {
        if (registering.erase(m.replyTo) && registering.empty()) {
          uint64_t one = 1;  // pings held back until now: go round again to send them
          if (write(s->wake, &one, sizeof one) < 0) bad = true;
        }
        auto it = pings.find(m.replyTo);
        if (it != pings.end()) {
          {
            std::lock_guard<std::mutex> lock(s->mu);
            s->answered.insert(it->second);
          }
          s->cv.notify_all();
          pings.erase(it);
        }
      }
      parsed += m.total;
    }
    if (bad) break;
    if (parsed > 0) {
      std::memmove(in.data(), in.data() + parsed, used - parsed);
      used -= parsed;
    }
  }
  std::lock_guard<std::mutex> lock(s->mu);
  s->failed = true;
  s->conn.reset();  // closed: the registry forgets the events asked for on it
  s->cv.notify_all();
}

}  // namespace

Events* Events::Start(const std::string& busAddress) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_events) {
    std::lock_guard<std::mutex> l(g_events->s_->mu);
    if (!g_events->s_->failed && g_address == busAddress) return g_events;
  }
  auto conn = wire::Conn::Open(busAddress);
  if (!conn) return nullptr;
  auto* s = new State();
  s->conn = std::move(conn);
  s->wake = eventfd(0, EFD_CLOEXEC);
  if (s->wake < 0) {
    delete s;
    return nullptr;
  }
  // The old listener (failed, or another bus) is left to end on its own; its state is never freed.
  g_events = new Events(s);
  g_address = busAddress;
  std::thread([s] { Loop(s); }).detach();
  return g_events;
}

void Events::StopAll() {
  std::lock_guard<std::mutex> lock(g_mu);
  if (!g_events) return;
  {
    std::lock_guard<std::mutex> l(g_events->s_->mu);
    g_events->s_->stopping = true;
  }
  uint64_t one = 1;
  if (write(g_events->s_->wake, &one, sizeof one) < 0) {
    // (cannot fail on an eventfd below its maximum)
  }
  g_events = nullptr;  // its thread ends and closes the connection: the registry forgets our events
}

bool Events::Take(const std::string& app, Dirty& out, int timeoutMs) {
  std::unique_lock<std::mutex> lock(s_->mu);
  if (s_->failed || s_->stopping) return false;
  uint64_t ticket = ++s_->nextTicket;
  s_->toPing.push_back({ticket, app});
  uint64_t one = 1;
  if (write(s_->wake, &one, sizeof one) < 0) return false;
  bool ok = s_->cv.wait_for(lock, std::chrono::milliseconds(timeoutMs),
                            [&] { return s_->failed || s_->answered.count(ticket) > 0; });
  s_->answered.erase(ticket);
  if (!ok || s_->failed) return false;
  auto it = s_->dirty.find(app);
  if (it == s_->dirty.end()) {
    out = Dirty{};
  } else {
    out = std::move(it->second);
    s_->dirty.erase(it);
  }
  return true;
}

}  // namespace runboard::desktop::atspi
