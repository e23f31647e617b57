// The parent's side of the zygote (zygote.h); the zygote's own side is zygote_main.cpp.
#include "kbv/process/zygote.h"

#include <poll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>
#include <vector>

#include <nlohmann/json.hpp>

#include "kbv/common/deadline.h"
#include "kbv/common/syscall.h"
#include "kbv/ipc/fd_passing.h"

namespace kbv::process {
namespace {

using Clock = std::chrono::steady_clock;

Clock::time_point deadline_after(std::chrono::duration<double> timeout) {
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(timeout);
}

// The zygote's next reply (one datagram, a JSON object); ZygoteFailed when it is gone, late,
// malformed or says `error`.
nlohmann::json receive_reply(int socket, Clock::time_point deadline, const std::string& what) {
  for (;;) {
    pollfd fd{socket, POLLIN, 0};
    const int ready = poll(&fd, 1, poll_timeout_ms(Clock::now(), deadline));
    if (ready == -1 && errno == EINTR) continue;
    if (ready == -1) detail::throw_syscall_error(errno, "poll(zygote socket)", __FILE__, __LINE__);
    if (ready == 0) throw ZygoteFailed("the zygote did not answer '" + what + "' in time");
    char buffer[1 << 16];  // the start's reply names the interpreter's paths
    const ssize_t n = recv(socket, buffer, sizeof buffer, 0);
    if (n == -1 && errno == EINTR) continue;
    if (n <= 0) throw ZygoteFailed("the zygote is gone (during '" + what + "')");
    nlohmann::json reply = nlohmann::json::parse(std::string(buffer, static_cast<std::size_t>(n)), nullptr, false);
    if (reply.is_discarded() || !reply.is_object()) throw ZygoteFailed("the zygote sent a malformed reply");
    if (reply.contains("error"))
      throw ZygoteFailed("the zygote could not " + what + ": " + reply["error"].get<std::string>());
    return reply;
  }
}

}  // namespace

Zygote::Starting Zygote::begin(const std::string& executable, const std::string& python,
                               const std::function<int()>& forked) {
  // Each worker's intermediate parent exits at once; the worker must come to us, not to init.
  KBV_SYSCALL(prctl(PR_SET_CHILD_SUBREAPER, 1));
  int pair[2];
  KBV_SYSCALL(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair));
  ipc::UniqueFd ours(pair[0]), theirs(pair[1]);
  const int inherited[] = {theirs.get()};
  WorkerProcess process = forked && single_threaded()
                              ? WorkerProcess::start_forked(forked, 64 * 1024, inherited)
                              : WorkerProcess::start({executable, "worker", "--role", "zygote", "--python", python}, {},
                                                     64 * 1024, inherited);
  return {std::move(process), std::move(ours)};  // theirs closes: a dead zygote reads as EOF
}

std::shared_ptr<Zygote> Zygote::ready(Starting starting, std::chrono::duration<double> timeout) {
  std::vector<std::string> python_paths;
  try {
    python_paths =
        receive_reply(starting.socket.get(), deadline_after(timeout), "start").value("python_paths", python_paths);
  } catch (const ZygoteFailed& failed) {
    starting.process.kill();
    starting.process.wait();
    throw ZygoteFailed(std::string(failed.what()) + "; its output: " + starting.process.log_tail());
  }
  return std::make_shared<Zygote>(std::move(starting.process), std::move(starting.socket), std::move(python_paths));
}

WorkerProcess Zygote::spawn(const std::string& role,
                            const std::vector<std::pair<std::string, std::string>>& environment,
                            std::chrono::duration<double> timeout, std::span<const int> inherited,
                            const nlohmann::json& sandbox) {
  WorkerProcess::ChildEnds child;
  WorkerProcess process = WorkerProcess::prepare(child);
  nlohmann::json request = {{"role", role}, {"environment", nlohmann::json::array()}, {"sandbox", sandbox}};
  for (const auto& [name, value] : environment) request["environment"].push_back({name, value});
  std::vector<int> fds = {child.command.get(), child.result.get(), child.log.get()};
  fds.insert(fds.end(), inherited.begin(), inherited.end());
  std::lock_guard lock(mutex_);
  if (broken_) throw ZygoteFailed("the zygote failed earlier: " + broken_reason_);
  try {
    try {
      ipc::send_fds(socket_.get(), request.dump(), fds);
    } catch (const std::system_error& failed) {
      throw ZygoteFailed(std::string("cannot reach the zygote: ") + failed.what());
    }
    child = {};  // the worker holds them now; ours would keep its pipes from ever reading EOF
    const nlohmann::json reply = receive_reply(socket_.get(), deadline_after(timeout), "fork a " + role + " worker");
    process.attach(reply.at("pid").get<pid_t>());
  } catch (const ZygoteFailed& failed) {
    // A late reply would be taken for the next request's: no request goes out any more.
    broken_ = true;
    broken_reason_ = failed.what();
    throw;
  }
  return process;
}

}  // namespace kbv::process
