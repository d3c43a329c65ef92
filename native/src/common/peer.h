// Peer credentials of a connected Unix socket: who is on the other end (for the supervisor's
// check that no process of a run talks to the host socket).
#pragma once
#include <string>
#include <vector>

namespace runboard {

struct PeerCredentials {
  int pid = 0;
  int uid = -1;
  int gid = -1;
};

// Returns "" on success, else what failed.
std::string GetPeerCredentials(int fd, PeerCredentials* out);

// Who connected, in a way the peer cannot race: the connecting process held by a pidfd, its user
// namespace, and its ancestors, read while it was alive. Fails (returns why) when the peer cannot be
// identified, e.g. because it has exited: the caller then refuses the connection.
struct PeerIdentity {
  int pid = 0;
  int uid = -1;
  std::string userNs;           // "dev:ino" of its user namespace ("" where we may not look)
  bool userNsBelowOwn = false;  // created (at any depth) inside our namespace, as every run's is
  std::vector<int> ancestors;   // parent, grandparent, … up to pid 1
};
std::string GetPeerIdentity(int fd, PeerIdentity* out);

// "dev:ino" of this process's user namespace.
std::string OwnUserNamespace(std::string* out);

}  // namespace runboard
