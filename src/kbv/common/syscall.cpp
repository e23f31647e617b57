#include "kbv/common/syscall.h"

#include <cstdio>
#include <cstring>
#include <string>
#include <system_error>

namespace kbv::detail {

void throw_syscall_error(int error, const char* call, const char* file, int line) {
  throw std::system_error(error, std::generic_category(), std::string(file) + ":" + std::to_string(line) + ": " + call);
}

void log_syscall_error(int error, const char* call, const char* file, int line) noexcept {
  // Cleanup paths report and carry on; errno is restored so the caller can still inspect it.
  const int saved = errno;
  char buffer[256];
  // GNU strerror_r: allocation-free and thread-safe, so safe in a noexcept path.
  const char* text = strerror_r(error, buffer, sizeof buffer);
  std::fprintf(stderr, "kbv: %s:%d: %s: %s\n", file, line, call, text);
  errno = saved;
}

}  // namespace kbv::detail
