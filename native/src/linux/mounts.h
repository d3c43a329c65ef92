// Filesystem confinement by a private mount namespace, for runs whose agent brings its own sandbox
// (codex's bubblewrap): a Landlock domain that handles filesystem access forbids every mount change,
// so such an agent cannot build its sandbox inside one. This gives the same filesystem policy with
// mounts instead (docs/security-model.md, "Agent sandboxes"):
//   * every mount read-only, except fresh rw copies of the writable trees;
//   * the hidden trees covered by an empty read-only tmpfs (with the writable trees below them kept);
//   * a /dev with the allowed devices only, and a devpts instance of the run's own;
//   * a fresh /proc for the run's PID namespace (bubblewrap finds its children there);
//   * optionally a /tmp of the run's own (tools such as codex's sandbox helper create fixed names there);
//   * no capabilities left, so the run cannot undo any of it.
#pragma once
#include <sys/types.h>

#include <string>
#include <vector>

namespace runboard::mounts {

struct Policy {
  std::vector<std::string> writable;  // trees the run may write (absolute; missing ones are skipped)
  std::vector<std::string> hidden;    // trees the run may not read (absolute real paths)
  std::vector<std::string> devices;   // the only device files in the run's /dev (/dev/null, ...)
  // The size of the tmpfs that becomes the run's /tmp (tmpfs's size=: "25%", "512m"): new names there are
  // the run's own and vanish with it; of what the machine's /tmp holds, only the entries in tmpSeen show
  // (read-only). "" keeps /tmp.
  std::string privateTmpSize;
  // Paths inside writable trees that stay read-only (read-only bind mounts on top): the project's
  // config and cards when the run works in the project folder. Missing ones are skipped.
  std::vector<std::string> readOnly;
  // Paths the run needs (its trees, command, environment): the entries of the machine's /tmp they lie
  // in are the only ones its private /tmp shows (read-only). The rest of the machine's /tmp is not there.
  std::vector<std::string> tmpSeen;
  // The trees the run may read (absolute real paths): an allow-list. When given, every top-level folder of
  // / that is not readable as a whole is covered by an empty read-only tmpfs with the readable and writable
  // trees below it bound back in (read-only copies of the readable ones), top-level files are covered
  // by /dev/null, and the private /tmp shows these trees alone (tmpSeen is not used). Empty: everything
  // but the hidden trees is visible.
  std::vector<std::string> readable;
  // Files and folders inside the readable trees that the run does not see (what only root may read in
  // /etc, for a root run): a file is covered by /dev/null, a folder by an empty one. Missing ones are skipped.
  std::vector<std::string> blank;
};

// Call in the jail's child: single-threaded, PID 1 of the run's PID namespace, with all capabilities
// in the run's user namespace. Returns "" on success, else what failed.
std::string ConfineByMounts(const Policy& policy);

// Covers each of `masks` (directories) with an empty read-only tmpfs in which only the `keeps` that are
// its direct children appear (bind mounts of the originals), in a mount namespace of the caller's own:
// a private-display run sees its own X socket in /tmp/.X11-unix and not the user's (Landlock, ABI <= 7,
// does not govern connect() on pathname Unix sockets). Call in the jail's child, like ConfineByMounts.
std::string MaskDirs(const std::vector<std::string>& masks, const std::vector<std::string>& keeps);

// The device of the tmpfs whose folders cover the top-level folders (ConfineByMounts with an allow-list);
// 0 when none was made. A live grant (live_grants.h) creates its folders only on such a cover.
extern dev_t gCoverDevice;

// Drops every capability (effective, permitted, inheritable, ambient, bounding set) of the caller,
// but CAP_SETFCAP in the bounding set of a root run (see mounts.cc).
std::string DropCapabilities();

}  // namespace runboard::mounts
