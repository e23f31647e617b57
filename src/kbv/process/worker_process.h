// The parent's handle on one worker child process: start it, talk to it over a Channel, bound every
// wait by a deadline, collect what it printed, kill it and everything it spawned, reap it.
// The child may be the untrusted candidate worker, so nothing here relies on its cooperation:
// whatever it does (crash, hang, flood its log, scribble on its result fd, fork helpers) comes back
// as a value (Received, ExitStatus) or is cut off by a deadline.
#pragma once

#include "kbv/ipc/channel.h"

#include <chrono>
#include <cstddef>
#include <functional>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <sys/types.h>

namespace kbv::process {

// Whether this process has one thread (WorkerProcess::start_forked's condition).
bool single_threaded();

// WorkerProcess::send did not get the whole frame into the pipe before its deadline: the child is
// not reading its commands (hung). The frame is abandoned; the worker should be killed.
class ChannelTimeout : public std::runtime_error {
  using runtime_error::runtime_error;
};

struct ExitStatus {
  bool signaled = false;
  int code = 0;            // exit code, or signal number when signaled
  double cpu_seconds = 0;  // the process's own user and system time (its rusage), not its children's
  // "exited with code 3", "killed by signal 11 (SIGSEGV)"
  std::string describe() const;
};

struct Received {
  // malformed: the child wrote bytes that are not a frame (error says how); the result stream is
  // unusable afterwards. An untrusted worker can do that on purpose, so it is a value, not a throw.
  enum class Status { message, timeout, closed, malformed } status;
  ipc::Message message;  // set when status == message
  std::string error;     // set when status == closed (which EOF) or malformed
};

class WorkerProcess {
 public:
  // fork+exec `argv` (argv[0] an absolute path; no PATH search). The environment is this process's
  // plus `env_overrides` (an override replaces a variable of the same name). In the child:
  //  - a new process group (setpgid(0,0)) so kill() reaches the whole tree, a compiler it spawns too;
  //  - fd 3 = command pipe (read end), fd 4 = result pipe (write end), stdout and stderr both on one
  //    log pipe the parent drains (prints can never corrupt the result channel), stdin = /dev/null,
  //    every other fd closed;
  //  - default signal dispositions and an empty signal mask;
  //  - PR_SET_PDEATHSIG = SIGKILL, so workers die with kbv. Linux sends it when the *thread* that
  //    called start() exits: call start() from a thread that outlives the worker (the main thread
  //    or a long-lived pool thread);
  //  - RLIMIT_CORE = 0: a crashing worker with gigabytes mapped must not spend minutes dumping core.
  // Throws std::system_error if a pipe or fork fails or the child cannot exec (errno from execve).
  // `inherited` (at most kMaxInheritedFds; -1 for none) are also given to the child, from fd
  // kInheritedFd on.
  // `namespaces` (clone flags, sandbox::namespace_flags()) makes the child in new namespaces, PID 1
  // of its own PID namespace: killing it kills everything it started. It then gets a session of
  // its own (setsid) instead of a process group, and its sandbox is entered after exec.
  static WorkerProcess start(const std::vector<std::string>& argv,
                             const std::vector<std::pair<std::string, std::string>>& env_overrides,
                             std::size_t log_tail_bytes = 64 * 1024, std::span<const int> inherited = {},
                             int namespaces = 0);

  // fork without exec: the child, set up as start() sets up its own (process group, pipes, fds,
  // signals, PDEATHSIG, no core; its environment this process's), runs `body` and exits with its
  // result. It spares the child loading this program's libraries again (for kbv, libtorch's start:
  // ~0.35 s on the CPU machine). Only from a process of one thread (the child has only the
  // caller's: a lock another thread held would never be released), and the child starts with a
  // copy of this process's memory: call it before this process holds anything the child must not
  // see. Throws std::logic_error from a process of several threads, else as start() does.
  static WorkerProcess start_forked(const std::function<int()>& body, std::size_t log_tail_bytes = 64 * 1024,
                                    std::span<const int> inherited = {});
  // For a worker that another process forks (process/zygote.h): the pipes, with the parent's ends in
  // the returned handle and the child's ends (command read, result write, log write) in `child`.
  // attach() then names the child, which must be a child of this process (a subreaper) by then.
  struct ChildEnds {
    ipc::UniqueFd command, result, log;
  };
  static WorkerProcess prepare(ChildEnds& child, std::size_t log_tail_bytes = 64 * 1024);
  void attach(pid_t pid);

  // Writes one frame, draining the log pipe meanwhile (a child blocked on a full log pipe would
  // otherwise never read its command). Throws ChannelClosed if the child is gone, ChannelTimeout if
  // `deadline` passes first. Pass a deadline for any untrusted child: one that stops reading would
  // otherwise block this call for ever.
  void send(const nlohmann::json& header, std::span<const ipc::Bytes> blobs = {},
            std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max());

  // Waits for the next message until `deadline`, draining the log pipe meanwhile. timeout: the
  // child is left running and a partly received frame is kept for the next call; closed: EOF on
  // the result pipe; malformed: see Received. Everything the child printed before writing the
  // message is in log_tail() when this returns.
  Received receive(std::chrono::steady_clock::time_point deadline);

  void kill();  // SIGKILL to the process and its process group; idempotent, a no-op once reaped

  // Waits for the child to exit (call it after closed or kill()), then SIGKILLs whatever is left in
  // its process group (descendants it left running) and reaps it, and those of them that were
  // reparented to this process (a subreaper) and have died; drains the log that is already there.
  // Idempotent. Descendants that left the group (setsid) are out of reach: sandboxing the
  // candidate worker (PID namespace) is a separate layer.
  ExitStatus wait();

  const std::string& log_tail() const { return log_tail_; }  // last log_tail_bytes of stdout+stderr, raw bytes
  pid_t pid() const { return pid_; }

  ~WorkerProcess();  // kills and reaps if still running; never throws
  WorkerProcess(WorkerProcess&& other) noexcept;
  WorkerProcess& operator=(WorkerProcess&& other) noexcept;
  WorkerProcess(const WorkerProcess&) = delete;
  WorkerProcess& operator=(const WorkerProcess&) = delete;

 private:
  WorkerProcess(pid_t pid, ipc::Channel channel, ipc::UniqueFd log, std::size_t log_tail_bytes);
  // start() and start_forked(): exec `argv`, or run `body` when it is given.
  static WorkerProcess spawn(const std::vector<std::string>& argv,
                             const std::vector<std::pair<std::string, std::string>>& env_overrides,
                             const std::function<int()>* body, std::size_t log_tail_bytes,
                             std::span<const int> inherited, int namespaces);
  void drain_log();
  void release() noexcept;  // kill + reap, for the destructor and move assignment

  pid_t pid_ = -1;
  bool reaped_ = false;
  ExitStatus exit_status_;
  ipc::Channel channel_{-1, -1};
  ipc::UniqueFd log_;
  std::string log_tail_;
  std::size_t log_tail_bytes_ = 0;
  std::size_t log_drain_budget_ = 2u << 20;  // bytes one drain_log() call may read
};

}  // namespace kbv::process
