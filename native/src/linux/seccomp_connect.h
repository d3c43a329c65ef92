// The jail's connect broker (linux/seccomp_net.h), for the subreaper fallback only: a run without a user
// namespace could otherwise connect() to any pathname Unix socket whose name it knows (Landlock ABI <= 7
// has no right for it, and a filter cannot read the address). The filter hands connect(), sendto() with
// an address and sendmsg() to the jail's outer process, which makes each call itself, on the run's own
// socket (pidfd_getfd), with what it copied out of the caller once (process_vm_readv):
//  * a pathname Unix address: the path is resolved by the jail (a relative one from the caller's working
//    directory, no /proc magic links), opened O_PATH, checked to be a socket (fstat) lying in a tree the
//    run may write or named by the run's allow-list (where that very inode resolved), and connected or sent
//    to through /proc/self/fd/N: the inode checked is the inode reached. Else EACCES.
//  * any other address (abstract Unix, TCP, UDP, netlink) and sendmsg() without one: the jail calls it as
//    it is, from a Landlock domain that carries the run's network rules (TCP ports, the abstract-socket
//    scope; the run's own domain is nested in it), so Landlock judges the jail's call as it would have
//    judged the run's. Never SECCOMP_USER_NOTIF_FLAG_CONTINUE: another thread could swap the address,
//    or the fd for a Unix socket, between a check and the call.
// A send that cannot block is made in the jail's loop; a connect, or a send on a blocking socket, on a thread
// of its own (a blocking call waits there, not in the jail's loop), at most kMaxCalls at once (more: EAGAIN).
// A connect() to an X display's abstract name (`@/tmp/.X11-unix/X<N>`) that the jail's domain refuses (EPERM:
// Landlock's scope) says ECONNREFUSED, as if no one listened there: nothing is reached, and libxcb, which
// tries that name first, falls back to the display's path socket on that answer alone (decision 134).
// With a mount namespace (displayNamesOnly: a run on the person's display) only connect() comes here, and only
// that answer is the jail's: every other connect continues in the run as the filter would have let it (a
// thread swapping the address meanwhile gets what the kernel and the run's own domain say).
#pragma once
#include <linux/seccomp.h>

#include <string>
#include <vector>

namespace runboard::seccomp {

struct ConnectRules {
  std::vector<std::string> trees;    // real paths: a socket below one of them may be reached (writable trees)
  std::vector<std::string> sockets;  // real paths of the sockets the run was given (its allow-list)
  bool displayNamesOnly = false;     // a mount namespace: only X's refused abstract names are the jail's
};

// Whether `nr` is a call the connect broker answers.
bool IsConnectCall(int nr);

// Answers the notification `req` (already received on `listener`) on a thread of its own; takes a dup of
// `listener`. `rules` must outlive the jail's loop.
void AnswerConnect(int listener, const seccomp_notif& req, const ConnectRules& rules);

}  // namespace runboard::seccomp
