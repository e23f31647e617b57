// The system-call filter's socket families, in a child that installs it: vsock and every family
// no build or CUDA call needs fail with EPERM, also with high bits set in the family (the kernel
// reads an int); AF_UNIX, AF_INET, AF_INET6 and netlink's routing protocol still open.
#include "kbv/sandbox/seccomp_filter.h"

#include <gtest/gtest.h>

#include <linux/netlink.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace kbv::sandbox {
namespace {

struct Attempt {
  std::string name;
  std::uint64_t family;  // as the register holds it
  int type, protocol;
};

// Each attempt's errno (0: it opened) in a child under the filter.
std::map<std::string, int> open_under_filter(const std::vector<Attempt>& attempts) {
  int results[2];
  EXPECT_EQ(pipe(results), 0);
  const pid_t child = fork();
  if (child == 0) {
    close(results[0]);
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) _exit(2);
    try {
      install_seccomp_filter();
    } catch (...) {
      _exit(3);
    }
    for (const Attempt& a : attempts) {
      const long fd = syscall(SYS_socket, a.family, a.type, a.protocol);
      const int error = fd >= 0 ? 0 : errno;
      if (fd >= 0) close(static_cast<int>(fd));
      if (write(results[1], &error, sizeof error) != sizeof error) _exit(4);
    }
    _exit(0);
  }
  close(results[1]);
  std::map<std::string, int> errors;
  for (const Attempt& a : attempts) {
    int error = -1;
    if (read(results[0], &error, sizeof error) != sizeof error) break;
    errors[a.name] = error;
  }
  close(results[0]);
  int status = 0;
  waitpid(child, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
  return errors;
}

TEST(SeccompFilter, RefusesEverySocketFamilyButTheFewABuildAndCudaNeed) {
  const std::vector<Attempt> refused = {
      {"vsock", AF_VSOCK, SOCK_STREAM, 0},
      {"vsock with high bits", (std::uint64_t{1} << 32) | AF_VSOCK, SOCK_STREAM, 0},
      {"packet", AF_PACKET, SOCK_RAW, 0},
      {"can", AF_CAN, SOCK_RAW, 1},
      {"tipc", AF_TIPC, SOCK_RDM, 0},
      {"rds", AF_RDS, SOCK_SEQPACKET, 0},
      {"bluetooth", AF_BLUETOOTH, SOCK_STREAM, 3},
      {"alg", AF_ALG, SOCK_SEQPACKET, 0},
      {"key", AF_KEY, SOCK_RAW, 2},
      {"netlink uevent", AF_NETLINK, SOCK_DGRAM, NETLINK_KOBJECT_UEVENT},
      {"past AF_MAX", AF_MAX + 3, SOCK_STREAM, 0},
      {"negative", static_cast<std::uint32_t>(-1), SOCK_STREAM, 0},
  };
  const std::vector<Attempt> allowed = {
      {"unix", AF_UNIX, SOCK_STREAM, 0},
      {"inet", AF_INET, SOCK_STREAM, 0},
      {"inet6", AF_INET6, SOCK_DGRAM, 0},
      {"netlink route", AF_NETLINK, SOCK_RAW, NETLINK_ROUTE},
  };
  std::vector<Attempt> all = refused;
  all.insert(all.end(), allowed.begin(), allowed.end());
  const std::map<std::string, int> errors = open_under_filter(all);
  ASSERT_EQ(errors.size(), all.size());
  for (const Attempt& a : refused) EXPECT_EQ(errors.at(a.name), EPERM) << a.name;
  for (const Attempt& a : allowed) EXPECT_NE(errors.at(a.name), EPERM) << a.name;
  EXPECT_EQ(errors.at("unix"), 0);
}

}  // namespace
}  // namespace kbv::sandbox
