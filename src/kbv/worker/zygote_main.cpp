// The zygote's side (zygote.h): Python and torch imported once, then a fork for every worker.
#include <Python.h>

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <string>

#include <nlohmann/json.hpp>
#include <pybind11/pybind11.h>

#include "kbv/measure/memory.h"
#include "kbv/python/harness.h"
#include "kbv/python/interpreter.h"
#include "kbv/sandbox/enter.h"
#include "kbv/worker/channel.h"
#include "kbv/worker/worker_main.h"
#include "kbv/worker/zygote.h"

namespace kbv::worker {
namespace {

void reply(const nlohmann::json& message) {
  const std::string text = message.dump();
  while (send(kInheritedFd, text.data(), text.size(), MSG_NOSIGNAL) == -1 && errno == EINTR) {
  }
}

// A request's text and its three fds (command read, result write, log write); n == 0 when the
// parent closed the socket.
struct Request {
  ssize_t n = 0;
  std::string text;
  int fds[4] = {-1, -1, -1, -1};  // command, result, log; the worker's inherited fd when given
  int fd_count = 0;
};

Request receive_request() {
  Request request;
  static char buffer[1 << 16];
  iovec data{buffer, sizeof buffer};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof request.fds)];
  msghdr message{};
  message.msg_iov = &data;
  message.msg_iovlen = 1;
  message.msg_control = control;
  message.msg_controllen = sizeof control;
  while ((request.n = recvmsg(kInheritedFd, &message, MSG_CMSG_CLOEXEC)) == -1 && errno == EINTR) {
  }
  if (request.n <= 0) return request;
  request.text.assign(buffer, static_cast<std::size_t>(request.n));
  for (cmsghdr* header = CMSG_FIRSTHDR(&message); header != nullptr; header = CMSG_NXTHDR(&message, header)) {
    if (header->cmsg_level != SOL_SOCKET || header->cmsg_type != SCM_RIGHTS) continue;
    const int count = static_cast<int>((header->cmsg_len - CMSG_LEN(0)) / sizeof(int));
    for (int i = 0; i < count; ++i) {
      int fd;
      std::memcpy(&fd, CMSG_DATA(header) + i * sizeof(int), sizeof fd);
      if (request.fd_count < 4) {
        request.fds[request.fd_count++] = fd;
      } else {
        close(fd);
      }
    }
  }
  return request;
}

// In the forked worker: wait until the intermediate parent is gone and this process is the
// parent's child, tie its life to the parent's, move the pipes onto the worker's fds, set the
// environment, enter its sandbox if it has one, serve. Never returns.
[[noreturn]] void become_worker(pid_t intermediate, int intermediate_pidfd, pid_t parent, const Request& request,
                                const nlohmann::json& spec) {
  const bool sandboxed = !spec.at("sandbox").is_null();
  if (sandboxed) {
    // PID 1 of its own namespace: its parent's id reads 0 whoever the parent is. The pidfd turns
    // readable once the intermediate has exited, and so once this process was re-parented.
    pollfd gone{intermediate_pidfd, POLLIN, 0};
    while (poll(&gone, 1, -1) == -1 && errno == EINTR) {
    }
    close(intermediate_pidfd);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    // The parent died before PDEATHSIG was armed: the command pipe's only writer is gone.
    pollfd commands{request.fds[0], POLLIN, 0};
    if (poll(&commands, 1, 0) == 1 && (commands.revents & POLLHUP)) _exit(1);
  } else {
    while (getppid() == intermediate) usleep(50);
    if (getppid() != parent) _exit(1);  // the parent died: no one would reap or kill this worker
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(1);  // it died before PDEATHSIG was armed
    setpgid(0, 0);
  }
  const int null = open("/dev/null", O_RDONLY);
  // The inherited fd first: kInheritedFd (the zygote's socket here) is none of the sources.
  const bool inherits = request.fd_count == 4;
  if ((inherits && dup2(request.fds[3], kInheritedFd) == -1) || null == -1 || dup2(null, 0) == -1 ||
      dup2(request.fds[2], 1) == -1 || dup2(request.fds[2], 2) == -1 || dup2(request.fds[0], kCommandFd) == -1 ||
      dup2(request.fds[1], kResultFd) == -1)
    _exit(127);
  // The zygote's socket (unless replaced by the inherited fd), the received fds, anything inherited.
  close_range((inherits ? kInheritedFd : kResultFd) + 1, ~0u, 0);
  PyOS_AfterFork_Child();
  try {
    // Through os.environ, which also calls putenv: torch reads some from Python, CUDA from C.
    pybind11::object environ = pybind11::module_::import("os").attr("environ");
    for (const auto& entry : spec.at("environment")) {
      environ[pybind11::str(entry.at(0).get<std::string>())] = pybind11::str(entry.at(1).get<std::string>());
    }
  } catch (const std::exception& error) {
    std::fprintf(stderr, "kbv: zygote worker: cannot set its environment: %s\n", error.what());
    _exit(127);
  }
  if (sandboxed) {
    sandbox::enter_or_exit(sandbox::spec_from_json(spec.at("sandbox")));
    // What it set in the C environment, where this process's Python (started before it) reads.
    pybind11::object environ = pybind11::module_::import("os").attr("environ");
    for (const char* name : sandbox::kUserNameVariables) environ[name] = sandbox::kUserName;
  }
  const std::string role = spec.at("role");
  int code = 1;
  try {  // nothing may unwind back into the zygote's loop, which this process still has on its stack
    code = serve_worker(role == "reference" ? Role::reference : Role::candidate);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "kbv: internal error: %s\n", error.what());
  } catch (...) {
    std::fprintf(stderr, "kbv: internal error: an exception that is not a std::exception\n");
  }
  std::fflush(nullptr);
  _exit(code);
}

}  // namespace

