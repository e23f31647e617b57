#include "kbv/sandbox/enter.h"

#include <grp.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <string>
#include <system_error>

#include "kbv/sandbox/filesystem.h"
#include "kbv/sandbox/seccomp_filter.h"

namespace kbv::sandbox {
namespace {

void check(int result, const char* what) {
  if (result == -1) throw std::system_error(errno, std::generic_category(), std::string("sandbox: ") + what);
}

// This process's id outside the sandbox: /proc as it was mounted before, the outer namespace's.
pid_t outer_pid() {
  char link[32] = {};
  check(static_cast<int>(readlink("/proc/self", link, sizeof link - 1)), "readlink /proc/self");
  return static_cast<pid_t>(std::stol(link));
}

void set_limit(int resource, std::uint64_t value, const char* what) {
  if (value == 0) return;
  const rlimit limit{static_cast<rlim_t>(value), static_cast<rlim_t>(value)};
  check(setrlimit(resource, &limit), what);
}

void apply_limits(const Limits& limits) {
  set_limit(RLIMIT_DATA, limits.memory_bytes, "setrlimit(RLIMIT_DATA)");
  set_limit(RLIMIT_NPROC, limits.processes, "setrlimit(RLIMIT_NPROC)");
  set_limit(RLIMIT_CPU, limits.cpu_seconds, "setrlimit(RLIMIT_CPU)");
  set_limit(RLIMIT_FSIZE, limits.file_bytes, "setrlimit(RLIMIT_FSIZE)");
  const rlimit no_core{0, 0};
  check(setrlimit(RLIMIT_CORE, &no_core), "setrlimit(RLIMIT_CORE)");
}

// Every capability out of the bounding set, then the root user given up for the sandbox's own:
// a process that leaves uid 0 this way keeps no capability, and can never regain one.
void drop_privileges(uid_t uid, gid_t gid) {
  int last = 40;
  std::ifstream("/proc/sys/kernel/cap_last_cap") >> last;
  for (int cap = 0; cap <= last; ++cap) check(prctl(PR_CAPBSET_DROP, cap, 0, 0, 0), "dropping a capability");
  check(setgroups(0, nullptr), "setgroups");
  check(setresgid(gid, gid, gid), "setresgid");
  check(setresuid(uid, uid, uid), "setresuid");
  if (setuid(0) == 0) throw std::runtime_error("sandbox: uid 0 could be taken back");
  check(prctl(PR_SET_DUMPABLE, 1, 0, 0, 0), "PR_SET_DUMPABLE");  // /proc/self stays the process's own
}

double entered_seconds = -1;

}  // namespace

void enter(const Spec& spec) {
  const auto started = std::chrono::steady_clock::now();
  if (geteuid() != 0) throw std::runtime_error("sandbox: needs to be started as root (or run with --sandbox off)");
  const pid_t outer = outer_pid();
  if (getsid(0) != getpid()) check(setsid(), "setsid");
  const uid_t uid = kUserBase + static_cast<uid_t>(outer);
  const gid_t gid = kUserBase;
  build_view(spec, uid, gid);
  static constexpr char kHost[] = "kbv-sandbox";
  check(sethostname(kHost, sizeof kHost - 1), "sethostname");
  // Its user has no passwd entry: what asks for the user's name (getpass.getuser(), which
  // torch.compile's cache folder is named after) finds it in the environment.
  for (const char* name : kUserNameVariables) check(setenv(name, kUserName, 1), "setenv");
  apply_limits(spec.limits);
  // Where the machine runs short all the same, the kernel's OOM killer takes the sandbox first.
  if (!(std::ofstream("/proc/self/oom_score_adj") << "1000"))
    throw std::runtime_error("sandbox: cannot set oom_score_adj");
  drop_privileges(uid, gid);
  umask(022);
  check(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "PR_SET_NO_NEW_PRIVS");
  install_seccomp_filter();
  entered_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
}

void enter_or_exit(const Spec& spec) {
  try {
    enter(spec);
  } catch (const std::exception& failed) {
    std::fprintf(stderr, "kbv: %s\n", failed.what());
    std::fflush(stderr);
    _exit(kSetupFailedExit);
  }
}

double setup_seconds() { return entered_seconds; }

}  // namespace kbv::sandbox
