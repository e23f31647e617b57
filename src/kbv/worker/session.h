// A worker's state between commands: the loaded problem (and candidate), the module under
// evaluation, the device, and the timing pool. Each method is one step of PROTOCOL.md run in
// this process; the parent decides the order and judges the results. Loading, draws and calls
// are in session.cpp, the timing's steps in session_timing.cpp, the watch's in session_probe.cpp.
#pragma once

#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>
#include <pybind11/pybind11.h>
#include <nlohmann/json.hpp>

#include "kbv/ipc/commands.h"
#include "kbv/ipc/failure.h"
#include "kbv/measure/memory.h"
#include "kbv/measure/timer.h"
#include "kbv/protocol/protocol.h"
#include "kbv/worker/call_inputs.h"
#include "kbv/worker/candidate_watch.h"
#include "kbv/worker/cpu_ledger.h"
#include "kbv/worker/gpu_ledger.h"
#include "kbv/worker/op_recorder.h"
#include "kbv/worker/role.h"

namespace kbv::worker {

struct Forward {
  std::vector<at::Tensor> outputs;
  std::optional<std::string> bad_output;  // the result was not tensors
};

class Session {
 public:
  explicit Session(Role role) : role_(role) {}

  // Imports the problem (and, for the candidate role, the candidate: its kernels compile now),
  // constructs the module, moves it to the device. Returns facts for the record.
  nlohmann::json load(const ipc::commands::Load& command);
  // Imports the candidate (building its kernels into the extension cache), then builds the
  // extensions it would build later (harness.build_ahead): `kbv compile`. Returns what
  // build_ahead built, failed and missed.
  nlohmann::json compile(const ipc::commands::Compile& command);
  // Selects the device and creates its context (CUDA's, ~0.25 s on the H200), so that the parent
  // can have it done while it waits on something else; `load` then finds it ready. With a
  // protocol (protocol::to_json's form), also runs once the kernels its steps will use
  // (worker/kernel_warmup.h).
  void start_device(const std::string& name, const nlohmann::json& protocol);

  // The inputs of one draw: {"family", "params", "seed"}; returns the Python argument list.
  pybind11::list draw(const nlohmann::json& spec);
  // The problem's own inputs under `seed` (the `standard` family's draw).
  pybind11::list draw_standard(std::uint64_t seed);
  // One forward under `mode`'s TF32 flags (reference, baseline or candidate). A watched
  // candidate's call is checked (inputs unchanged, outputs not aliasing them, flags kept); `when`
  // names the call in that evidence.
  Forward forward(const std::string& mode, const pybind11::list& inputs, const std::string& when);
  // Sets the mode's TF32 flags and returns them as read back from torch.
  nlohmann::json apply_flags(const std::string& mode);

  // Timing pool: one input set per seed, each refilled in place (same buffers, new values) later.
  void fill_pool(const std::vector<std::uint64_t>& seeds);
  void fill_set(size_t set, std::uint64_t seed);
  // The timing starts: the CPU ledger counts from now (worker/cpu_ledger.h), and on a GPU under a
  // protocol that looks for hacks, the GPU ledger (worker/gpu_ledger.h).
  void begin_timing();
  // The timing is over: the GPU ledger stops before anything else uses CUPTI (the probe's trace).
  void end_timing() { gpu_ledger_.close(); }
  // The CPU ledger's totals since begin_timing() (null before), and, for a watched candidate, the
  // native threads started since its import that are alive now (their names).
  nlohmann::json cpu_totals();
  // The GPU ledger's totals since begin_timing() (null where it was not opened).
  nlohmann::json gpu_totals() { return gpu_ledger_.totals(); }
  // Lets the pool's inputs and its calls' last outputs go: the reference's worker, its baseline
  // measured, would hold them beside every later candidate's evaluation (24 GiB for a 6 GiB
  // problem under verified, enough to leave an 80 GB card short).
  void drop_pool();
  measure::TimedCall timed_call(size_t set, const std::string& mode);
  // `calls` plain calls, then timed calls (their samples dropped) for at least `seconds` and
  // until their times settle, at most until `max_seconds`: the GPU's clocks settle under the
  // pattern the samples will see. `max_seconds` 0: the plain calls only.
  void warm_up(int calls, double seconds, double max_seconds, const std::string& mode);
  // What times the calls (measure::Timer::describe).
  nlohmann::json clock() const;
  const std::vector<at::Tensor>& last_outputs(size_t set) const;
  const c10::Device& device() const { return device_; }

