// Live grants (issue 28): a folder the person allows while a run waits at its tool call is given to that
// same run, in its own mount namespace, and Landlock stays a layer (docs/security-model.md, "Asks that
// wait at the tool call"; decisions.md: why below a slot and reached by a link).
//
// Landlock's rules are fixed when the run starts and attach to folders (inodes); a file passes when a
// folder with a rule lies on its way up, inside a mount (the walk skips the point a mount sits on). So
// the jail's child makes *slots* before Landlock: folders r1..r4 (read rights) and w1..w4 (the run's
// write rights) on a tmpfs of their own, which the run sees read-only at kGrantsDir. To give folder P,
// the jail forks an injector that clones P from the machine's tree (no link on its way), enters the
// run's mount namespace, mounts the clone at <slot>/<name> (read-only for a read) and puts a link at P's
// path in the run to it. The link is made only inside a read-only folder of the jail's own tmpfs (a
// cover, or a folder on the way to the run's trees in its private /tmp) that holds nothing of P's name:
// never where the run can write, never across a mount, never through a link.
#pragma once
#include <sys/types.h>

#include <string>
#include <vector>

namespace runboard::grants {

// Slots of each kind: a run asks at most 4 permissions (supervisor/src/node/asks.ts MAX_ASKS).
constexpr int kSlots = 4;
// Where the run sees its slots.
constexpr char kGrantsDir[] = "/dev/.runboard-grants";

// The child's part (single-threaded, in the run's user and mount namespaces, after ConfineByMounts and
// before Landlock).
struct ChildSlots {
  int dir = -1;                  // O_PATH of kGrantsDir in the run's namespace; -1: no slots
  int mntns = -1;                // the run's mount namespace
  std::vector<int> read, write;  // O_PATH of each slot folder, for Landlock's rules
};

// Makes the slot tmpfs and mounts it read-only at kGrantsDir. Returns "" or what failed.
std::string MakeSlots(ChildSlots* out);

// Hands the slots, the run's mount namespace and the devices of the jail's own tmpfs (the covers; the
// run's private /tmp when `privateTmp`) to the jail over `sock` (nothing when there are no slots), then
// closes every fd of `s` and `sock` here.
void SendToJail(int sock, ChildSlots* s, bool privateTmp);

// The jail's part: the supervisor's requests on the control fd (--control-fd), one line each,
//   grant <id> <read|write> <absolute real path>
// answered on the same fd: "ok <id> <where the run finds it>" or "refused <id> <why>".
class Server {
 public:
  // `viaSlots`: Landlock confines the run's filesystem (else mounts alone do, and the folder is mounted
  // at its own path).
  Server(int control, int fromChild, bool viaSlots) : control_(control), fromChild_(fromChild), viaSlots_(viaSlots) {}
  int PollFd() const { return control_; }
  void Serve();

 private:
  std::string Grant(bool write, const std::string& path, std::string* at);
  bool Receive();
  int control_, fromChild_;
  bool viaSlots_;
  bool received_ = false;
  int dir_ = -1, mntns_ = -1;
  std::vector<dev_t> devices_;
  int used_[2] = {0, 0};  // read, write slots taken
  std::string pending_;
};

}  // namespace runboard::grants
