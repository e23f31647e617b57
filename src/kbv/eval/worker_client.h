// The parent's view of one worker: requests with deadlines, replies with their tensors decoded,
// and the ways a worker can fail turned into typed errors.
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

#include "kbv/sandbox/cgroup.h"
#include "kbv/sandbox/spec.h"
#include "kbv/worker/failure.h"
#include "kbv/worker/shared_region.h"
#include "kbv/worker/tensor_codec.h"
#include "kbv/worker/worker_process.h"
#include "kbv/worker/zygote.h"

namespace kbv::eval {

// The worker died (crash), did not answer in time (timeout), answered a command it was not sent
// (forged_reply: something else wrote its result channel) or could not enter its sandbox before any
// candidate code ran (sandbox: kbv's or the machine's failure); `description` says how.
struct WorkerLost : std::runtime_error {
  WorkerLost(std::string kind_, const std::string& description) : std::runtime_error(description), kind(std::move(kind_)) {}
  std::string kind;  // crash | timeout | forged_reply | sandbox
};

// The worker answered with an error of one of the kinds in worker/failure.h.
struct WorkerFailed : std::runtime_error {
  WorkerFailed(worker::FailureKind kind_, const std::string& message) : std::runtime_error(message), kind(kind_) {}
  worker::FailureKind kind;
};

struct Reply {
  nlohmann::json header;
  // Every described tensor, in order: a blob's, a view into the output region, or undefined for
  // one handed over on the device (worker/device_handoff.h), whose file is the next in `files`.
  std::vector<at::Tensor> tensors;
  std::vector<worker::UniqueFd> files;
};

struct WorkerLaunch {
  std::string executable{};  // the kbv binary itself
  std::string python{};      // interpreter to embed
  std::vector<std::pair<std::string, std::string>> environment{};
  // When set, workers are forked from it instead of started afresh (worker/zygote.h).
  std::shared_ptr<worker::Zygote> zygote{};
  // Candidate workers run in a sandbox (sandbox/, eval/sandbox_plan.h) under these limits, with
  // `hidden` out of their sight beside what the plan hides (kbv run's store). Off only to debug.
  bool sandbox = true;
  sandbox::Limits limits = sandbox::default_limits();
  std::vector<std::string> hidden{};
};

// How long a reply's large tensors, which arrive as views into the worker's output region
// (worker/shared_region.h), stay valid.
enum class Outputs {
  owned,               // copied out of the region: valid for as long as they are held
  until_next_request,  // views, valid until the next request to the same worker (compare them at once)
};

// What a command carries beside its JSON: tensors as blobs (described in the command, in order)
// and open files (handed over on the worker's file socket; the command says how many, "files").
struct Attachments {
  std::vector<worker::EncodedTensor> tensors{};
  std::vector<int> files{};
};

// The CPU time a worker has used, read from outside it, and where it was read: its sandbox's
// cgroup ("cgroup v1", "cgroup v2": every thread and process in it, dead ones included) or its
// process's /proc stat ("process": its threads and the children it reaped, in clock ticks).
struct CpuReading {
  double seconds = 0;
  std::string source;
};

class WorkerClient {
 public:
  // With a `sandbox` the worker is made in new namespaces and enters it before it serves; with a
  // `build_folder` (sandbox/build_folder.h, its mount's descriptor) too, it attaches that folder at
  // the spec's build_folder path, else it has none.
  WorkerClient(const std::string& role, const WorkerLaunch& launch, const sandbox::Spec* sandbox = nullptr,
               int build_folder = -1);
  // Sends `command` and waits up to `timeout` for the reply. Throws WorkerLost (the process is
  // then killed and reaped) or WorkerFailed.
  Reply request(const nlohmann::json& command, std::chrono::duration<double> timeout, Outputs outputs = Outputs::owned,
                const Attachments& attachments = {});
  // Sends `command` and returns at once: the worker runs it while the caller does something else.
  // Its reply is awaited (up to `timeout` from now) by settle() or the next request(), which
  // throws what the reply or its absence would have thrown.
  void post(const nlohmann::json& command, std::chrono::duration<double> timeout);
  // Waits for a posted command's reply, so that the worker is idle; a failure is kept for the
  // next request() or collect().
  void settle();
  // The posted command's reply, awaited if it has not come; throws what request() would have.
  Reply collect();
  // Asks the worker to exit and returns while its process is torn down (on a GPU, its device
  // context: ~0.1 s on the H200); shutdown() reaps it.
  void begin_shutdown();
  // begin_shutdown(), then reaps the process (killing it if it does not go within a few seconds).
  void shutdown();
  std::string log_tail() const { return process_.log_tail(); }
  // How a sandboxed worker's resources are held together: {"cgroup": "v1" | "v2"}, or
  // {"cgroup": null, "cgroup_missing": why} where only the per-process limits hold; null unsandboxed.
  nlohmann::json containment() const;
  // Its CPU time so far (CpuReading); none once it is gone.
  std::optional<CpuReading> cpu_time() const;
  // The worker's output region's file (-1 without one): a reply's views lie there.
  int region_fd() const { return region_ ? region_->fd() : -1; }

 private:
  using Deadline = std::chrono::steady_clock::time_point;
  struct Posted {
    std::string what;
    Deadline deadline;
    std::chrono::duration<double> timeout;
    std::uint64_t nonce;
  };
  Posted send(const nlohmann::json& command, std::chrono::duration<double> timeout, const Attachments& attachments = {});
  Reply await(const Posted& posted, Outputs outputs);
  // The worker's next message, or why none came by `deadline`. Where the sandbox's cgroup counts CPU
  // time and a CPU limit is set, it is read every kCpuLimitTick meanwhile: RLIMIT_CPU stops each
  // process at the limit alone, so the sandbox's processes past it together end the wait here
  // (as a closed channel, cpu_limit_reached_ set; the caller kills the worker).
  worker::Received receive(Deadline deadline);
  static constexpr std::chrono::seconds kCpuLimitTick{1};

  std::shared_ptr<const worker::SharedRegion> region_;  // null when none could be made: blobs only
  worker::UniqueFd file_socket_;                         // the worker's kFileSocketFd is the other end (made with process_)
  std::optional<sandbox::Limits> sandbox_limits_;        // set when the worker is sandboxed
  std::string cgroup_missing_;                           // why a sandboxed worker has no cgroup
  std::unique_ptr<sandbox::Cgroup> cgroup_;              // its sandbox's, removed after process_ is reaped
  worker::WorkerProcess process_;
  bool answered_ = false;  // a reply came: from then on anything that ends it is the worker's own doing
  bool cpu_limit_reached_ = false;
  bool running_ = true;
  std::optional<Posted> posted_;
  std::optional<Reply> posted_reply_;  // the posted command's, once settled, for collect()
  std::exception_ptr posted_failure_;  // what the posted command's reply threw, for the next request
};

// Splits a `check` reply into its per-mode output lists; `bad` (when given) gets, per mode, why it
// returned no tensors or nothing.
std::vector<std::vector<at::Tensor>> outputs_by_mode(const Reply& reply, std::vector<std::optional<std::string>>* bad);

}  // namespace kbv::eval
