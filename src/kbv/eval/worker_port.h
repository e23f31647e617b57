// What an evaluation needs of a worker, whatever runs it: requests with deadlines, a command
// posted and collected later, the teardown, the log, the CPU time read from outside, the output
// region, and the ways a worker fails as typed errors. WorkerClient (worker_client.h) is the
// process; tests/eval's scripted worker stands in for it where the evaluation's steps are tested.
#pragma once

#include <chrono>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>
#include <nlohmann/json.hpp>

#include "kbv/ipc/channel.h"
#include "kbv/ipc/failure.h"
#include "kbv/ipc/tensor_codec.h"

namespace kbv::eval {

// The worker died (crash), did not answer in time (timeout), answered a command it was not sent
// (forged_reply: something else wrote its result channel) or could not enter its sandbox before any
// candidate code ran (sandbox: kbv's or the machine's failure); `description` says how.
struct WorkerLost : std::runtime_error {
  WorkerLost(std::string kind_, const std::string& description)
      : std::runtime_error(description), kind(std::move(kind_)) {}
  std::string kind;  // crash | timeout | forged_reply | sandbox
};

// The worker answered with an error of one of the kinds in ipc/failure.h.
struct WorkerFailed : std::runtime_error {
  WorkerFailed(ipc::FailureKind kind_, const std::string& message) : std::runtime_error(message), kind(kind_) {}
  ipc::FailureKind kind;
};

struct Reply {
  nlohmann::json header;
  // Every described tensor, in order: a blob's, a view into the output region, or undefined for
  // one handed over on the device (ipc/device_handoff.h), whose file is the next in `files`.
  std::vector<at::Tensor> tensors;
  std::vector<ipc::UniqueFd> files;
};

// How long a reply's large tensors, which arrive as views into the worker's output region
// (ipc/shared_region.h), stay valid.
enum class Outputs {
  owned,               // copied out of the region: valid for as long as they are held
  until_next_request,  // views, valid until the next request to the same worker (compare them at once)
};

// What a command carries beside its JSON: tensors as blobs (described in the command, in order)
// and open files (handed over on the worker's file socket; the command says how many, "files").
struct Attachments {
  std::vector<ipc::EncodedTensor> tensors{};
  std::vector<int> files{};
};

// The CPU time a worker has used, read from outside it, and where it was read: its sandbox's
// cgroup ("cgroup v1", "cgroup v2": every thread and process in it, dead ones included) or its
// process's /proc stat ("process": its threads and the children it reaped, in clock ticks).
struct CpuReading {
  double seconds = 0;
  std::string source;
};

class WorkerPort {
 public:
  virtual ~WorkerPort() = default;
  // Sends `command` and waits up to `timeout` for the reply. Throws WorkerLost (the worker is then
  // gone) or WorkerFailed.
  virtual Reply request(const nlohmann::json& command, std::chrono::duration<double> timeout,
                        Outputs outputs = Outputs::owned, const Attachments& attachments = {}) = 0;
  // Sends `command` and returns at once: the worker runs it while the caller does something else.
  // Its reply is awaited (up to `timeout` from now) by settle() or the next request(), which
  // throws what the reply or its absence would have thrown.
  virtual void post(const nlohmann::json& command, std::chrono::duration<double> timeout) = 0;
  // Waits for a posted command's reply, so that the worker is idle; a failure is kept for the
  // next request() or collect().
  virtual void settle() = 0;
  // The posted command's reply, awaited if it has not come; throws what request() would have.
  virtual Reply collect() = 0;
  // Asks the worker to exit and returns while it is torn down (on a GPU, its device context:
  // ~0.1 s on the H200); shutdown() waits for it to be gone.
  virtual void begin_shutdown() = 0;
  virtual void shutdown() = 0;
  virtual std::string log_tail() const = 0;
  // How a sandboxed worker's resources are held together: {"cgroup": "v1" | "v2"}, or
  // {"cgroup": null, "cgroup_missing": why} where only the per-process limits hold; null unsandboxed.
  virtual nlohmann::json containment() const = 0;
  // Its CPU time so far (CpuReading); none once it is gone, or where it cannot be read.
  virtual std::optional<CpuReading> cpu_time() const = 0;
  // The worker's output region's file (-1 without one): a reply's views lie there.
  virtual int region_fd() const = 0;
};

// Splits a `check` reply into its per-mode output lists; `bad` (when given) gets, per mode, why it
// returned no tensors or nothing.
std::vector<std::vector<at::Tensor>> outputs_by_mode(const Reply& reply, std::vector<std::optional<std::string>>* bad);

}  // namespace kbv::eval
