// The reference side of one problem under one protocol on one device: a reference worker that
// loads the problem once and then serves every candidate evaluated against it. Each candidate
// gets its own input draws (its own secret seeds); under fixed seeds (kernelbench) every candidate
// gets the same draws, and the reference computes them once. The baseline is timed, measured
// and traced once, when the first candidate needs it, so a run times a problem's baseline once, not
// once per candidate. Any failure here is the evaluator's or the problem's (EvalError), never a
// candidate's.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "kbv/eval/correctness.h"
#include "kbv/eval/timing_run.h"
#include "kbv/eval/worker_client.h"
#include "kbv/protocol/protocol.h"
#include "kbv/protocol/record.h"

namespace kbv::eval {

struct ReferenceConfig {
  std::string problem;  // absolute path
  std::string device = "cpu";
  protocol::Protocol protocol;
  double timeout_seconds = 120;
  double load_timeout_seconds = 1800;
  WorkerLaunch launch;
  std::function<void(std::string_view)> progress = [](std::string_view) {};
};

class ReferenceSide {
 public:
  // now: starts the reference worker and loads the problem, throwing EvalError. posted: starts the
  // worker and returns while it loads the problem (kbv run, beside the evaluation before); ready()
  // waits for it, before any other call.
  enum class Start { now, posted };
  explicit ReferenceSide(ReferenceConfig config, Start start = Start::now);
  // The same over a worker already made (tests/eval: a scripted one).
  ReferenceSide(ReferenceConfig config, std::unique_ptr<WorkerPort> worker, Start start);
  ReferenceSide(const ReferenceSide&) = delete;
  ReferenceSide& operator=(const ReferenceSide&) = delete;
  ~ReferenceSide();

  // Waits for a posted start's load, so that the worker is idle (nothing of it runs beside a timed
  // call); throws nothing: ready() does.
  void settle() { worker_->settle(); }
  // The posted start's load, awaited. Throws EvalError where it failed; at once when loaded.
  void ready();

  // What the reference's outputs are for every planned draw and, under the scaled comparison, the
  // TF32 baseline's error against them; `repeat_error`: the error of a second call on the first
  // draw's inputs against the first (0: the same). The same plan again gets them again.
  std::vector<ReferenceDraw> draws(const std::vector<Draw>& plan, double& repeat_error);

  // A candidate's outputs for `draw` compared with the reference's in the reference's worker,
  // where they lie (on the device when large): `metas` as the candidate's `reply` describes them.
  // Blobs are sent on; views into the candidate's output region stay there, the region's file
  // (`region_fd`) handed to the worker; outputs handed over on the device go on as their files.
  // Only the comparison's numbers come back.
  check::OutputComparison compare(const ReferenceDraw& draw, const nlohmann::json& metas, const Reply& reply,
                                  int region_fd);

  // The first call times the baseline and measures its memory; later calls return at once.
  void measure_baseline();
  // Paired timing (Timing::paired): the baseline's side of one candidate's rounds, in this worker
  // and from its own seeds; a failure of any of its steps is the evaluator's (EvalError).
  // end_baseline_timing() after the baseline's timing, or after it failed: the baseline's memory
  // measured the first time a timing completed (`completed`), the input pool let go.
  TimedSide paired_side();
  void end_baseline_timing(bool completed);
  const protocol::TimingResult& baseline() const { return *baseline_; }
  const protocol::MemoryResult& baseline_memory() const { return baseline_memory_; }
  // The first call traces the reference's forward on `draw` (the ops it runs itself); later
  // calls return at once. After everything this worker times: the profiler's CUPTI stays attached
  // to a process once used (kineto does not tear it down), and timed calls after it pay for that.
  void trace_once(const ReferenceDraw& draw);
  bool traced() const { return !trace_.is_null(); }
  const nlohmann::json& trace() const { return trace_; }  // null when not traced
  bool baseline_measured() const { return baseline_.has_value(); }

  // Seconds to copy `bytes` on the device: the physical floor's unit (measured once per size).
  double copy_seconds(std::int64_t bytes);

  // A request any failure of which is the evaluator's (checks of timed outputs).
  Reply request(const nlohmann::json& command);

  const nlohmann::json& versions() const { return versions_; }
  const ReferenceConfig& config() const { return config_; }
  std::string log_tail() const { return worker_->log_tail(); }
  // Asks the worker to exit without waiting for it to go; shutdown() reaps it.
  void begin_shutdown() { worker_->begin_shutdown(); }
  void shutdown();

 private:
  ReferenceConfig config_;
  std::unique_ptr<WorkerPort> worker_;
  std::unique_ptr<WorkerPort> evaluators_port_;  // worker_ with every failure the evaluator's
  nlohmann::json versions_;
  std::int64_t footprint_bytes_ = 0;
  bool loading_ = false;  // a posted load whose reply is not yet read
  std::mt19937_64 rng_;   // the baseline's timing inputs
  std::optional<protocol::TimingResult> baseline_;
  protocol::MemoryResult baseline_memory_;
  bool memory_measured_ = false;
  nlohmann::json trace_;
  std::map<std::int64_t, double> copy_seconds_;
  nlohmann::json last_plan_;  // the plan of last_draws_
  std::vector<ReferenceDraw> last_draws_;
  double last_repeat_error_ = 0;
};

}  // namespace kbv::eval
