// Probe for docs/decisions.md (live grants, issue 28): how Landlock's path walk treats a folder mounted
// into a live run's mount namespace after the run's domain was made. Build and run (as any user with
// unprivileged user namespaces, or root):
//   g++ -O1 -o /tmp/landlock_slots native/probes/landlock_slots.cc && /tmp/landlock_slots
// Three ways to give a Landlocked process a folder P (a file f inside), mounted by an unconfined helper
// in the same mount namespace after the process restricted itself:
//   direct:  P bound at cover/direct                                      (no rule on the way)
//   stacked: a slot folder S1 with a read rule bound at cover/stacked, P bound on top of it
//   below:   a slot tmpfs at cover/.grants with S2 (read rule); P bound at S2/p; cover/link -> S2/p
// Landlock walks from the file up to the root; at a mount's root it goes to the mount point and on to
// that point's parent *without* looking at the mount point itself (a hidden mount point is ignored),
// so "stacked" never meets S1's rule. Only a rule-bearing folder that is a real parent of P's mount
// point inside one mount ("below") is on the walk.
#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {
struct RulesetAttr {
  uint64_t fs, net, scoped;
};
struct PathBeneath {
  uint64_t allowed;
  int32_t fd;
} __attribute__((packed));
constexpr uint64_t kRead = (1ULL << 2) | (1ULL << 3);  // READ_FILE | READ_DIR
constexpr uint64_t kHandled = (1ULL << 16) - 1;        // ABI 1..5 filesystem rights (more than enough)

void Must(bool ok, const char* what) {
  if (!ok) {
    fprintf(stderr, "%s: %s\n", what, strerror(errno));
    exit(2);
  }
}
void WriteFile(const std::string& p, const std::string& s) {
  int fd = open(p.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  Must(fd >= 0, p.c_str());
  Must(write(fd, s.data(), s.size()) == static_cast<ssize_t>(s.size()), "write");
  close(fd);
}
const char* Try(const std::string& p) {
  int fd = open(p.c_str(), O_RDONLY);
  if (fd < 0) return errno == EACCES ? "EACCES (refused by Landlock)" : strerror(errno);
  close(fd);
  return "read";
}
}  // namespace

int main() {
  uid_t uid = getuid();
  gid_t gid = getgid();
  Must(unshare(CLONE_NEWUSER | CLONE_NEWNS) == 0, "unshare");
  WriteFile("/proc/self/setgroups", "deny");
  WriteFile("/proc/self/uid_map", std::to_string(uid) + " " + std::to_string(uid) + " 1");
  WriteFile("/proc/self/gid_map", std::to_string(gid) + " " + std::to_string(gid) + " 1");
  Must(mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) == 0, "private");
  char tmpl[] = "/tmp/ll-probe-XXXXXX";
  Must(mkdtemp(tmpl) != nullptr, "mkdtemp");
  const std::string base = tmpl, host = base + "/P", cover = base + "/cover", slots = base + "/slots";
  Must(mkdir(host.c_str(), 0755) == 0 && mkdir(cover.c_str(), 0755) == 0 && mkdir(slots.c_str(), 0755) == 0, "mkdir");
  WriteFile(host + "/f", "secret-of-P\n");
  WriteFile(host + "/../sibling", "sibling\n");
  Must(mount("tmpfs", cover.c_str(), "tmpfs", 0, "size=64k") == 0, "cover tmpfs");
  Must(mount("tmpfs", slots.c_str(), "tmpfs", 0, "size=64k") == 0, "slot tmpfs");
  for (const char* d : {"/S1", "/S2"}) Must(mkdir((slots + d).c_str(), 0755) == 0, "mkdir slot");
  for (const char* d : {"/direct", "/stacked", "/.grants"}) Must(mkdir((cover + d).c_str(), 0755) == 0, "mkdir");

  int go[2], done[2];
  Must(pipe(go) == 0 && pipe(done) == 0, "pipe");
  pid_t helper = fork();
  if (helper == 0) {  // unconfined: mounts P after the process below restricted itself
    char b;
    Must(read(go[0], &b, 1) == 1, "helper read");
    Must(mount(host.c_str(), (cover + "/direct").c_str(), nullptr, MS_BIND, nullptr) == 0, "bind direct");
    Must(mount((slots + "/S1").c_str(), (cover + "/stacked").c_str(), nullptr, MS_BIND, nullptr) == 0, "bind S1");
    Must(mount(host.c_str(), (cover + "/stacked").c_str(), nullptr, MS_BIND, nullptr) == 0, "bind P on S1");
    Must(mount(slots.c_str(), (cover + "/.grants").c_str(), nullptr, MS_BIND, nullptr) == 0, "bind slots");
    Must(mkdir((cover + "/.grants/S2/p").c_str(), 0755) == 0, "mkdir S2/p");
    Must(mount(host.c_str(), (cover + "/.grants/S2/p").c_str(), nullptr, MS_BIND, nullptr) == 0, "bind P below S2");
    Must(symlink((cover + "/.grants/S2/p").c_str(), (cover + "/link").c_str()) == 0, "symlink");
    Must(write(done[1], "d", 1) == 1, "helper write");
    _exit(0);
  }
  RulesetAttr attr{kHandled, 0, 0};
  int rfd = static_cast<int>(syscall(__NR_landlock_create_ruleset, &attr, sizeof(uint64_t), 0));
  Must(rfd >= 0, "landlock_create_ruleset");
  for (const char* d : {"/S1", "/S2"}) {
    int fd = open((slots + d).c_str(), O_PATH | O_CLOEXEC);
    PathBeneath rule{kRead, fd};
    Must(syscall(__NR_landlock_add_rule, rfd, 1, &rule, 0) == 0, "landlock_add_rule");
    close(fd);
  }
  Must(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0, "no_new_privs");
  Must(syscall(__NR_landlock_restrict_self, rfd, 0) == 0, "landlock_restrict_self");
  Must(write(go[1], "g", 1) == 1, "go");
  char b;
  Must(read(done[0], &b, 1) == 1, "done");
  waitpid(helper, nullptr, 0);
  printf("kernel Landlock ABI %ld\n", syscall(__NR_landlock_create_ruleset, nullptr, 0, 1));
  printf("direct  (P bound, no rule):           %s\n", Try(cover + "/direct/f"));
  printf("stacked (P bound on slot S1):         %s\n", Try(cover + "/stacked/f"));
  printf("below   (P bound below slot S2, link): %s\n", Try(cover + "/link/f"));
  printf("below   (its sibling, by ..):         %s\n", Try(cover + "/link/../../../../sibling"));
  return 0;
}
