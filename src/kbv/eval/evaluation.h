// `kbv eval`: one (problem, candidate) pair under one protocol, end to end.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "kbv/eval/reference_side.h"
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
  double timeout_seconds = 120;          // each worker step (forward, a timing round, ...)
  double compile_timeout_seconds = 1800; // importing the candidate (its kernels compile then)
  std::string cache_dir;                 // compiled extensions, keyed by content
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
  std::unique_ptr<WorkerClient> ready;    // this candidate's worker, started by the evaluation before
  std::optional<EvalRequest> next;        // the next candidate on the lane, if any
  std::unique_ptr<WorkerClient> leaving;  // the previous candidate's worker, exiting
  std::optional<ReferenceConfig> next_reference;   // the next problem's side, to start; none within a problem
  std::unique_ptr<ReferenceSide> reference_ahead;  // that side, loading (ReferenceSide::Start::posted)
  std::unique_ptr<ReferenceSide> leaving_reference;  // the problem before's side, exiting
};

// One candidate against a reference side serving the same problem, device and protocol (kbv run:
// the side and its baseline outlive the candidate). Throws EvalError when the reference fails; the
// side is then unusable (a worker started for the next candidate is still in `relay`).
protocol::Record evaluate(const EvalRequest& request, ReferenceSide& reference, WorkerRelay* relay = nullptr);

}  // namespace kbv::eval
