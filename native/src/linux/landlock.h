// Landlock, by raw syscalls: Debian's linux-libc-dev may predate the ABI this kernel offers, so the
// structures and flags of ABI 4-7 are declared here (values from the kernel's UAPI, which is stable).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace runboard::landlock {

struct Policy {
  std::vector<std::string> writable;  // trees a run may write (workspace, run dir, flow extras)
  std::vector<std::string> devices;   // single device files that may be written (/dev/null, ...)
  std::vector<std::string> hidden;    // absolute real paths the run may not even read (keys, other runs)
  // The trees the run may read (absolute real paths), the hidden ones carved out: an allow-list. Empty:
  // everything but the hidden trees is readable (the jail used without --read).
  std::vector<std::string> readable;
  std::vector<uint16_t> tcpConnectPorts;  // TCP ports a run may connect to (empty: none)
  bool workspaceNoRemove = false;         // the workspace (".") without the remove rights (deletes are asked)
  std::vector<std::string> removable;     // folders below "." where deletes are allowed anyway (no links)
  // Grant slots (open folders, live_grants.h): read rights on each of readSlots, the writable trees'
  // rights on each of writeSlots; a folder the run gains while it lives is mounted below one.
  std::vector<int> readSlots, writeSlots;
  bool restrictFs = true;         // handle filesystem access (off: the jail confines it by mounts)
  bool restrictNetwork = true;    // handle TCP connect/bind at all (ABI >= 4)
  bool scopeAbstractUnix = true;  // no connect to abstract unix sockets outside (ABI >= 6)
  bool scopeSignals = true;       // no signals to processes outside the run (ABI >= 6)
};

// The ABI version the running kernel offers; 0 with errno-derived text in *reason when none.
int Abi(std::string* reason);

// Confines the calling thread and everything it later executes. Single-threaded callers only
// (the jail calls it between fork and exec). Returns "" on success, else what failed. With nothing
// to handle (no filesystem rules and an ABI without network rules or scopes) it enforces nothing
// and says so in *enforced.
std::string RestrictSelf(const Policy& policy, int abi, bool* enforced = nullptr);

}  // namespace runboard::landlock
