// A deadline as poll()'s timeout, for the loops that wait on pipes and sockets until one.
#pragma once

#include <algorithm>
#include <chrono>
#include <climits>

namespace kbv {

// -1 (no timeout) for time_point::max(), 0 once `deadline` passed, else the milliseconds left, rounded up.
inline int poll_timeout_ms(std::chrono::steady_clock::time_point now, std::chrono::steady_clock::time_point deadline) {
  if (deadline == std::chrono::steady_clock::time_point::max()) return -1;
  if (now >= deadline) return 0;
  const auto ms = std::chrono::ceil<std::chrono::milliseconds>(deadline - now).count();
  return static_cast<int>(std::min<decltype(ms)>(ms, INT_MAX));
}

}  // namespace kbv
