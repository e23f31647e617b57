// The zygote's side (zygote.h): Python and torch imported once, then a fork for every worker.
#include <Python.h>

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <string>
#include <system_error>

#include <pybind11/pybind11.h>
#include <nlohmann/json.hpp>

#include "kbv/ipc/channel.h"
#include "kbv/ipc/fd_passing.h"
#include "kbv/ipc/worker_fds.h"
#include "kbv/measure/memory.h"
#include "kbv/python/harness.h"
#include "kbv/python/interpreter.h"
#include "kbv/sandbox/enter.h"
#include "kbv/sandbox/environment.h"
#include "kbv/worker/worker_main.h"

namespace kbv::worker {
namespace {

// The intermediate process's answer for a request it cannot read (in place of a worker's pid).
constexpr int kMalformed = -2;

void reply(const nlohmann::json& message) {
  const std::string text = message.dump();
  while (send(ipc::kInheritedFd, text.data(), text.size(), MSG_NOSIGNAL) == -1 && errno == EINTR) {
  }
}

// In the forked worker: wait until the intermediate parent is gone and this process is the
// parent's child, tie its life to the parent's, move the pipes onto the worker's fds, set the
// environment, enter its sandbox if it has one, serve. Never returns.
[[noreturn]] void become_worker(pid_t intermediate, int intermediate_pidfd, pid_t parent, const ipc::PassedFds& request,
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
    pollfd commands{request.fds[0].get(), POLLIN, 0};
    if (poll(&commands, 1, 0) == 1 && (commands.revents & POLLHUP)) _exit(1);
  } else {
    while (getppid() == intermediate) usleep(50);
    if (getppid() != parent) _exit(1);  // the parent died: no one would reap or kill this worker
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(1);  // it died before PDEATHSIG was armed
    setpgid(0, 0);
  }
  // Every received fd above the targets of the dup2 calls below first, so that none of them is
  // a later one's source; then /dev/null, which goes to 0 before any target it could occupy.
  int fds[3 + ipc::kMaxInheritedFds];
  const int count = static_cast<int>(request.fds.size());
  for (int i = 0; i < count; ++i) {
    if ((fds[i] = fcntl(request.fds[i].get(), F_DUPFD, ipc::kInheritedFd + ipc::kMaxInheritedFds)) == -1) _exit(127);
  }
  const int null = open("/dev/null", O_RDONLY);
  if (null == -1 || dup2(null, 0) == -1 || dup2(fds[2], 1) == -1 || dup2(fds[2], 2) == -1 ||
      dup2(fds[0], ipc::kCommandFd) == -1 || dup2(fds[1], ipc::kResultFd) == -1)
    _exit(127);
  for (int i = 3; i < count; ++i) {
    if (dup2(fds[i], ipc::kInheritedFd + i - 3) == -1) _exit(127);
  }
  // The zygote's socket (unless replaced by an inherited fd), the received fds, anything inherited.
  close_range(ipc::kInheritedFd + count - 3, ~0u, 0);
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
  // Before the interpreter copies it into os.environ: every worker forked from here, the
  // candidates' among them, inherits no variable but those they may see.
  sandbox::keep_only_candidate_environment();
  // Every fd number a forked worker's inherited fds take above the zygote's socket is held from
  // the start: a library the interpreter loads (NVML, for torch's device count) would otherwise
  // take it, and the worker's dup2 would replace that library's file under it.
  for (int fd = ipc::kInheritedFd + 1; fd < ipc::kInheritedFd + ipc::kMaxInheritedFds; ++fd) {
    const int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (null == -1 || (null != fd && (dup3(null, fd, O_CLOEXEC) == -1 || close(null) == -1))) {
      std::perror("kbv: zygote: holding the workers' fds");
      return 1;
    }
  }
  measure::install_counting_cpu_allocator();
  python::start_interpreter(python_executable);
  python::preload_for_workers();
  const pid_t parent = getppid();
  reply({{"ready", true}, {"python_paths", python::search_paths()}});
  for (;;) {
    ipc::PassedFds request;
    try {
      request = ipc::receive_fds(ipc::kInheritedFd, std::chrono::steady_clock::time_point::max());
    } catch (const std::system_error& failed) {
      std::fprintf(stderr, "kbv: zygote: %s\n", failed.what());
      return 1;
    }
    if (request.status ==
        ipc::PassedFds::Status::closed) {  // the parent closed the socket: done (no interpreter or torch teardown)
      std::fflush(nullptr);
      _exit(0);
    }
    // The request is read only in the intermediate process, and its text wiped here after the
    // fork: what one worker was sent (its build folder's key, its environment, its view) stays out
    // of this process's memory, which every later worker inherits.
    const auto forget = [&] { explicit_bzero(request.text.data(), request.text.size()); };
    if (request.fds.size() < 3 || request.fds.size() > 3 + ipc::kMaxInheritedFds) {
      forget();
      reply({{"error", "malformed request"}});
      continue;
    }
    int pid_pipe[2];
    if (pipe2(pid_pipe, O_CLOEXEC) == -1) {
      forget();
      reply({{"error", std::string("pipe: ") + std::strerror(errno)}});
      continue;
    }
    std::fflush(nullptr);
    PyOS_BeforeFork();
    const pid_t intermediate = fork();
    if (intermediate == 0) {
      // Forks the worker, names it to the zygote and exits, so the worker is re-parented to kbv.
      // A sandboxed worker is forked into new namespaces, the PID namespace's first process.
      const nlohmann::json spec = nlohmann::json::parse(request.text, nullptr, false);
      if (spec.is_discarded() || !spec.contains("role") || !spec.contains("environment") || !spec.contains("sandbox")) {
        const int result[2] = {kMalformed, 0};
        [[maybe_unused]] const ssize_t written = write(pid_pipe[1], result, sizeof result);
        _exit(0);
      }
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
    request.fds.clear();
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
    forget();
    if (result[0] > 0) {
      reply({{"pid", result[0]}});
    } else if (result[0] == kMalformed) {
      reply({{"error", "malformed request"}});
    } else {
      reply({{"error", std::string("fork: ") + std::strerror(result[1])}});
    }
  }
}

}  // namespace kbv::worker