  // Peak allocator bytes above the pre-call level for one call on pool set 0 (transient), the
  // bytes of its outputs held from before the call (a buffer the module keeps), their sum (the
  // peak compared), and the driver's used-memory growth over it (GPU).
  nlohmann::json measure_memory(const std::string& mode);
  // Where memory ran out, who held it: the device's use by every process and this process's
  // allocated bytes, in words ("" before a device is started or where they cannot be read).
  // torch's own report of it asks NVML, which the sandbox and some containers do not reach.
  std::string memory_in_words();

  // Median time of a plain device copy of `bytes` bytes under the timing protocol's timer: the
  // yardstick of the physical floor (timing_anomaly).
  double copy_seconds(std::int64_t bytes);

  // One forward of `mode` under torch's profiler on the draw's inputs: monitor.trace_call's facts.
  nlohmann::json trace(const nlohmann::json& spec, const std::string& mode);
  // The candidate's probe on one draw's inputs (PROTOCOL.md, "Findings"): a plain call, a repeat
  // (exceptions and problem code watched), a call on poisoned memory, a traced call, and (when
  // `refresh` names a draw) a call on the same buffers refilled with that draw's content, whose
  // outputs go to `refreshed_outputs`. Returns the measurements the parent judges.
  nlohmann::json probe(const nlohmann::json& spec, const nlohmann::json& refresh,
                       std::vector<at::Tensor>* refreshed_outputs);
  // Everything the watch found, after a last look at the global state, threads and torch's op
  // recording.
  nlohmann::json findings();
  // The aten ops the timed calls and the probe's traced call ran ({"timed", "traced"}: names), for
  // the parent to compare (hacks::judge_observed_ops); empty when not recorded.
  nlohmann::json observed_ops() const;

  // `kbv audit` (reference role): the reference's outputs on the draw `spec` measured against its
  // inputs, a repeat, the baseline, another draw `other` of the same family (whole and one input
  // at a time) and a relative nudge of its inputs (worker/problem_audit.cpp).
  nlohmann::json audit(const nlohmann::json& spec, const nlohmann::json& other);

 private:
  // Selects the device named by the command (checking it exists); returns facts for the record.
  nlohmann::json select_device(const std::string& name);
  pybind11::object import_candidate(const std::string& path);
  // forward(*inputs) under torch.no_grad(), the GPU ledger's span of the call; a Python exception
  // becomes a Failure.
  pybind11::object call_forward(const pybind11::list& inputs);
  // The candidate's traced call (probe step 4): the facts, with the call's outputs checked.
  nlohmann::json traced_forward(const pybind11::list& inputs, const std::string& mode);
  // The result as tensors, or why it is not.
  static Forward collect(const pybind11::object& result);

  Role role_;
  c10::Device device_{c10::kCPU};
  nlohmann::json protocol_;
  pybind11::object problem_, candidate_, model_;
  std::unique_ptr<measure::Timer> timer_;
  std::unique_ptr<measure::MemoryMeter> memory_;
  std::vector<pybind11::list> pool_;
  std::vector<Forward> last_;
  CpuLedger ledger_;
  GpuLedger gpu_ledger_;
  std::optional<CandidateWatch> watch_;  // the candidate role under the verified protocol
  // The candidate under the verified protocol: the aten ops of every timed call, and of the
  // probe's traced call.
  std::optional<OpRecorder> ops_;
  std::set<std::string> timed_ops_;
  std::optional<std::set<std::string>> traced_ops_;  // once the traced call completed
};

// Where a failure inside candidate code should be filed: a CUDA fault kills the context, which
// is a crash; anything else the candidate raised is a runtime error.
ipc::FailureKind classify_candidate_error(const std::string& message);

}  // namespace kbv::worker
