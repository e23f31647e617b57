// A worker as the parent holds it (worker_process.h): its pipes, its log drained into a bounded
// tail, sends and receives with deadlines, kill and wait of its whole group. Starting one is
// worker_spawn.cpp's.
#include "kbv/process/worker_process.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <csignal>
#include <cstring>

#include <poll.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kbv/common/deadline.h"
#include "kbv/common/syscall.h"
#include "kbv/process/worker_pipes.h"

namespace kbv::process {

using namespace pipes;
using Clock = std::chrono::steady_clock;

std::string ExitStatus::describe() const {
  if (!signaled) return "exited with code " + std::to_string(code);
  std::string text = "killed by signal " + std::to_string(code);
  if (const char* abbrev = sigabbrev_np(code)) text += std::string(" (SIG") + abbrev + ")";
  return text;
}

WorkerProcess WorkerProcess::prepare(ChildEnds& child, std::size_t log_tail_bytes) {
  WorkerPipes pipes;
  child = {std::move(pipes.command.read), std::move(pipes.result.write), std::move(pipes.log.write)};
  WorkerProcess process(-1, ipc::Channel(pipes.result.read.release(), pipes.command.write.release()),
                        std::move(pipes.log.read), log_tail_bytes);
  process.log_drain_budget_ = 2 * static_cast<std::size_t>(pipes.log_capacity);
  return process;
}

void WorkerProcess::attach(pid_t pid) {
  if (pid_ > 0) throw std::logic_error("WorkerProcess::attach: already has a process");
  pid_ = pid;
}

WorkerProcess::WorkerProcess(pid_t pid, ipc::Channel channel, ipc::UniqueFd log, std::size_t log_tail_bytes)
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

void WorkerProcess::send(const nlohmann::json& header, std::span<const ipc::Bytes> blobs, Clock::time_point deadline) {
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
      } catch (const ipc::ChannelClosed& e) {
        drain_log();
        return {Received::Status::closed, {}, e.what()};
      } catch (const ipc::ProtocolError& e) {
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

}  // namespace kbv::process
