// Starting a worker (worker_process.h): its pipes and inherited fds set up, then fork (or clone into
// new namespaces) and exec, or a forked body run in place of exec. After fork in a multithreaded
// parent the child makes only async-signal-safe calls.
#include "kbv/process/worker_process.h"

#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <string_view>
#include <system_error>

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kbv/common/syscall.h"
#include "kbv/ipc/worker_fds.h"
#include "kbv/process/worker_pipes.h"

extern char** environ;

namespace kbv::process {
namespace {

using namespace pipes;

// The first fd above every fd a child's dup2 calls target (0..kInheritedFd + kMaxInheritedFds - 1).
constexpr int kFirstFreeFd = ipc::kInheritedFd + ipc::kMaxInheritedFds;

// Moves a child-side fd above the targets, so the child's dup2 calls can never overwrite the source
// of a later dup2, and never find source == target (which would keep O_CLOEXEC set).
ipc::UniqueFd above_std_fds(ipc::UniqueFd fd) {
  return ipc::UniqueFd(KBV_SYSCALL(fcntl(fd.get(), F_DUPFD_CLOEXEC, kFirstFreeFd)));
}

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
  int inherited[ipc::kMaxInheritedFds];  // -1: none
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
      dup2(plan.command_fd, ipc::kCommandFd) == -1 || dup2(plan.result_fd, ipc::kResultFd) == -1)
    child_fail(plan.error_fd, kDup2);
  for (int i = 0; i < plan.inherited_count; ++i) {
    if (plan.inherited[i] >= 0 && dup2(plan.inherited[i], ipc::kInheritedFd + i) == -1)
      child_fail(plan.error_fd, kDup2);
  }
  // Close every inherited fd above the channel, whoever opened it (libraries do not all use
  // O_CLOEXEC). Without exec (a body) they go now, the error pipe too: its EOF tells the parent the
  // child is set up. Before exec the error pipe must survive until exec, so mark rather than close.
  const int first_closed = ipc::kInheritedFd + plan.inherited_count;
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

}  // namespace

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

  ipc::UniqueFd child_stdin = above_std_fds(ipc::UniqueFd(KBV_SYSCALL(open("/dev/null", O_RDONLY | O_CLOEXEC))));
  ipc::UniqueFd child_log = above_std_fds(std::move(log.write));
  ipc::UniqueFd child_command = above_std_fds(std::move(command.read));
  ipc::UniqueFd child_result = above_std_fds(std::move(result.write));
  ipc::UniqueFd child_error = above_std_fds(std::move(error.write));
  if (inherited.size() > ipc::kMaxInheritedFds)
    throw std::invalid_argument("WorkerProcess::start: too many inherited fds");
  ipc::UniqueFd child_inherited[ipc::kMaxInheritedFds];
  static_assert(ipc::kMaxInheritedFds == 3, "the plan below names each inherited fd");
  for (std::size_t i = 0; i < inherited.size(); ++i) {
    if (inherited[i] >= 0)
      child_inherited[i] = ipc::UniqueFd(KBV_SYSCALL(fcntl(inherited[i], F_DUPFD_CLOEXEC, kFirstFreeFd)));
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
  const pid_t pid = namespaces == 0
                        ? fork()
                        : static_cast<pid_t>(syscall(SYS_clone, SIGCHLD | namespaces, nullptr, nullptr, nullptr, 0));
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

  WorkerProcess process(pid, ipc::Channel(result.read.release(), command.write.release()), std::move(log.read),
                        log_tail_bytes);
  process.log_drain_budget_ = 2 * static_cast<std::size_t>(pipes.log_capacity);
  return process;
}

}  // namespace kbv::process
