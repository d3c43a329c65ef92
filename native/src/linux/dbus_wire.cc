#include "linux/dbus_wire.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <set>

namespace runboard::desktop::atspi::wire {
namespace {

// Sockets a big batch is spread over on an app's own socket, and the fewest calls that earn each one
// (a GTK form's batches, under a hundred calls, keep to one; docs/bench-desktop.md, session 16).
constexpr int kSockets = 8;
constexpr size_t kCallsPerSocket = 64;
static_assert(kPrivateBatch == 2 * kCallsPerSocket, "a batch goes to an app's own sockets when it is spread");

size_t AlignUp(size_t v, size_t a) { return (v + a - 1) & ~(a - 1); }

uint32_t Load32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

int64_t NowMs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

std::string Unescape(std::string_view s) {  // D-Bus address values: %XX escapes
  std::string out;
  for (size_t i = 0; i < s.size(); i++) {
    if (s[i] == '%' && i + 2 < s.size()) {
      out.push_back(static_cast<char>(std::stoi(std::string(s.substr(i + 1, 2)), nullptr, 16)));
      i += 2;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

// The socket address of the first "unix:" entry with a path or an abstract name.
bool UnixAddress(const std::string& address, sockaddr_un& sa, socklen_t& len) {
  size_t pos = 0;
  while (pos <= address.size()) {
    size_t end = address.find(';', pos);
    if (end == std::string::npos) end = address.size();
    std::string_view entry(address.data() + pos, end - pos);
    pos = end + 1;
    if (entry.substr(0, 5) != "unix:") continue;
    entry.remove_prefix(5);
    while (!entry.empty()) {
      size_t comma = entry.find(',');
      std::string_view kv = entry.substr(0, comma);
      entry = comma == std::string_view::npos ? std::string_view() : entry.substr(comma + 1);
      bool abstract = kv.substr(0, 9) == "abstract=";
      if (!abstract && kv.substr(0, 5) != "path=") continue;
      std::string value = Unescape(kv.substr(abstract ? 9 : 5));
      if (value.size() + 2 > sizeof sa.sun_path) return false;
      std::memset(&sa, 0, sizeof sa);
      sa.sun_family = AF_UNIX;
      std::memcpy(sa.sun_path + (abstract ? 1 : 0), value.data(), value.size());
      len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + value.size() + (abstract ? 1 : 0));
      return true;
    }
  }
  return false;
}

void Put32(std::string& m, uint32_t v) { m.append(reinterpret_cast<const char*>(&v), 4); }

void PadTo(std::string& m, size_t base, size_t a) { m.append(AlignUp(m.size() - base, a) - (m.size() - base), '\0'); }

// One header field: code, the value's signature, the value (a string, object path or signature).
void Field(std::string& m, size_t base, uint8_t code, char type, std::string_view v) {
  PadTo(m, base, 8);
  m.push_back(static_cast<char>(code));
  m.push_back(1);
  m.push_back(type);
  m.push_back('\0');
  if (type == 'g') {
    m.push_back(static_cast<char>(v.size()));
  } else {
    PadTo(m, base, 4);
    Put32(m, static_cast<uint32_t>(v.size()));
  }
  m.append(v);
  m.push_back('\0');
}

void AppendCallTo(std::string& out, const Call& c, std::string_view dest, uint32_t serial) {
  size_t base = out.size();
  out.append("l\x01\x02\x01", 4);  // little-endian, method call, NO_AUTO_START, version 1
  Put32(out, static_cast<uint32_t>(c.body.size()));
  Put32(out, serial);
  Put32(out, 0);  // the fields' length, set below
  size_t fields = out.size();
  Field(out, base, 1, 'o', c.path);
  Field(out, base, 2, 's', c.iface);
  Field(out, base, 3, 's', c.member);
  if (!dest.empty()) Field(out, base, 6, 's', dest);
  if (!c.sig.empty()) Field(out, base, 8, 'g', c.sig);
  uint32_t flen = static_cast<uint32_t>(out.size() - fields);
  std::memcpy(&out[fields - 4], &flen, 4);
  PadTo(out, base, 8);
  out.append(c.body);
}

size_t AlignOf(char t) {
  switch (t) {
    case 'y':
    case 'g':
    case 'v':
      return 1;
    case 'n':
    case 'q':
      return 2;
    case 'x':
    case 't':
    case 'd':
    case '(':
    case '{':
      return 8;
    default:
      return 4;
  }
}

// The length of the complete type that starts sig (0 when it is malformed).
size_t TypeLen(std::string_view sig) {
  if (sig.empty()) return 0;
  if (sig[0] == 'a') {
    size_t n = TypeLen(sig.substr(1));
    return n ? n + 1 : 0;
  }
  if (sig[0] != '(' && sig[0] != '{') return 1;
  size_t i = 1;
  while (i < sig.size() && sig[i] != ')' && sig[i] != '}') {
    size_t n = TypeLen(sig.substr(i));
    if (!n) return 0;
    i += n;
  }
  return i < sig.size() ? i + 1 : 0;
}

// A connected socket for the first unix address of a list, with a receive timeout so that a peer that
// never answers cannot hang the (blocking) authentication. -1 on failure.
int ConnectUnix(const std::string& address) {
  sockaddr_un sa;
  socklen_t len = 0;
  if (!UnixAddress(address, sa, len)) return -1;
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  if (connect(fd, reinterpret_cast<sockaddr*>(&sa), len) != 0) {
    close(fd);
    return -1;
  }
  timeval tv{5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  return fd;
}

bool SendAll(int fd, std::string_view s) {
  return send(fd, s.data(), s.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(s.size());
}

// SASL EXTERNAL with the process's uid (the NUL byte first).
std::string AuthLine() {
  std::string uid = std::to_string(geteuid()), hex;
  for (char ch : uid) {
    static const char digits[] = "0123456789abcdef";
    hex.push_back(digits[(ch >> 4) & 15]);
    hex.push_back(digits[ch & 15]);
  }
  return std::string(1, '\0') + "AUTH EXTERNAL " + hex + "\r\n";
}

bool ReadAuthOk(int fd) {
  std::string line;
  char ch;
  while (line.size() < 512 && line.find("\r\n") == std::string::npos) {
    if (recv(fd, &ch, 1, 0) != 1) return false;
    line.push_back(ch);
  }
  return line.compare(0, 3, "OK ") == 0;
}

}  // namespace

void Reader::SkipValue(std::string_view sig) {
  size_t len = TypeLen(sig);
  if (!ok_ || !len) {
    ok_ = false;
    return;
  }
  switch (sig[0]) {
    case 'y':
      Skip(1);
      break;
    case 'n':
    case 'q':
      Align(2);
      Skip(2);
      break;
    case 'x':
    case 't':
    case 'd':
      Align(8);
      Skip(8);
      break;
    case 's':
    case 'o':
      Str();
      break;
    case 'g':
      Sig();
      break;
    case 'v': {
      std::string_view inner = Sig();
      if (ok_) SkipValue(inner);
      break;
    }
    case 'a': {
      size_t end = Array(AlignOf(sig[1]));
      if (ok_) Skip(end - pos_);
      break;
    }
    case '(':
    case '{': {
      Align(8);
      for (size_t i = 1; ok_ && i + 1 < len;) {
        size_t n = TypeLen(sig.substr(i));
        SkipValue(sig.substr(i, n));
        i += n;
      }
      break;
    }
    default:  // b i u h
      U32();
  }
}

void Writer::Align(size_t a) { b_.append(AlignUp(b_.size(), a) - b_.size(), '\0'); }

void Writer::U32(uint32_t v) {
  Align(4);
  Put32(b_, v);
}

void Writer::Str(std::string_view s) {
  U32(static_cast<uint32_t>(s.size()));
  b_.append(s);
  b_.push_back('\0');
}

void Reader::Align(size_t a) {
  size_t p = AlignUp(pos_, a);
  if (p > n_) ok_ = false;
  else pos_ = p;
}

void Reader::Skip(size_t n) {
  if (!ok_ || n > n_ - pos_) ok_ = false;
  else pos_ += n;
}

uint32_t Reader::U32() {
  Align(4);
  if (!ok_ || n_ - pos_ < 4) {
    ok_ = false;
    return 0;
  }
  uint32_t v = Load32(p_ + pos_);
  pos_ += 4;
  return v;
}

std::string_view Reader::Str() {
  uint32_t len = U32();
  if (!ok_ || len >= n_ - pos_) {
    ok_ = false;
    return {};
  }
  std::string_view s(p_ + pos_, len);
  pos_ += len + 1;
  return s;
}

std::string_view Reader::Sig() {
  if (!ok_ || pos_ >= n_) {
    ok_ = false;
    return {};
  }
  size_t len = static_cast<unsigned char>(p_[pos_]);
  if (len + 1 >= n_ - pos_) {
    ok_ = false;
    return {};
  }
  std::string_view s(p_ + pos_ + 1, len);
  pos_ += len + 2;
  return s;
}

size_t Reader::Array(size_t elemAlign) {
  uint32_t len = U32();
  Align(elemAlign);
  if (!ok_ || len > n_ - pos_) {
    ok_ = false;
    return pos_;
  }
  return pos_ + len;
}

std::unique_ptr<Conn> Conn::Connect(const std::string& address, bool bus) {
  int fd = ConnectUnix(address);
  if (fd < 0) return nullptr;
  std::unique_ptr<Conn> c(new Conn(fd));
  c->address_ = address;
  if (!c->Auth(bus)) return nullptr;
  return c;
}

std::unique_ptr<Conn> Conn::Open(const std::string& address) { return Connect(address, false); }

namespace {
std::map<std::string, std::unique_ptr<Conn>>& Conns() {
  static std::map<std::string, std::unique_ptr<Conn>> conns;
  return conns;
}
}  // namespace

Conn* Conn::Kept(const std::string& address) {
  static std::vector<std::unique_ptr<Conn>> broken;  // kept: replies read from them may still be in use
  auto& conns = Conns();
  auto it = conns.find(address);
  if (it == conns.end()) return nullptr;
  if (!it->second->broken_) return it->second.get();
  for (Sock& k : it->second->socks_) {  // its replies' bytes stay readable; its sockets go
    close(k.fd);
    k.fd = -1;
  }
  broken.push_back(std::move(it->second));
  conns.erase(it);
  return nullptr;
}

Conn* Conn::Keep(std::unique_ptr<Conn> c) {
  std::string address = c->address_;
  return Conns().insert_or_assign(address, std::move(c)).first->second.get();
}

Conn* Conn::ForBus(const std::string& address) {
  if (Conn* kept = Kept(address)) return kept;
  std::unique_ptr<Conn> c = Connect(address, true);
  return c ? Keep(std::move(c)) : nullptr;
}

Conn* Conn::ForApp(const std::string& address, size_t calls) {
  static std::set<std::string> refused;  // unreachable, or the app's budget spent: the bus from now on
  if (Conn* kept = Kept(address)) return kept;
  if (calls < kPrivateBatch || refused.count(address)) return nullptr;
  sockaddr_un sa;
  socklen_t len = 0;
  const size_t offset = offsetof(sockaddr_un, sun_path);
  // The first socket is counted before it is opened: an app accepts it whatever we do next.
  if (!UnixAddress(address, sa, len) || TakeSpreadSockets({sa.sun_path, len - offset}, 1) == 0) {
    refused.insert(address);
    return nullptr;
  }
  std::unique_ptr<Conn> c = Connect(address, false);
  if (!c) {
    refused.insert(address);
    return nullptr;
  }
  c->spread_ = true;
  return Keep(std::move(c));
}

Conn::~Conn() {
  for (Sock& k : socks_)
    if (k.fd >= 0) close(k.fd);
}

size_t Conn::SocketsFor(size_t calls) const {
  if (!spread_) return 1;
  static const size_t most = [] {
    const char* v = std::getenv("RUNBOARD_ATSPI_SOCKETS");  // for benchmarks: 1 turns the spreading off
    int n = v ? std::atoi(v) : kSockets;
    return static_cast<size_t>(std::min(std::max(n, 1), 32));
  }();
  return std::max<size_t>(1, std::min({most, cap_, calls / kCallsPerSocket}));
}

void Conn::OpenSockets(size_t n) {
  std::vector<int> fresh;
  std::string auth = AuthLine();
  sockaddr_un sa;
  socklen_t len = 0;
  const size_t offset = offsetof(sockaddr_un, sun_path);
  size_t more = UnixAddress(address_, sa, len) ? TakeSpreadSockets({sa.sun_path, len - offset}, n - socks_.size()) : 0;
  while (fresh.size() < more) {
    int fd = ConnectUnix(address_);
    if (fd < 0) break;
    if (!SendAll(fd, auth)) {
      close(fd);
      break;
    }
    fresh.push_back(fd);
  }
  for (int fd : fresh) {  // every AUTH is sent before the first OK is read: one round trip for all
    if (ReadAuthOk(fd) && SendAll(fd, "BEGIN\r\n")) {
      socks_.emplace_back(fd);
    } else {
      close(fd);
    }
  }
  if (socks_.size() < n) cap_ = socks_.size();
}

void AppendCall(std::string& out, const Call& c, std::string_view dest, uint32_t serial) {
  AppendCallTo(out, c, dest, serial);
}

int ParseMessage(const char* m, size_t n, Message& msg) {
  if (n < 16) return 0;
  if (m[0] != 'l') return -1;  // big-endian peers are not supported (see the header)
  uint32_t bodyLen = Load32(m + 4), fieldsLen = Load32(m + 12);
  if (fieldsLen > (1u << 26) || bodyLen > (1u << 27)) return -1;
  size_t headerEnd = AlignUp(16 + fieldsLen, 8), total = headerEnd + bodyLen;
  if (n < total) return 0;
  msg = Message{};
  msg.type = static_cast<uint8_t>(m[1]);
  msg.bodyOff = headerEnd;
  msg.bodyLen = bodyLen;
  msg.total = total;
  // Header fields, parsed by hand: code, signature, value.
  size_t pos = 16, end = 16 + fieldsLen;
  while (pos < end) {
    pos = AlignUp(pos, 8);
    if (pos + 4 > end) break;
    uint8_t fcode = static_cast<uint8_t>(m[pos]);
    uint8_t slen = static_cast<uint8_t>(m[pos + 1]);
    if (slen != 1) return -1;
    char t = m[pos + 2];
    pos += 4;
    if (t == 'u') {
      pos = AlignUp(pos, 4);
      if (pos + 4 > end) return -1;
      if (fcode == 5) msg.replyTo = Load32(m + pos);
      pos += 4;
    } else if (t == 's' || t == 'o') {
      pos = AlignUp(pos, 4);
      if (pos + 4 > end) return -1;
      uint32_t l = Load32(m + pos);
      if (pos + 4 + l + 1 > end) return -1;
      std::string_view v(m + pos + 4, l);
      if (fcode == 1) msg.path = v;
      else if (fcode == 2) msg.iface = v;
      else if (fcode == 3) msg.member = v;
      else if (fcode == 4) msg.error = v;
      else if (fcode == 7) msg.sender = v;
      pos += 4 + l + 1;
    } else if (t == 'g') {
      if (pos >= end) return -1;
      uint8_t l = static_cast<uint8_t>(m[pos]);
      pos += 1 + l + 1;
    } else {
      return -1;
    }
  }
  return 1;
}

// SASL EXTERNAL with the process's uid, then BEGIN (and Hello on a message bus). Blocking, with a
// receive timeout so that a peer that never answers cannot hang the reader.
bool Conn::Auth(bool bus) {
  if (!SendAll(fd_, AuthLine()) || !ReadAuthOk(fd_) || !SendAll(fd_, "BEGIN\r\n")) return false;
  if (bus) {
    std::vector<Call> calls{{"/org/freedesktop/DBus", "org.freedesktop.DBus", "Hello", "", ""}};
    std::vector<Reply> replies;
    if (!CallMany(calls, replies, "org.freedesktop.DBus") || !replies[0].ok) return false;
  }
  return true;
}

bool Conn::CallMany(const std::vector<Call>& calls, std::vector<Reply>& replies, std::string_view dest, int timeoutMs) {
  replies.assign(calls.size(), Reply{});
  if (broken_) return false;
  size_t n = SocketsFor(calls.size());
  if (n > socks_.size()) OpenSockets(n);
  n = std::min(n, socks_.size());
  // Socket k takes the calls [from, from + count): replies are matched by serial on their own socket.
  struct Batch {
    std::string out;
    size_t sent = 0, parsed = 0, used = 0, from = 0, count = 0;
    uint32_t first = 0;
    std::vector<char> buf;
  };
  std::vector<Batch> b(n);
  for (size_t k = 0; k < n; k++) {
    Batch& x = b[k];
    x.from = calls.size() * k / n;
    x.count = calls.size() * (k + 1) / n - x.from;
    size_t bytes = 0;
    for (size_t i = x.from; i < x.from + x.count; i++) bytes += 160 + calls[i].path.size() + calls[i].body.size();
    x.out.reserve(bytes);
    x.first = socks_[k].serial + 1;
    for (size_t i = x.from; i < x.from + x.count; i++) AppendCallTo(x.out, calls[i], dest, ++socks_[k].serial);
    x.buf.resize(std::max<size_t>(1 << 16, bytes / 2));
  }
  size_t left = calls.size();
  int64_t deadline = NowMs() + timeoutMs;
  auto fail = [&] {
    broken_ = true;
    for (auto& r : replies) r.ok = false;
    return false;
  };
  std::vector<pollfd> p(n);
  while (left > 0) {
    for (size_t k = 0; k < n; k++)
      p[k] = pollfd{socks_[k].fd, static_cast<short>(POLLIN | (b[k].sent < b[k].out.size() ? POLLOUT : 0)), 0};
    int wait = static_cast<int>(deadline - NowMs());
    if (wait <= 0) return fail();
    int ready = poll(p.data(), n, wait);
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) return fail();
    for (size_t k = 0; k < n; k++) {
      Batch& x = b[k];
      int fd = socks_[k].fd;
      if (p[k].revents & POLLOUT) {
        ssize_t w = send(fd, x.out.data() + x.sent, x.out.size() - x.sent, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w < 0 && errno != EAGAIN && errno != EINTR) return fail();
        if (w > 0) x.sent += static_cast<size_t>(w);
      }
      if (!(p[k].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      if (x.buf.size() - x.used < (1 << 15)) x.buf.resize(x.buf.size() * 2);
      ssize_t r = recv(fd, x.buf.data() + x.used, x.buf.size() - x.used, MSG_DONTWAIT);
      if (r == 0) return fail();
      if (r < 0 && errno != EAGAIN && errno != EINTR) return fail();
      if (r > 0) x.used += static_cast<size_t>(r);
      // Whole messages received so far.
      while (x.used - x.parsed >= 16) {
        const char* m = x.buf.data() + x.parsed;
        Message msg;
        int whole = ParseMessage(m, x.used - x.parsed, msg);
        if (whole < 0) return fail();
        if (whole == 0) break;
        if ((msg.type == 2 || msg.type == 3) && msg.replyTo >= x.first && msg.replyTo - x.first < x.count) {
          Reply& rep = replies[x.from + (msg.replyTo - x.first)];
          rep.off = x.parsed + msg.bodyOff;
          rep.len = msg.bodyLen;
          rep.sock = static_cast<uint32_t>(k);
          rep.ok = msg.type == 2;
          if (msg.type == 3) {
            Reader e(m + msg.bodyOff, msg.bodyLen);
            std::string_view text = msg.bodyLen ? e.Str() : std::string_view();
            rep.error = std::string(msg.error) + (text.empty() ? "" : ": " + std::string(text));
          }
          left--;
        }
        x.parsed += msg.total;
      }
    }
  }
  // Everything a reply points at stays in its socket's buffer until the next batch; a message that came
  // after the last reply (a signal) is dropped with the rest.
  for (size_t k = 0; k < n; k++) {
    b[k].buf.resize(b[k].used);
    socks_[k].in.swap(b[k].buf);
    if (b[k].parsed < b[k].used) broken_ = true;  // part of a later message was read: start afresh next time
  }
  return true;
}

}  // namespace runboard::desktop::atspi::wire
