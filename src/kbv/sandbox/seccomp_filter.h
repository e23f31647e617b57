// The system calls a sandboxed process may not make (libseccomp). No kernel, build or import needs
// any of them; each entry says what it would reach. Calls that reach outside the sandbox or into
// the kernel's own state kill the whole process (SIGSYS: kbv sees it from outside, whatever the
// candidate does with its own signal handlers); calls that libraries probe and do without return
// an error instead.
#pragma once

#include <string>
#include <vector>

namespace kbv::sandbox {

struct Refusal {
  const char* call;
  bool kills;       // the process dies with SIGSYS; else the call fails (EPERM; clone3 ENOSYS)
  const char* why;  // what the call would reach
};

// The list, as docs/SECURITY.md prints it.
const std::vector<Refusal>& refused_calls();

// The socket families a sandboxed process may open (socket, socketpair): AF_UNIX, AF_INET and
// AF_INET6 (inside its empty network namespace: libraries probe them) and AF_NETLINK's routing
// protocol (getifaddrs). Any other family fails with EPERM: vsock reaches the host of a virtual
// machine from every network namespace, and no build, import or CUDA call needs the rest.
const std::vector<int>& allowed_socket_families();

// Installs the filter on every thread of this process (no_new_privs must be set). Throws
// std::runtime_error when libseccomp refuses.
void install_seccomp_filter();

}  // namespace kbv::sandbox
