// The candidate's side of one evaluation, in PROTOCOL.md's order, each step in its worker: the
// static screen (its text only), the import, the checks against the reference's draws, the timing
// and its memory, the probe, the watch's findings. Each step writes into the evaluation's record;
// one that settles the verdict (a failed check, an unverifiable problem) ends the walk. What the
// worker answers with a failure, or how it was lost (WorkerFailed, WorkerLost), reaches the caller,
// which files it as the candidate's verdict.
#pragma once

#include <functional>
#include <random>
#include <vector>

#include <nlohmann/json.hpp>

#include "kbv/eval/evaluation.h"
#include "kbv/eval/reference_side.h"
#include "kbv/eval/timing_run.h"
#include "kbv/eval/worker_port.h"
#include "kbv/protocol/record.h"

namespace kbv::eval {

class CandidateEvaluation {
 public:
  CandidateEvaluation(WorkerPort& worker, ReferenceSide& reference, const EvalRequest& request,
                      const std::vector<ReferenceDraw>& references, std::mt19937_64& rng, protocol::Record& record);

  // The evaluation's hooks: `before_timing` runs just before the candidate's timing (kbv run's
  // relay: the previous workers reaped, the next ones waited for), `before_probe` before the probe,
  // whether or not the timing ran (the reference's trace, where paired timing puts it after the
  // rounds).
  struct Hooks {
    std::function<void()> before_timing = [] {};
    std::function<void()> before_probe = [] {};
  };
  // Every step.
  void run(const Hooks& hooks);
  // The timed outputs' samples, for the reference's side of their checks.
  std::vector<TimedOutputSketch>& sketches() { return sketches_; }

 private:
  void screen();
  void import();
  // False where a check settled the verdict: the candidate changed how the inputs are drawn.
  bool checks();
  void timing(const std::function<void()>& before_timing);
  // Timing::paired: the baseline's rounds beside the candidate's, in the reference's worker.
  void paired_timing();
  void probe();
  void gather_watched();

  WorkerPort& worker_;
  ReferenceSide& reference_;
  const EvalRequest& request_;
  const std::vector<ReferenceDraw>& references_;
  std::mt19937_64& rng_;
  protocol::Record& record_;
  bool detect_;
  const ReferenceDraw*
      first_checked_;      // drawn before the import too: a draw differing after it is the candidate's doing
  nlohmann::json loaded_;  // the import's reply
  std::vector<TimedOutputSketch> sketches_;
};

}  // namespace kbv::eval
