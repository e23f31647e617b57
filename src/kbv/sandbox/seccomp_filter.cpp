#include "kbv/sandbox/seccomp_filter.h"

#include <linux/netlink.h>
#include <sched.h>
#include <seccomp.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <stdexcept>

namespace kbv::sandbox {

const std::vector<Refusal>& refused_calls() {
  static const std::vector<Refusal> calls = {
      {"ptrace", true, "reads and writes another process's memory and registers"},
      {"process_vm_readv", true, "reads another process's memory"},
      {"process_vm_writev", true, "writes another process's memory"},
      {"pidfd_getfd", true, "takes a file descriptor out of another process"},
      {"kcmp", true, "compares kernel objects of other processes"},
      {"process_madvise", true, "acts on another process's memory"},
      {"mount", true, "changes the filesystem view the sandbox built"},
      {"umount2", true, "uncovers what the sandbox hid"},
      {"pivot_root", true, "changes the root the sandbox built"},
      {"chroot", true, "changes the root the sandbox built"},
      {"move_mount", true, "changes the filesystem view"},
      {"open_tree", true, "copies mounts"},
      {"fsopen", true, "makes new filesystems"},
      {"fsmount", true, "makes new filesystems"},
      {"fsconfig", true, "configures new filesystems"},
      {"fspick", true, "reconfigures mounted filesystems"},
      {"mount_setattr", true, "makes read-only mounts writable"},
      {"setns", true, "enters other namespaces (the host's network, processes, mounts)"},
      {"unshare", true, "makes new namespaces: a user namespace hands back every capability"},
      {"kexec_load", true, "replaces the running kernel"},
      {"kexec_file_load", true, "replaces the running kernel"},
      {"init_module", true, "loads kernel code"},
      {"finit_module", true, "loads kernel code"},
      {"delete_module", true, "unloads kernel code"},
      {"bpf", true, "loads programs into the kernel"},
      {"keyctl", true, "reads and writes the kernel's key rings, shared across processes"},
      {"add_key", true, "writes the kernel's key rings"},
      {"request_key", true, "reads the kernel's key rings"},
      {"reboot", true, "stops the machine"},
      {"swapon", true, "changes the machine's memory"},
      {"swapoff", true, "changes the machine's memory"},
      {"acct", true, "writes process accounting for the machine"},
      {"quotactl", true, "changes disk quotas"},
      {"quotactl_fd", true, "changes disk quotas"},
      {"syslog", true, "reads the kernel's log"},
      {"vhangup", true, "hangs up terminals"},
      {"open_by_handle_at", true, "opens files by handle, around every mount"},
      {"name_to_handle_at", true, "makes handles for open_by_handle_at"},
      {"iopl", true, "reaches I/O ports"},
      {"ioperm", true, "reaches I/O ports"},
      {"lookup_dcookie", true, "reads kernel profiling state"},
      {"fanotify_init", true, "watches the whole filesystem"},
      {"userfaultfd", true, "pauses the kernel inside a call that touches candidate memory (a way to widen races)"},
      {"settimeofday", true, "changes the clock kbv reads"},
      {"clock_settime", true, "changes the clock kbv reads"},
      {"clock_adjtime", true, "changes the clock kbv reads"},
      {"adjtimex", true, "changes the clock kbv reads"},
      {"sethostname", true, "renames the machine"},
      {"setdomainname", true, "renames the machine"},
      {"perf_event_open", false,
       "reads hardware counters and other processes' events; the profiler kbv uses does not need it"},
      {"io_uring_setup", false, "does file and socket work that no filter sees"},
      {"clone3", false,
       "makes processes with flags the filter cannot read: glibc falls back to clone, whose flags it can"},
  };
  return calls;
}

const std::vector<int>& allowed_socket_families() {
  static const std::vector<int> families = {AF_UNIX, AF_INET, AF_INET6, AF_NETLINK};
  return families;
}

namespace {

struct ContextDeleter {
  void operator()(void* context) const { seccomp_release(context); }
};

// A comparison of the call's argument `index` (the whole 64-bit register) with `value`.
scmp_arg_cmp argument(unsigned index, scmp_compare op, int value) {
  return {index, op, static_cast<scmp_datum_t>(value), 0};
}

void check(int result, const std::string& what) {
  if (result < 0) throw std::runtime_error("sandbox: seccomp: " + what + ": " + std::strerror(-result));
}

}  // namespace

void install_seccomp_filter() {
  std::unique_ptr<void, ContextDeleter> context(seccomp_init(SCMP_ACT_ALLOW));
  if (!context) throw std::runtime_error("sandbox: seccomp_init failed");
  for (const Refusal& refusal : refused_calls()) {
    const int call = seccomp_syscall_resolve_name(refusal.call);
    if (call == __NR_SCMP_ERROR) continue;  // not on this architecture
    const std::uint32_t action = refusal.kills                              ? SCMP_ACT_KILL_PROCESS
                                 : std::strcmp(refusal.call, "clone3") == 0 ? SCMP_ACT_ERRNO(ENOSYS)
                                                                            : SCMP_ACT_ERRNO(EPERM);
    check(seccomp_rule_add(context.get(), action, call, 0), refusal.call);
  }
  // clone that makes a namespace: the same as unshare.
  for (const std::uint64_t flag :
       {CLONE_NEWUSER, CLONE_NEWNS, CLONE_NEWPID, CLONE_NEWNET, CLONE_NEWIPC, CLONE_NEWUTS, CLONE_NEWCGROUP}) {
    check(seccomp_rule_add(context.get(), SCMP_ACT_KILL_PROCESS, SCMP_SYS(clone), 1,
                           SCMP_A0(SCMP_CMP_MASKED_EQ, flag, flag)),
          "clone");
  }
  // Typing into a terminal's input (the user's shell, if one were reachable).
  for (const unsigned long request : {static_cast<unsigned long>(TIOCSTI), static_cast<unsigned long>(TIOCLINUX)}) {
    check(seccomp_rule_add(context.get(), SCMP_ACT_KILL_PROCESS, SCMP_SYS(ioctl), 1,
                           SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, request)),
          "ioctl");
  }
  // Socket families: each family not allowed refused by one rule, and every number from AF_MAX on
  // (families this kernel may know and glibc does not); netlink only for its routing protocol.
  // The filter sees the whole 64-bit register, the kernel reads an int: a family with high bits set
  // is at least AF_MAX to the filter, and so refused.
  const std::vector<int>& allowed = allowed_socket_families();
  for (const int call : {SCMP_SYS(socket), SCMP_SYS(socketpair)}) {
    for (int family = 0; family < AF_MAX; ++family) {
      if (std::find(allowed.begin(), allowed.end(), family) != allowed.end()) continue;
      check(seccomp_rule_add(context.get(), SCMP_ACT_ERRNO(EPERM), call, 1, argument(0, SCMP_CMP_EQ, family)),
            "socket");
    }
    check(seccomp_rule_add(context.get(), SCMP_ACT_ERRNO(EPERM), call, 1, argument(0, SCMP_CMP_GE, AF_MAX)), "socket");
    check(seccomp_rule_add(context.get(), SCMP_ACT_ERRNO(EPERM), call, 2, argument(0, SCMP_CMP_EQ, AF_NETLINK),
                           argument(2, SCMP_CMP_NE, NETLINK_ROUTE)),
          "socket");
  }
  check(seccomp_attr_set(context.get(), SCMP_FLTATR_CTL_TSYNC, 1), "synchronising threads");
  check(seccomp_load(context.get()), "loading the filter");
}

}  // namespace kbv::sandbox
