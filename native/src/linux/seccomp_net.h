// Named seccomp_net, not seccomp: "src" is on the include path, and <linux/seccomp.h> must stay the kernel's.
// The network rules Landlock (ABI <= 7) does not have, as a seccomp-BPF filter on the run, plus the
// broker in the jail's outer process that decides the one call a filter cannot judge: listen().
//
// Landlock governs bind() and connect() of plain TCP sockets only. The filter closes the rest:
//  * socket(): AF_UNIX and AF_NETLINK as they are; AF_INET/AF_INET6 only as SOCK_STREAM with protocol 0 or
//    IPPROTO_TCP (so no MPTCP, SCTP, raw or ICMP sockets), plus SOCK_DGRAM with 0/IPPROTO_UDP when UDP is
//    allowed; every other family (AF_PACKET, AF_VSOCK, ...) refused.
//  * sendto/sendmsg/sendmmsg with MSG_FASTOPEN, setsockopt TCP_FASTOPEN/TCP_FASTOPEN_CONNECT: refused
//    (a Fast Open connect does not pass Landlock's connect hook).
//  * io_uring_setup/enter/register: refused (its operations, socket, sendmsg and listen among them, do not
//    pass through seccomp).
//  * listen(): handed to the broker (SECCOMP_RET_USER_NOTIF). listen() on an unbound TCP socket binds it
//    to a free port on the wildcard address without passing Landlock's bind hook, and a filter cannot see
//    what an fd is. The broker takes the caller's socket (pidfd_getfd), refuses inet sockets (a run may
//    bind no TCP port, so it has no business listening on one) and calls listen() itself on that same
//    socket for the others. It never lets the call continue in the run: the fd number could name another
//    socket by then.
//  * a foreign syscall ABI (i386/x32 on x86_64, arm32 on aarch64) kills the process: its socketcall() and
//    syscall numbers are not checked here.
// Refusals return EACCES (EPERM for io_uring, like a kernel with io_uring disabled), so tools see an
// ordinary error.
//  * connect(), sendto() with an address and sendmsg(), in the subreaper fallback only (brokerConnect):
//    handed to the broker too, which makes each call itself (linux/seccomp_connect.h); sendmmsg() there
//    says ENOSYS (callers such as glibc's resolver then send one by one).
//  * connect() alone, with a mount namespace, for a run on the person's display (brokerAbstract): the broker
//    answers a connect to an X display's abstract name the run may not reach ECONNREFUSED and lets every
//    other one continue as it was (linux/seccomp_connect.h; decision 134).
#pragma once
#include <sys/types.h>

#include <string>
#include <utility>

#include "linux/seccomp_connect.h"

namespace runboard::seccomp {

struct NetPolicy {
  bool udp = false;  // UDP sockets (DNS, QUIC, ...) allowed
  // The subreaper fallback: connect() and the sends that can name an address go to the broker, which
  // makes them itself (linux/seccomp_connect.h). The jail is then in a Landlock domain with the run's
  // network rules, which the run's own domain is nested in.
  bool brokerConnect = false;
  // With a mount namespace, for a run on the person's display: connect() goes to the broker, which answers a
  // connect to an X display's abstract name that its own Landlock domain (the run's network rules) refuses
  // ECONNREFUSED, as if no one listened there (libxcb then takes X's path socket; decision 134), and lets
  // every other connect continue.
  bool brokerAbstract = false;
};

// A pidfd for the task (a thread) that made a call.
int PidfdOf(pid_t tid);

// The jail's end of the filter. Open() before fork; the child calls ConfineSelf() right before exec; the
// parent polls PollFd() and calls Serve() when it is ready.
class ListenBroker {
 public:
  // A socketpair over which the child hands the filter's notification fd to the parent.
  std::string Open();
  // In the child: installs the filter (needs no_new_privs, which the Landlock step sets) and passes the
  // notification fd to the parent. Afterwards the child holds no fd of the broker.
  std::string ConfineSelf(const NetPolicy& policy);
  // In the parent, after fork.
  void ParentSide();
  // What the parent polls for POLLIN: the socketpair until the notification fd came, then that; -1 when
  // no run process can call listen() any more (or none was installed).
  int PollFd() const { return listener_ >= 0 ? listener_ : channel_; }
  // Receives the notification fd, or answers one listen() call. `revents` is what poll() returned.
  void Serve(short revents);
  // What connect() may reach (brokerConnect), set in the parent before it polls.
  void SetConnectRules(ConnectRules rules) { rules_ = std::move(rules); }
  // The child, with the connect broker: the notification fd is taken from it (it cannot send it).
  void SetChild(pid_t child) { child_ = child; }

 private:
  void Answer();
  int channel_ = -1;   // parent's (or child's) end of the socketpair
  int peer_ = -1;      // the other end, until fork
  int listener_ = -1;  // the notification fd, in the parent
  ConnectRules rules_;
  pid_t child_ = 0;
};

}  // namespace runboard::seccomp
