#include <sys/socket.h>
#include <cerrno>
#include <cstring>

#include "common/peer.h"

namespace runboard {

std::string GetPeerCredentials(int fd, PeerCredentials* out) {
  struct ucred cred {};
  socklen_t len = sizeof cred;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) return std::string("SO_PEERCRED: ") + strerror(errno);
  out->pid = cred.pid;
  out->uid = static_cast<int>(cred.uid);
  out->gid = static_cast<int>(cred.gid);
  return "";
}

}  // namespace runboard