int run_zygote(const std::string& python_executable) {
  measure::install_counting_cpu_allocator();
  python::start_interpreter(python_executable);
  python::preload_for_workers();
  const pid_t parent = getppid();
  reply({{"ready", true}, {"python_paths", python::search_paths()}});
  for (;;) {
    Request request = receive_request();
    if (request.n == 0) {  // the parent closed the socket: done (no interpreter or torch teardown)
      std::fflush(nullptr);
      _exit(0);
    }
    if (request.n < 0) {
      std::perror("kbv: zygote: recvmsg");
      return 1;
    }
    const nlohmann::json spec = nlohmann::json::parse(request.text, nullptr, false);
    if (request.fd_count < 3 || spec.is_discarded() || !spec.contains("role") || !spec.contains("environment") ||
        !spec.contains("sandbox")) {
      for (int i = 0; i < request.fd_count; ++i) close(request.fds[i]);
      reply({{"error", "malformed request"}});
      continue;
    }
    int pid_pipe[2];
    if (pipe2(pid_pipe, O_CLOEXEC) == -1) {
      for (int fd : request.fds) close(fd);
      reply({{"error", std::string("pipe: ") + std::strerror(errno)}});
      continue;
    }
    std::fflush(nullptr);
    PyOS_BeforeFork();
    const pid_t intermediate = fork();
    if (intermediate == 0) {
      // Forks the worker, names it to the zygote and exits, so the worker is re-parented to kbv.
      // A sandboxed worker is forked into new namespaces, the PID namespace's first process.
      const pid_t self = getpid();
      const bool sandboxed = !spec.at("sandbox").is_null();
      const int pidfd = sandboxed ? static_cast<int>(syscall(SYS_pidfd_open, self, 0)) : -1;
      const bool ready = !sandboxed || (pidfd != -1 && unshare(sandbox::namespace_flags()) == 0);
      const pid_t worker = ready ? fork() : -1;
      if (worker == 0) become_worker(self, pidfd, parent, request, spec);
      if (worker > 0 && !sandboxed) setpgid(worker, worker);  // before anyone can killpg it (the worker does it too)
      const int result[2] = {worker, worker == -1 ? errno : 0};
      [[maybe_unused]] const ssize_t written = write(pid_pipe[1], result, sizeof result);
      _exit(0);
    }
    const int fork_error = errno;
    PyOS_AfterFork_Parent();
    close(pid_pipe[1]);
    for (int fd : request.fds) close(fd);
    int result[2] = {-1, fork_error};
    if (intermediate > 0) {
      ssize_t n;
      while ((n = read(pid_pipe[0], result, sizeof result)) == -1 && errno == EINTR) {
      }
      if (n != static_cast<ssize_t>(sizeof result)) result[0] = -1;
      int status;
      while (waitpid(intermediate, &status, 0) == -1 && errno == EINTR) {
      }
    }
    close(pid_pipe[0]);
    if (result[0] > 0) {
      reply({{"pid", result[0]}});
    } else {
      reply({{"error", std::string("fork: ") + std::strerror(result[1])}});
    }
  }
}

}  // namespace kbv::worker
