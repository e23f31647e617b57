// The parent's view of one worker process (WorkerPort): requests with deadlines over its channel,
// replies with their tensors decoded, and the ways the process can fail turned into typed errors.
#pragma once

#include <chrono>
#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>
#include <nlohmann/json.hpp>

#include "kbv/eval/worker_port.h"
#include "kbv/ipc/failure.h"
#include "kbv/ipc/shared_region.h"
#include "kbv/ipc/tensor_codec.h"
#include "kbv/process/worker_process.h"
#include "kbv/process/zygote.h"
#include "kbv/sandbox/cgroup.h"
#include "kbv/sandbox/spec.h"

namespace kbv::eval {

struct WorkerLaunch {
  std::string executable{};  // the kbv binary itself
  std::string python{};      // interpreter to embed
  std::vector<std::pair<std::string, std::string>> environment{};
  // When set, workers are forked from it instead of started afresh (process/zygote.h).
  std::shared_ptr<process::Zygote> zygote{};
  // Candidate workers run in a sandbox (sandbox/, eval/sandbox_plan.h) under these limits, with
  // `hidden` out of their sight beside what the plan hides (kbv run's store). Off only to debug.
  bool sandbox = true;
  sandbox::Limits limits = sandbox::default_limits();
  std::vector<std::string> hidden{};
};

class WorkerClient : public WorkerPort {
 public:
  // With a `sandbox` the worker is made in new namespaces and enters it before it serves; with a
  // `build_folder` (sandbox/build_folder.h, its mount's descriptor) too, it attaches that folder at
  // the spec's build_folder path, else it has none.
  WorkerClient(const std::string& role, const WorkerLaunch& launch, const sandbox::Spec* sandbox = nullptr,
               int build_folder = -1);
  // WorkerPort's, over the process: a worker lost is killed and reaped before WorkerLost is thrown.
  Reply request(const nlohmann::json& command, std::chrono::duration<double> timeout, Outputs outputs = Outputs::owned,
                const Attachments& attachments = {}) override;
  void post(const nlohmann::json& command, std::chrono::duration<double> timeout) override;
  void settle() override;
  Reply collect() override;
  void begin_shutdown() override;
  // begin_shutdown(), then reaps the process (killing it if it does not go within a few seconds).
  void shutdown() override;
  std::string log_tail() const override { return process_.log_tail(); }
  nlohmann::json containment() const override;
  std::optional<CpuReading> cpu_time() const override;
  int region_fd() const override { return region_ ? region_->fd() : -1; }

 private:
  using Deadline = std::chrono::steady_clock::time_point;
  struct Posted {
    std::string what;
    Deadline deadline;
    std::chrono::duration<double> timeout;
    std::uint64_t nonce;
  };
  Posted send(const nlohmann::json& command, std::chrono::duration<double> timeout,
              const Attachments& attachments = {});
  Reply await(const Posted& posted, Outputs outputs);
  // The worker's next message, or why none came by `deadline`. Where the sandbox's cgroup counts CPU
  // time and a CPU limit is set, it is read every kCpuLimitTick meanwhile: RLIMIT_CPU stops each
  // process at the limit alone, so the sandbox's processes past it together end the wait here
  // (as a closed channel, cpu_limit_reached_ set; the caller kills the worker).
  process::Received receive(Deadline deadline);
  static constexpr std::chrono::seconds kCpuLimitTick{1};

  std::shared_ptr<const ipc::SharedRegion> region_;  // null when none could be made: blobs only
  ipc::UniqueFd file_socket_;                        // the worker's kFileSocketFd is the other end (made with process_)
  std::optional<sandbox::Limits> sandbox_limits_;    // set when the worker is sandboxed
  std::string cgroup_missing_;                       // why a sandboxed worker has no cgroup
  std::unique_ptr<sandbox::Cgroup> cgroup_;          // its sandbox's, removed after process_ is reaped
  process::WorkerProcess process_;
  bool answered_ = false;  // a reply came: from then on anything that ends it is the worker's own doing
  bool cpu_limit_reached_ = false;
  bool running_ = true;
  std::optional<Posted> posted_;
  std::optional<Reply> posted_reply_;  // the posted command's, once settled, for collect()
  std::exception_ptr posted_failure_;  // what the posted command's reply threw, for the next request
};

}  // namespace kbv::eval
