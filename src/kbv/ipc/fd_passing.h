// Open files handed between processes over a SOCK_SEQPACKET socket (SCM_RIGHTS): the zygote's
// requests (a worker's pipes), and the files a comparison needs that another worker made (a
// candidate's output region, handed to the reference's worker, which compares where the data is).
#pragma once

#include <chrono>
#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kbv/ipc/channel.h"

namespace kbv::ipc {

// One datagram: `text` and `fds` (at most kMaxPassedFds). Throws std::system_error.
void send_fds(int socket, std::string_view text, std::span<const int> fds);

inline constexpr std::size_t kMaxPassedFds = 8;

struct PassedFds {
  enum class Status { message, timeout, closed } status = Status::closed;
  std::string text;
  std::vector<UniqueFd> fds;  // close-on-exec
};

// The next datagram until `deadline` (time_point::max(): no deadline). Throws std::system_error.
PassedFds receive_fds(int socket, std::chrono::steady_clock::time_point deadline);

}  // namespace kbv::ipc
