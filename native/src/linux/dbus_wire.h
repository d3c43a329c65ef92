// D-Bus spoken directly on a Unix socket, for the few calls a big tree needs by the thousand
// (Cache.GetItems, Component.GetExtents, Action.GetActions/GetName): calls are written as bytes into
// one buffer and replies are read in place from the bytes that came back. GDBus builds a GDBusMessage
// and a GVariant tree per call and per reply and hands each through its worker thread: on a page of
// 5,900 nodes that was most of the reader's CPU (docs/bench-desktop.md, "Heavy trees").
// Little-endian only (every x86/ARM peer writes little-endian); anything else is refused as an error.
// Internal to the Linux backend; used on the desktop thread only.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace runboard::desktop::atspi::wire {

// Serialises a call's arguments (the body: aligned as the wire format says, from its start).
class Writer {
 public:
  void U32(uint32_t v);
  void I32(int32_t v) { U32(static_cast<uint32_t>(v)); }
  void Str(std::string_view s);  // 's' or 'o'
  void Align(size_t a);          // a struct starts at 8; an array's elements at theirs, even when it is empty
  std::string& bytes() { return b_; }

 private:
  std::string b_;
};

// Reads a reply's body in place. A read past the end, or a malformed length, turns ok() false and
// every later read returns zero values.
class Reader {
 public:
  Reader(const char* p, size_t n) : p_(p), n_(n) {}
  bool ok() const { return ok_; }
  uint32_t U32();
  int32_t I32() { return static_cast<int32_t>(U32()); }
  std::string_view Str();  // 's' or 'o'
  std::string_view Sig();  // 'g'
  // An array: reads its length and aligns to its elements; returns the offset where it ends.
  size_t Array(size_t elemAlign);
  bool Before(size_t end) const { return ok_ && pos_ < end; }
  void Align(size_t a);
  void Skip(size_t n);
  // Skips one value of the complete type that starts sig (a variant's, a property's we do not use).
  void SkipValue(std::string_view sig);

 private:
  const char* p_;
  size_t n_;
  size_t pos_ = 0;
  bool ok_ = true;
};

struct Call {
  std::string_view path, iface, member, sig;  // sig: the body's signature ("" for none)
  std::string body;                           // from Writer::bytes()
};

struct Reply {
  bool ok = false;  // a method return (false: an error reply, or no reply)
  std::string error;
  size_t off = 0, len = 0;  // the body inside the buffer of the connection's socket `sock`
  uint32_t sock = 0;
};

// A message's header, parsed in place (views into the bytes given to ParseMessage).
struct Message {
  uint8_t type = 0;  // 1 method call, 2 method return, 3 error, 4 signal
  uint32_t replyTo = 0;
  std::string_view path, iface, member, error, sender;
  size_t bodyOff = 0, bodyLen = 0, total = 0;  // from the message's start
};

// The message at the start of [p, p + n): 1 when it is whole (m filled in), 0 when more bytes are
// needed, -1 when it is malformed (or big-endian).
int ParseMessage(const char* p, size_t n, Message& m);
// Appends a method call (NO_AUTO_START) to out.
void AppendCall(std::string& out, const Call& c, std::string_view dest, uint32_t serial);
// How many of `want` sockets this process may open to the app listening at socketPath (an abstract name
// starts with NUL), counted as opened: the app's budget of private sockets, shared by all our processes
// through a file under $XDG_RUNTIME_DIR/runboard-atspi (RUNBOARD_ATSPI_SPREAD_BUDGET, 48 by default).
// at-spi2-atk keeps every private connection for the app's life (decision 113): this is the bound on what
// our processes leave in an app. 0 without a private $XDG_RUNTIME_DIR. dbus_wire_budget.cc.
size_t TakeSpreadSockets(std::string_view socketPath, size_t want);
// The fewest calls a batch needs to be sent on an app's own sockets rather than over the bus (it is then
// spread over at least two of them).
constexpr size_t kPrivateBatch = 128;

class Conn {
 public:
  // A connection of its own (not shared, not a bus client yet: no Hello sent), for a reader that runs
  // its own loop on fd() with AppendCall and ParseMessage (atspi_events.cc). nullptr on failure.
  static std::unique_ptr<Conn> Open(const std::string& address);
  int fd() const { return fd_; }
  // The connection to a message bus at an address ("unix:path=…" or "unix:abstract=…", the first unix
  // entry of a list): Hello is sent, and calls name their destination. Kept per address for the
  // process. nullptr when it cannot be opened.
  static Conn* ForBus(const std::string& address);
  // The connection to an app's own (peer-to-peer) socket for a batch of `calls` calls, or nullptr when
  // the batch is to go over the bus: at-spi2-atk never forgets a private connection (decision 113), so
  // one is opened only for a batch big enough to be spread (kPrivateBatch calls) and only within the
  // app's budget (TakeSpreadSockets counts every socket, the first included); once open it is kept for
  // the process and used for every later batch. Nor when the socket cannot be reached (a run's jail
  // has its own network namespace: the address is abstract), which is remembered for the process.
  static Conn* ForApp(const std::string& address, size_t calls);
  // Sends every call, then reads until every reply came (pipelined, both directions in one poll loop
  // so that neither side blocks on a full socket). False when the connection failed or timed out (its
  // replies are then not ok); the connection is then closed and opened again at the next For.
  // On an app's own (peer-to-peer) socket a big batch is spread over several sockets to the app, opened
  // on the first such batch (SocketsFor): an app on at-spi2-atk dispatches one message per socket per
  // main-loop turn, so N sockets with calls queued are answered N per turn (decision 108).
  bool CallMany(const std::vector<Call>& calls, std::vector<Reply>& replies, std::string_view dest,
                int timeoutMs = 5000);
  // The body of a reply, valid until the next CallMany.
  Reader Body(const Reply& r) const { return Reader(socks_[r.sock].in.data() + r.off, r.len); }
  // How many sockets a batch of `calls` calls is spread over (1 on a message bus, on a connection from
  // Open, and for small batches; RUNBOARD_ATSPI_SOCKETS sets the most, 8 by default; no more than the
  // app's budget of spread sockets gave, TakeSpreadSockets).
  size_t SocketsFor(size_t calls) const;
  size_t sockets() const { return socks_.size(); }
  ~Conn();

 private:
  struct Sock {
    explicit Sock(int f) : fd(f) {}
    int fd;
    uint32_t serial = 0;
    std::vector<char> in;  // the bytes of the last batch's replies
  };
  explicit Conn(int fd) : fd_(fd) { socks_.emplace_back(fd); }
  // Connects and authenticates (Open and ForBus differ only in `bus`).
  static std::unique_ptr<Conn> Connect(const std::string& address, bool bus);
  // The kept connection for an address, unless it broke (then it is put aside, its sockets closed).
  static Conn* Kept(const std::string& address);
  static Conn* Keep(std::unique_ptr<Conn> c);
  bool Auth(bool bus);
  // Opens more sockets to the same peer until there are n (all authenticated in one round trip); fewer
  // when some cannot be opened or the app's budget is spent (then no more are asked for).
  void OpenSockets(size_t n);
  std::vector<Sock> socks_;
  int fd_;  // socks_[0]'s
  std::string address_;
  bool spread_ = false;    // an app's own socket (ForApp): big batches are spread
  size_t cap_ = SIZE_MAX;  // the most sockets, once OpenSockets got fewer than it asked for
  bool broken_ = false;
};

}  // namespace runboard::desktop::atspi::wire
