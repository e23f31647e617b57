// A worker started once, with Python and torch imported, that forks every reference and candidate
// worker afterwards: a fork costs milliseconds where a fresh process spends seconds starting the
// interpreter and importing torch. The zygote runs no problem or candidate code, and touches no
// GPU (a CUDA context does not survive fork): each forked worker starts its own.
//
// How a worker is made: the parent creates the worker's pipes (WorkerProcess::prepare) and sends
// their child ends over a socket to the zygote; the zygote forks an intermediate process that
// forks the worker and exits at once, so the worker is re-parented to this process (a child
// subreaper) and becomes its child like any started one: WorkerProcess waits, kills its group and
// reaps it as usual. Before it serves, the worker waits for that re-parenting, arms
// PR_SET_PDEATHSIG and applies its environment. A sandboxed worker's intermediate process first
// makes the new namespaces (unshare), so the worker is PID 1 of its own PID namespace; it learns
// of its re-parenting from the intermediate's pidfd, as its parent's id reads 0 there.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "kbv/process/worker_process.h"

namespace kbv::process {

// The zygote could not make a worker (it is gone, or did not answer in time); `what()` says why.
struct ZygoteFailed : std::runtime_error {
  using runtime_error::runtime_error;
};

class Zygote {
 public:
  // A zygote's process, started (begin) and not yet known to have imported torch (ready).
  struct Starting {
    WorkerProcess process;
    ipc::UniqueFd socket;
  };

  // Starts `executable worker --role zygote --python python`; with `forked` (run_zygote, which
  // kbv's core library cannot name) from a process of one thread, forks this process to run it
  // instead (WorkerProcess::start_forked: the zygote does not load kbv's libraries again). Makes
  // this process a child subreaper (PR_SET_CHILD_SUBREAPER), for good. Like WorkerProcess::start,
  // call it from a thread that outlives the zygote and its workers. The caller goes on while the
  // zygote imports torch; ready() waits for that, up to `timeout`. Throws ZygoteFailed.
  static Starting begin(const std::string& executable, const std::string& python,
                        const std::function<int()>& forked = {});
  static std::shared_ptr<Zygote> ready(Starting starting,
                                       std::chrono::duration<double> timeout = std::chrono::seconds(300));
  static std::shared_ptr<Zygote> start(const std::string& executable, const std::string& python,
                                       std::chrono::duration<double> timeout = std::chrono::seconds(300)) {
    return ready(begin(executable, python), timeout);
  }

  // A worker of `role` ("reference" or "candidate") with `environment` set over the zygote's (which
  // is this process's at start()), and `inherited` (none -1) from kInheritedFd on, as
  // WorkerProcess::start gives them. With a `sandbox` (sandbox::to_json of a spec; null for none)
  // the worker is made in new namespaces, PID 1 of its own PID namespace, and enters that sandbox
  // before it serves. Thread-safe: one spawn at a time. Throws ZygoteFailed.
  WorkerProcess spawn(const std::string& role, const std::vector<std::pair<std::string, std::string>>& environment,
                      std::chrono::duration<double> timeout = std::chrono::seconds(60),
                      std::span<const int> inherited = {}, const nlohmann::json& sandbox = nullptr);

  // Where its interpreter, and so every worker forked from it, finds its standard library and
  // packages (python::search_paths()).
  const std::vector<std::string>& python_paths() const { return python_paths_; }

  Zygote(WorkerProcess process, ipc::UniqueFd socket, std::vector<std::string> python_paths)
      : process_(std::move(process)), socket_(std::move(socket)), python_paths_(std::move(python_paths)) {}

 private:
  std::mutex mutex_;
  bool broken_ = false;  // a request failed: the socket's replies can no longer be matched
  std::string broken_reason_;
  WorkerProcess process_;
  ipc::UniqueFd
      socket_;  // SOCK_SEQPACKET: one request (JSON, the worker's pipes and inherited fds), one reply (JSON) each
  std::vector<std::string> python_paths_;
};

}  // namespace kbv::process
