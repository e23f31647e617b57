// Checked POSIX calls: one macro that turns a -1 return into an exception naming the file, line and
// the call's text, and a no-throw variant for destructors (STYLE.md habit 4, after nvbench's cuda_call).
// Only for calls that report failure as -1 with errno (open, read, pipe2, fcntl, waitpid, killpg...);
// pthread_* and posix_spawn* return an error number instead and need their own check.
// Neither macro retries on EINTR: callers that loop on restartable calls (read/write/poll/waitpid)
// know whether a retry is safe and handle it there.
#pragma once

#include <cerrno>

namespace kbv::detail {

[[noreturn]] void throw_syscall_error(int error, const char* call, const char* file, int line);
void log_syscall_error(int error, const char* call, const char* file, int line) noexcept;

template <class T>
T check_syscall(T result, const char* call, const char* file, int line) {
  // errno is read here, before anything else can run and overwrite it.
  if (result == -1) throw_syscall_error(errno, call, file, line);
  return result;
}

template <class T>
T check_syscall_nothrow(T result, const char* call, const char* file, int line) noexcept {
  if (result == -1) log_syscall_error(errno, call, file, line);
  return result;
}

}  // namespace kbv::detail

// Evaluates `expr`; if it returns -1, throws std::system_error(errno) whose what() reads
// "FILE:LINE: EXPR: strerror". Otherwise yields the call's result, e.g. `int fd = KBV_SYSCALL(open(...));`.
#define KBV_SYSCALL(expr) ::kbv::detail::check_syscall((expr), #expr, __FILE__, __LINE__)

// Same check, but logs to stderr instead of throwing (for destructors and cleanup paths).
// Yields the call's result and leaves errno as the call set it.
#define KBV_SYSCALL_NOTHROW(expr) ::kbv::detail::check_syscall_nothrow((expr), #expr, __FILE__, __LINE__)
