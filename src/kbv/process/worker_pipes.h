// A worker's pipes as the parent makes them (worker_process.cpp, worker_spawn.cpp): the parent's
// ends non-blocking, 1 MiB buffers, close-on-exec everywhere.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "kbv/common/syscall.h"
#include "kbv/ipc/channel.h"

namespace kbv::process::pipes {

struct Pipe {
  ipc::UniqueFd read, write;
};

inline Pipe make_pipe() {
  int fds[2];
  KBV_SYSCALL(pipe2(fds, O_CLOEXEC));  // close-on-exec: no other child we start inherits these
  return {ipc::UniqueFd(fds[0]), ipc::UniqueFd(fds[1])};
}

inline void set_nonblocking(int fd) {
  const int flags = KBV_SYSCALL(fcntl(fd, F_GETFL));
  KBV_SYSCALL(fcntl(fd, F_SETFL, flags | O_NONBLOCK));
}

// A worker's three pipes. Big tensors cross them: 1 MiB buffers (the unprivileged maximum) cut
// syscalls 16-fold (best effort: a user over its pipe-buffer quota keeps the 64 KiB default). The
// parent's ends never block (its waits are polls with deadlines); O_NONBLOCK belongs to these open
// file descriptions only, the child's ends stay blocking.
struct WorkerPipes {
  Pipe command = make_pipe(), result = make_pipe(), log = make_pipe();
  int log_capacity = 0;
  WorkerPipes() {
    for (const Pipe* p : {&command, &result, &log}) fcntl(p->read.get(), F_SETPIPE_SZ, 1 << 20);
    log_capacity = std::max(KBV_SYSCALL(fcntl(log.read.get(), F_GETPIPE_SZ)), 4096);
    set_nonblocking(command.write.get());
    set_nonblocking(result.read.get());
    set_nonblocking(log.read.get());
  }
};

template <class F>
auto retry_eintr(F call) {
  decltype(call()) result;
  while ((result = call()) == -1 && errno == EINTR) {
  }
  return result;
}

}  // namespace kbv::process::pipes
