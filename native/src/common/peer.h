// Peer credentials of a connected Unix socket: who is on the other end (for the supervisor's
// check that no process of a run talks to the host socket).
#pragma once
#include <string>

namespace runboard {

struct PeerCredentials {
  int pid = 0;
  int uid = -1;
  int gid = -1;
};

// Returns "" on success, else what failed.
std::string GetPeerCredentials(int fd, PeerCredentials* out);

}  // namespace runboard
