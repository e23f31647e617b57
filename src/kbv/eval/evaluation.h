// `kbv eval`: one (problem, candidate) pair under one protocol, end to end.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "kbv/eval/reference_side.h"
#include "kbv/eval/timing_run.h"
#include "kbv/eval/worker_client.h"
#include "kbv/protocol/protocol.h"
#include "kbv/protocol/record.h"

namespace kbv::eval {

// The evaluation could not be carried out: bad input (a broken problem file, no GPU) or a
// failure of the evaluator or the reference. Whatever the candidate does is a verdict instead.
struct EvalError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The device asked for is not there: no evaluation on it can be carried out (kbv run and kbv
// audit stop at the first one instead of failing every candidate alike).
struct NoDevice : EvalError {
  using EvalError::EvalError;
};

struct EvalRequest {
  std::string problem, candidate;
  std::string device = "cpu";
  protocol::Protocol protocol;
  double timeout_seconds = 120;           // each worker step (forward, a timing round, ...)
  double compile_timeout_seconds = 1800;  // importing the candidate (its kernels compile then)
  std::string cache_dir;                  // compiled extensions, keyed by content
  WorkerLaunch launch;
  std::function<void(std::string_view)> progress = [](std::string_view) {};
};

// One evaluation with its own reference worker (kbv eval).
protocol::Record evaluate(const EvalRequest& request);

// kbv run's evaluations in a row on one lane: each starts the next candidate's worker (forked,
// its device context made, kbv's kernels loaded: ~0.3-0.5 s on the H200) while its own untimed
// steps run, and waits for it before its candidate's timing; the next evaluation finds it ready.
// Each also leaves its own worker, asked to exit, for the next to reap before its timing: the
// teardown of its device context (~0.1 s on the H200) runs beside the next one's untimed steps.
// Across problems the same holds for the reference side: the last evaluation of a problem starts
// the next problem's (its worker loads that problem) beside its own untimed steps, and the
// side of the problem before, exiting, is reaped before the next timing.
struct WorkerRelay {
  std::unique_ptr<WorkerPort> ready;                 // this candidate's worker, started by the evaluation before
  std::optional<EvalRequest> next;                   // the next candidate on the lane, if any
  std::unique_ptr<WorkerPort> leaving;               // the previous candidate's worker, exiting
  std::optional<ReferenceConfig> next_reference;     // the next problem's side, to start; none within a problem
  std::unique_ptr<ReferenceSide> reference_ahead;    // that side, loading (ReferenceSide::Start::posted)
  std::unique_ptr<ReferenceSide> leaving_reference;  // the problem before's side, exiting
};

// One candidate against a reference side serving the same problem, device and protocol (kbv run:
// the side and its baseline outlive the candidate). Throws EvalError when the reference fails; the
// side is then unusable (a worker started for the next candidate is still in `relay`).
protocol::Record evaluate(const EvalRequest& request, ReferenceSide& reference, WorkerRelay* relay = nullptr);

// The steps of that evaluation, one method each in PROTOCOL.md's order; run() walks them, and a
// step that settles the verdict (a failed build, a stochastic reference) ends the walk. The
// candidate's own steps (screen, import, checks, timing, probe, findings) are CandidateEvaluation's
// (candidate_evaluation.h). The relay's hooks: the next workers start once nothing is left to time
// but the candidate, and the workers leaving are reaped before anything is timed.
class Evaluation {
 public:
  Evaluation(const EvalRequest& request, ReferenceSide& reference, WorkerRelay* relay);
  protocol::Record run();

 private:
  bool start_candidate();  // the relay's worker, else built (in a sandbox) and started; false: the build ended it
  void load_reference();   // the reference side's posted load, awaited
  bool reference_draws();  // false: the reference is stochastic beyond rounding (unverifiable)
  void baseline();         // once per reference side, with the candidate's worker idle
  void floor_and_trace();  // the physical floor's timed copy, the reference's ops traced
  void trace_reference();  // once per reference side, after everything its worker times
  void candidate_steps();
  void shutdown_candidate();
  void timed_output_checks();
  void verdict();

  // The relay's hooks (kbv run, kbv serve).
  void reap_previous();
  void start_next();
  void await_next();

  protocol::Record finished();

  const EvalRequest& request_;
  ReferenceSide& reference_;
  WorkerRelay* relay_;
  const std::chrono::steady_clock::time_point started_;
  protocol::Record record_;
  std::unique_ptr<WorkerPort> worker_;
  std::mt19937_64 rng_;
  std::vector<ReferenceDraw> references_;
  const ReferenceDraw* traced_ = nullptr;  // the first judged standard draw: traced, and the floor's size
  std::optional<double> copy_seconds_;
  std::int64_t output_bytes_ = 0;
  std::vector<TimedOutputSketch> sketches_;
};

}  // namespace kbv::eval
