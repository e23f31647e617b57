#include "kbv/worker/worker_process.h"

#include "kbv/common/syscall.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string_view>
#include <system_error>

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace kbv::worker {
namespace {

using Clock = std::chrono::steady_clock;

struct Pipe {
  UniqueFd read, write;
};

Pipe make_pipe() {
  int fds[2];
  KBV_SYSCALL(pipe2(fds, O_CLOEXEC));  // close-on-exec: no other child we start inherits these
  return {UniqueFd(fds[0]), UniqueFd(fds[1])};
}

// The first fd above every fd a child's dup2 calls target (0..kInheritedFd + kMaxInheritedFds - 1).
constexpr int kFirstFreeFd = kInheritedFd + kMaxInheritedFds;

// Moves a child-side fd above the targets, so the child's dup2 calls can never overwrite the source
// of a later dup2, and never find source == target (which would keep O_CLOEXEC set).
UniqueFd above_std_fds(UniqueFd fd) { return UniqueFd(KBV_SYSCALL(fcntl(fd.get(), F_DUPFD_CLOEXEC, kFirstFreeFd))); }

void set_nonblocking(int fd) {
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


std::vector<std::string> merged_environment(const std::vector<std::pair<std::string, std::string>>& overrides) {
  std::vector<std::string> env;
  for (char** entry = environ; *entry != nullptr; ++entry) env.emplace_back(*entry);
  for (const auto& [name, value] : overrides) {
    if (name.empty() || name.find('=') != std::string::npos)
      throw std::invalid_argument("WorkerProcess::start: bad environment variable name '" + name + "'");
    std::erase_if(env, [&](const std::string& e) { return std::string_view(e).substr(0, e.find('=')) == name; });
    env.push_back(name + "=" + value);
  }
  return env;
}

std::vector<char*> c_strings(std::vector<std::string>& strings) {
  std::vector<char*> pointers;
  for (auto& s : strings) pointers.push_back(s.data());
  pointers.push_back(nullptr);
  return pointers;
}

// What the child needs, prepared before fork: after fork in a multithreaded parent the child may
// only make async-signal-safe calls (no allocation, no locks). With a `body` (start_forked, from a
// process of one thread) the child runs it instead of exec.
struct ChildPlan {
  const char* path;
  char* const* argv;
  char* const* envp;
  const std::function<int()>* body;
  int stdin_fd, log_fd, command_fd, result_fd, error_fd;
  int inherited[kMaxInheritedFds];  // -1: none
  int inherited_count;
  pid_t parent;
  int max_fd;
  bool sandboxed;  // PID 1 of new namespaces: its parent reads as 0 there
};

enum ChildStep : int { kSetpgid, kDup2, kExec };
constexpr const char* kChildStepNames[] = {"setpgid or setsid", "dup2", "exec"};

// Sent over the close-on-exec error pipe: EOF there means exec succeeded.
struct ChildFailure {
  int step;
  int error;
};

[[noreturn]] void child_fail(int error_fd, int step) {
  const ChildFailure failure{step, errno};
  // If even this write fails there is nothing more to do: the parent sees exec "succeed" and then
  // the child exit with 127.
  [[maybe_unused]] const ssize_t written = write(error_fd, &failure, sizeof failure);
  _exit(127);
}

[[noreturn]] void run_child(const ChildPlan& plan) {
  // The parent's handlers point into its own code; ignored signals (SIGPIPE) would survive exec.
  struct sigaction default_action {};
  default_action.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) sigaction(sig, &default_action, nullptr);  // fails harmlessly for KILL/STOP

  // A sandboxed worker leaves the parent's session too: no controlling terminal to reach.
  if ((plan.sandboxed ? setsid() : setpgid(0, 0)) == -1) child_fail(plan.error_fd, kSetpgid);
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  // The parent died before PDEATHSIG was armed. (In a PID namespace of its own the parent cannot be
  // named; such a worker finds its command pipe closed at its first read instead.)
  if (!plan.sandboxed && getppid() != plan.parent) _exit(127);
  const rlimit no_core{0, 0};
  setrlimit(RLIMIT_CORE, &no_core);

  if (dup2(plan.stdin_fd, 0) == -1 || dup2(plan.log_fd, 1) == -1 || dup2(plan.log_fd, 2) == -1 ||
      dup2(plan.command_fd, kCommandFd) == -1 || dup2(plan.result_fd, kResultFd) == -1)
    child_fail(plan.error_fd, kDup2);
  for (int i = 0; i < plan.inherited_count; ++i) {
    if (plan.inherited[i] >= 0 && dup2(plan.inherited[i], kInheritedFd + i) == -1) child_fail(plan.error_fd, kDup2);
  }
  // Close every inherited fd above the channel, whoever opened it (libraries do not all use
  // O_CLOEXEC). Without exec (a body) they go now, the error pipe too: its EOF tells the parent the
  // child is set up. Before exec the error pipe must survive until exec, so mark rather than close.
  const int first_closed = kInheritedFd + plan.inherited_count;
  if (plan.body) {
    if (close_range(first_closed, ~0u, 0) == -1) {
      for (int fd = first_closed; fd < plan.max_fd; ++fd) close(fd);
    }
  } else if (close_range(first_closed, ~0u, CLOSE_RANGE_CLOEXEC) == -1) {
    for (int fd = first_closed; fd < plan.max_fd; ++fd)
      if (fd != plan.error_fd) close(fd);
  }
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  if (plan.body) {
    int code = 1;
    try {
      code = (*plan.body)();
    } catch (const std::exception& failed) {
      std::fprintf(stderr, "kbv: %s\n", failed.what());
    }
    std::fflush(nullptr);
    _exit(code);
  }
  execve(plan.path, plan.argv, plan.envp);
  child_fail(plan.error_fd, kExec);
}

template <class F>
auto retry_eintr(F call) {
  decltype(call()) result;
  while ((result = call()) == -1 && errno == EINTR) {
  }
  return result;
}

}  // namespace

int poll_timeout_ms(Clock::time_point now, Clock::time_point deadline) {
  if (deadline == Clock::time_point::max()) return -1;
  if (now >= deadline) return 0;
  const auto ms = std::chrono::ceil<std::chrono::milliseconds>(deadline - now).count();
  return static_cast<int>(std::min<decltype(ms)>(ms, INT_MAX));
}

std::string ExitStatus::describe() const {
  if (!signaled) return "exited with code " + std::to_string(code);
  std::string text = "killed by signal " + std::to_string(code);
  if (const char* abbrev = sigabbrev_np(code)) text += std::string(" (SIG") + abbrev + ")";
  return text;
}

bool single_threaded() {
  std::error_code error;
  auto tasks = std::filesystem::directory_iterator("/proc/self/task", error);
  return !error && std::distance(begin(tasks), end(tasks)) == 1;
}

WorkerProcess WorkerProcess::start(const std::vector<std::string>& argv,
                                   const std::vector<std::pair<std::string, std::string>>& env_overrides,
                                   std::size_t log_tail_bytes, std::span<const int> inherited, int namespaces) {
  if (argv.empty() || argv[0].empty() || argv[0][0] != '/')
    throw std::invalid_argument("WorkerProcess::start: argv[0] must be an absolute path");
  return spawn(argv, env_overrides, nullptr, log_tail_bytes, inherited, namespaces);
}

WorkerProcess WorkerProcess::start_forked(const std::function<int()>& body, std::size_t log_tail_bytes,
                                          std::span<const int> inherited) {
  if (!single_threaded()) throw std::logic_error("WorkerProcess::start_forked: this process has more than one thread");
  std::fflush(nullptr);  // else the child's exit would write this process's buffered output again
  return spawn({}, {}, &body, log_tail_bytes, inherited, 0);
}

WorkerProcess WorkerProcess::spawn(const std::vector<std::string>& argv,
                                   const std::vector<std::pair<std::string, std::string>>& env_overrides,
                                   const std::function<int()>* body, std::size_t log_tail_bytes,
                                   std::span<const int> inherited, int namespaces) {
  std::vector<std::string> arg_strings = argv;
  std::vector<std::string> env_strings = merged_environment(env_overrides);
  const std::vector<char*> args = c_strings(arg_strings);
  const std::vector<char*> env = c_strings(env_strings);

  WorkerPipes pipes;
  Pipe &command = pipes.command, &result = pipes.result, &log = pipes.log, error = make_pipe();

  UniqueFd child_stdin = above_std_fds(UniqueFd(KBV_SYSCALL(open("/dev/null", O_RDONLY | O_CLOEXEC))));
  UniqueFd child_log = above_std_fds(std::move(log.write));
  UniqueFd child_command = above_std_fds(std::move(command.read));
  UniqueFd child_result = above_std_fds(std::move(result.write));
  UniqueFd child_error = above_std_fds(std::move(error.write));
  if (inherited.size() > kMaxInheritedFds) throw std::invalid_argument("WorkerProcess::start: too many inherited fds");
  UniqueFd child_inherited[kMaxInheritedFds];
  static_assert(kMaxInheritedFds == 3, "the plan below names each inherited fd");
  for (std::size_t i = 0; i < inherited.size(); ++i) {
    if (inherited[i] >= 0) child_inherited[i] = UniqueFd(KBV_SYSCALL(fcntl(inherited[i], F_DUPFD_CLOEXEC, kFirstFreeFd)));
  }
  rlimit files{};
  KBV_SYSCALL(getrlimit(RLIMIT_NOFILE, &files));
  // Everything that can fail is done by now: after fork the child must end up owned by a WorkerProcess.
  const ChildPlan plan{args[0],
                       args.data(),
                       env.data(),
                       body,
                       child_stdin.get(),
                       child_log.get(),
                       child_command.get(),
                       child_result.get(),
                       child_error.get(),
                       {child_inherited[0].get(), child_inherited[1].get(), child_inherited[2].get()},
                       static_cast<int>(inherited.size()),
                       getpid(),
                       static_cast<int>(std::min<rlim_t>(files.rlim_cur, 1 << 20)),
                       namespaces != 0};

  // Signals stay blocked across fork until the child has reset its dispositions: a handler of the
  // parent's must never run in the child.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old);
  // clone with namespace flags is fork's equivalent (no new stack: the child returns here too).
  const pid_t pid = namespaces == 0 ? fork() : static_cast<pid_t>(syscall(SYS_clone, SIGCHLD | namespaces, nullptr, nullptr, nullptr, 0));
  if (pid == 0) run_child(plan);
  const int fork_error = errno;
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (pid == -1) detail::throw_syscall_error(fork_error, "fork()", __FILE__, __LINE__);

  child_error.reset();  // else the read below would never see EOF
  ChildFailure failure{};
  const ssize_t n = retry_eintr([&] { return read(error.read.get(), &failure, sizeof failure); });
  if (n == static_cast<ssize_t>(sizeof failure)) {
    int status;
    retry_eintr([&] { return waitpid(pid, &status, 0); });
    throw std::system_error(failure.error, std::generic_category(),
                            std::string("WorkerProcess::start: ") + kChildStepNames[failure.step] +
                                " in the child for " + (body ? "a forked body" : argv[0]));
  }

  WorkerProcess process(pid, Channel(result.read.release(), command.write.release()), std::move(log.read),
                        log_tail_bytes);
  process.log_drain_budget_ = 2 * static_cast<std::size_t>(pipes.log_capacity);
  return process;
}

WorkerProcess WorkerProcess::prepare(ChildEnds& child, std::size_t log_tail_bytes) {
  WorkerPipes pipes;
  child = {std::move(pipes.command.read), std::move(pipes.result.write), std::move(pipes.log.write)};
  WorkerProcess process(-1, Channel(pipes.result.read.release(), pipes.command.write.release()),
                        std::move(pipes.log.read), log_tail_bytes);
  process.log_drain_budget_ = 2 * static_cast<std::size_t>(pipes.log_capacity);
  return process;
}

void WorkerProcess::attach(pid_t pid) {
  if (pid_ > 0) throw std::logic_error("WorkerProcess::attach: already has a process");
  pid_ = pid;
}

WorkerProcess::WorkerProcess(pid_t pid, Channel channel, UniqueFd log, std::size_t log_tail_bytes)
    : pid_(pid), channel_(std::move(channel)), log_(std::move(log)), log_tail_bytes_(log_tail_bytes) {}

WorkerProcess::WorkerProcess(WorkerProcess&& other) noexcept { *this = std::move(other); }

WorkerProcess& WorkerProcess::operator=(WorkerProcess&& other) noexcept {
  if (this != &other) {
    release();  // the child this handle owned, if any
    pid_ = std::exchange(other.pid_, -1);
    reaped_ = other.reaped_;
    exit_status_ = other.exit_status_;
    channel_ = std::move(other.channel_);
    log_ = std::move(other.log_);
    log_tail_ = std::move(other.log_tail_);
    log_tail_bytes_ = other.log_tail_bytes_;
    log_drain_budget_ = other.log_drain_budget_;
  }
  return *this;
}

WorkerProcess::~WorkerProcess() { release(); }

void WorkerProcess::release() noexcept {
  if (pid_ <= 0 || reaped_) return;
  kill();
  try {
    wait();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kbv: reaping worker %d failed: %s\n", static_cast<int>(pid_), e.what());
  }
}

void WorkerProcess::drain_log() {
  // Bounded per call so a child that prints without pause cannot hold us past a deadline; the
  // budget exceeds the pipe's capacity, so one call takes everything written before it began.
  char buffer[64 * 1024];
  std::size_t budget = log_drain_budget_;
  while (log_ && budget > 0) {
    const ssize_t n = read(log_.get(), buffer, std::min(sizeof buffer, budget));
    if (n == -1 && errno == EINTR) continue;
    if (n == -1 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    if (n <= 0) {  // EOF: every holder of the write end (the child and its descendants) closed it
      if (n == -1) detail::log_syscall_error(errno, "read(log, ...)", __FILE__, __LINE__);
      log_.reset();
      return;
    }
    log_tail_.append(buffer, static_cast<std::size_t>(n));
    if (log_tail_.size() > log_tail_bytes_) log_tail_.erase(0, log_tail_.size() - log_tail_bytes_);
    budget -= static_cast<std::size_t>(n);
  }
}

void WorkerProcess::send(const nlohmann::json& header, std::span<const Bytes> blobs, Clock::time_point deadline) {
  channel_.begin_send(header, blobs);
  while (!channel_.send_some()) {  // throws ChannelClosed on EPIPE
    const auto now = Clock::now();
    if (now >= deadline) {
      channel_.abandon_send();
      throw ChannelTimeout("worker " + std::to_string(pid_) + " did not read its command before the deadline");
    }
    pollfd fds[2] = {{channel_.write_fd(), POLLOUT, 0}, {log_.get(), POLLIN, 0}};  // fd -1: skipped
    if (poll(fds, 2, poll_timeout_ms(now, deadline)) == -1 && errno != EINTR)
      detail::throw_syscall_error(errno, "poll(fds, 2, timeout)", __FILE__, __LINE__);
    if (fds[1].revents != 0) drain_log();
  }
}

Received WorkerProcess::receive(Clock::time_point deadline) {
  for (;;) {
    const auto now = Clock::now();
    pollfd fds[2] = {{channel_.read_fd(), POLLIN, 0}, {log_.get(), POLLIN, 0}};
    if (poll(fds, 2, poll_timeout_ms(now, deadline)) == -1) {
      if (errno == EINTR) continue;
      detail::throw_syscall_error(errno, "poll(fds, 2, timeout)", __FILE__, __LINE__);
    }
    if (fds[1].revents != 0) drain_log();
    if (fds[0].revents != 0) {
      // Draining the log once more before returning puts everything printed before the result
      // (already in the log pipe by then) into log_tail().
      try {
        if (auto message = channel_.receive_some()) {
          drain_log();
          return {Received::Status::message, std::move(*message), {}};
        }
      } catch (const ChannelClosed& e) {
        drain_log();
        return {Received::Status::closed, {}, e.what()};
      } catch (const ProtocolError& e) {
        drain_log();
        return {Received::Status::malformed, {}, e.what()};
      }
    }
    // `now` predates the poll: past the deadline we still took one last non-blocking look.
    if (now >= deadline) return {Received::Status::timeout, {}, {}};
  }
}

void WorkerProcess::kill() {
  if (pid_ <= 0 || reaped_) return;  // once reaped the group id may belong to someone else
  // The process itself first: one forked by the zygote may not lead its group yet.
  if (::kill(pid_, SIGKILL) == -1 && errno != ESRCH)
    detail::log_syscall_error(errno, "kill(pid_, SIGKILL)", __FILE__, __LINE__);
  if (::killpg(pid_, SIGKILL) == -1 && errno != ESRCH)
    detail::log_syscall_error(errno, "killpg(pid_, SIGKILL)", __FILE__, __LINE__);
}

ExitStatus WorkerProcess::wait() {
  if (pid_ <= 0) throw std::logic_error("WorkerProcess::wait: no process (moved from)");
  if (reaped_) return exit_status_;
  // Wait for the exit without reaping: the zombie keeps its pid, so its process-group id cannot be
  // handed to an unrelated process while we kill the descendants it left behind.
  siginfo_t info{};
  if (retry_eintr([&] { return waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOWAIT); }) == -1)
    detail::throw_syscall_error(errno, "waitid(P_PID, pid_, &info, WEXITED | WNOWAIT)", __FILE__, __LINE__);
  if (::killpg(pid_, SIGKILL) == -1 && errno != ESRCH)
    detail::log_syscall_error(errno, "killpg(pid_, SIGKILL)", __FILE__, __LINE__);
  int status = 0;
  rusage usage{};
  if (retry_eintr([&] { return wait4(pid_, &status, 0, &usage); }) == -1)
    detail::throw_syscall_error(errno, "wait4(pid_, &status, 0, &usage)", __FILE__, __LINE__);
  reaped_ = true;
  exit_status_ = WIFSIGNALED(status) ? ExitStatus{true, WTERMSIG(status)} : ExitStatus{false, WEXITSTATUS(status)};
  exit_status_.cpu_seconds = static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
                             static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) * 1e-6;
  // Descendants in its group that this process adopted (as a subreaper) and that are dead by now:
  // reaped, not left as zombies for the rest of a long run.
  while (waitpid(-pid_, &status, WNOHANG) > 0) {
  }
  drain_log();
  return exit_status_;
}

}  // namespace kbv::worker
