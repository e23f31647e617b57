#include "kbv/eval/evaluation.h"

#include <filesystem>

#include "kbv/eval/candidate_evaluation.h"
#include "kbv/eval/candidate_start.h"
#include "kbv/eval/correctness.h"
#include "kbv/eval/plan.h"
#include "kbv/eval/stage.h"
#include "kbv/eval/timed_output_checks.h"
#include "kbv/eval/verdict.h"
#include "kbv/hacks/judge.h"

namespace kbv::eval {
namespace {

using nlohmann::json;
using protocol::Record;
using protocol::Verdict;
using Seconds = std::chrono::duration<double>;

// The first judged draw of the problem's own inputs: the reference's trace runs on it, and its
// outputs' size sets the physical floor.
const ReferenceDraw* first_standard(const std::vector<ReferenceDraw>& references) {
  for (const ReferenceDraw& r : references) {
    if (r.draw.family == protocol::Family::standard && r.skip_reason.empty()) return &r;
  }
  return nullptr;
}

}  // namespace

Evaluation::Evaluation(const EvalRequest& request, ReferenceSide& reference, WorkerRelay* relay)
    : request_(request),
      reference_(reference),
      relay_(relay),
      started_(std::chrono::steady_clock::now()),
      rng_(make_rng(request.protocol)) {
  if (!std::filesystem::is_regular_file(request.candidate)) throw EvalError("no such file: " + request.candidate);
  if (request.problem != reference.config().problem || request.device != reference.config().device ||
      request.protocol.name != reference.config().protocol.name) {
    throw std::logic_error("evaluate: the reference side serves another problem, device or protocol");
  }
  record_.problem = request.problem;
  record_.candidate = request.candidate;
  record_.device = request.device;
  record_.protocol = protocol::to_json(request.protocol);
  record_.sandbox = request.launch.sandbox
                        ? json{{"enabled", true}, {"limits", sandbox::to_json(request.launch.limits)}}
                        : json{{"enabled", false}};
}

Record Evaluation::run() {
  if (!start_candidate()) return finished();
  load_reference();
  if (!reference_draws()) return finished();
  baseline();
  floor_and_trace();
  start_next();  // nothing timed is left before the candidate's own timing
  candidate_steps();
  shutdown_candidate();
  timed_output_checks();
  verdict();
  return finished();
}

// Unless it was started ahead, the candidate's worker makes its device context (~0.25 s on the
// H200) and loads kbv's kernels while the reference draws: neither is timed.
bool Evaluation::start_candidate() {
  if (relay_) worker_ = std::move(relay_->ready);
  if (!worker_) {
    if (!build_first(request_, record_)) return false;
    const Stage stage(record_, "candidate_start");
    worker_ = start_candidate_worker(request_, false);
  }
  if (request_.launch.sandbox) record_.sandbox.update(worker_->containment());
  return true;
}

// Started beside the evaluation before (kbv run) or by the caller: here its load is waited for.
void Evaluation::load_reference() {
  const Stage stage(record_, "reference_load");
  reference_.ready();
  record_.versions = reference_.versions();
}

bool Evaluation::reference_draws() {
  {
    const Stage stage(record_, "reference_draws");
    references_ = reference_.draws(plan_draws(request_.protocol, rng_), record_.reference_repeat_error);
    prepare(references_, request_.protocol, record_.reference_repeat_error);
  }
  traced_ = first_standard(references_);
  // The repeat is of the first draw's reference; its tolerance is the one it is weighed against.
  const std::optional<std::string> stochastic =
      stochastic_reason(record_.reference_repeat_error, references_.front().baseline_error, request_.protocol);
  if (!stochastic) return true;
  record_.verdict = Verdict::unverifiable;
  record_.verdict_reason = *stochastic;
  return false;
}

// Timed by this evaluation's side once; later ones of a kbv run reuse it. Paired timing times it
// in the candidate's rounds instead (candidate_evaluation.h).
void Evaluation::baseline() {
  if (request_.protocol.timing.paired) return;
  if (!reference_.baseline_measured()) {
    {
      const Stage stage(record_, "import");
      worker_->settle();  // nothing of the candidate's process runs while the baseline is timed
    }
    reap_previous();
    const Stage stage(record_, "baseline");
    reference_.measure_baseline();
  }
  record_.baseline = reference_.baseline();
  record_.baseline_memory = reference_.baseline_memory();
}

// The physical floor's yardstick, a timed copy: measured before the candidate (once per output size
// and problem in a run), so that nothing timed follows the candidate's own timing.
void Evaluation::floor_and_trace() {
  if (!request_.protocol.detection.enabled || !traced_) return;
  output_bytes_ = traced_->output_bytes;
  reap_previous();
  {
    const Stage stage(record_, "floor");
    worker_->settle();
    copy_seconds_ = reference_.copy_seconds(output_bytes_);
  }
  // The reference's own ops, for the probe's judgement: traced once the reference worker has timed
  // its baseline and the floor (a later output size's floor in a run follows the trace); with
  // paired timing, after the first candidate's rounds.
  if (!request_.protocol.timing.paired) trace_reference();
}

void Evaluation::trace_reference() {
  if (!request_.protocol.detection.enabled || !traced_ || reference_.traced()) return;
  const Stage stage(record_, "reference_trace");
  reference_.trace_once(*traced_);
}

void Evaluation::candidate_steps() {
  CandidateEvaluation candidate(*worker_, reference_, request_, references_, rng_, record_);
  try {
    candidate.run({[this] { await_next(); }, [this] { trace_reference(); }});
  } catch (const WorkerFailed& failed) {
    record_.verdict = verdict_of(failed.kind);
    record_.verdict_reason = failed.what();
  } catch (const WorkerLost& lost) {
    // Its sandbox failed before any of its code ran: the evaluation could not be carried out.
    if (lost.kind == "sandbox") throw EvalError(lost.what());
    record_.verdict = verdict_of_loss(lost.kind);
    record_.verdict_reason = lost.what();
    if (lost.kind == "forged_reply") {
      hacks::merge(record_.findings,
                   {{"forged_reply", "error", json::array({{{"source", "result channel"}, {"why", lost.what()}}})}});
    }
  }
  sketches_ = std::move(candidate.sketches());
}

// The process's teardown (on a GPU, its device context's) runs beside the timed outputs' checks;
// the reap waits for what is left of it.
void Evaluation::shutdown_candidate() {
  const Stage stage(record_, "shutdown");
  worker_->begin_shutdown();
}

void Evaluation::timed_output_checks() {
  if (record_.verdict != Verdict::pass) return;
  const Stage stage(record_, "timed_output_checks");
  check_timed_outputs(reference_, request_, references_, sketches_, record_);
}

void Evaluation::verdict() {
  if (relay_) {
    // Reaped by the next evaluation before its timing, or by the relay's holder (the group's end in
    // kbv run, evaluate(request)); the log holds all the worker printed before its exit's reply.
    record_.candidate_log = worker_->log_tail();
    relay_->leaving = std::move(worker_);
  } else {
    const Stage stage(record_, "shutdown");
    worker_->shutdown();
    record_.candidate_log = worker_->log_tail();
  }
  judge_measured(record_, request_.protocol, copy_seconds_, output_bytes_);
  record_.reference_log = reference_.log_tail();
}

// The previous candidate's worker (kbv run), asked to exit, tears down while this evaluation's
// untimed steps run; it is reaped before anything here is timed, in a stage of its own (outside the
// others, so that no second counts twice).
void Evaluation::reap_previous() {
  if (!relay_ || (!relay_->leaving && !relay_->leaving_reference)) return;
  const Stage stage(record_, "previous_worker");
  if (relay_->leaving) relay_->leaving->shutdown();
  relay_->leaving.reset();
  if (relay_->leaving_reference) relay_->leaving_reference->shutdown();
  relay_->leaving_reference.reset();
}

// The next candidate's worker, and the next problem's reference side, started beside this
// evaluation's untimed steps and waited for before its timing (kbv run).
void Evaluation::start_next() {
  if (!relay_) return;
  if (relay_->next) {
    try {
      relay_->ready = start_candidate_worker(*relay_->next, /*only_if_built=*/true);
    } catch (const std::exception&) {
      // Its own evaluation starts it again, and files what fails then.
    }
  }
  if (relay_->next_reference && !relay_->reference_ahead) {
    try {
      relay_->reference_ahead = std::make_unique<ReferenceSide>(*relay_->next_reference, ReferenceSide::Start::posted);
    } catch (const std::exception&) {
      // The next problem's evaluations start it again, and file what fails then.
    }
  }
}

// Just before the candidate's timing: the workers leaving reaped, the next ones idle.
void Evaluation::await_next() {
  reap_previous();
  if (!relay_ || (!relay_->ready && !relay_->reference_ahead)) return;
  const Stage stage(record_, "next_worker");
  if (relay_->ready) relay_->ready->settle();
  if (relay_->reference_ahead) relay_->reference_ahead->settle();
}

Record Evaluation::finished() {
  record_.wall_seconds = Seconds(std::chrono::steady_clock::now() - started_).count();
  return std::move(record_);
}

Record evaluate(const EvalRequest& request, ReferenceSide& reference, WorkerRelay* relay) {
  return Evaluation(request, reference, relay).run();
}

Record evaluate(const EvalRequest& request) {
  if (!std::filesystem::is_regular_file(request.problem)) throw EvalError("no such file: " + request.problem);
  if (!std::filesystem::is_regular_file(request.candidate)) throw EvalError("no such file: " + request.candidate);
  const auto started = std::chrono::steady_clock::now();
  // The candidate's worker first: its device context (~0.25 s on the H200) and kbv's kernels load
  // while the reference worker starts and loads the problem. It is waited for before anything is
  // timed, as in kbv run.
  WorkerRelay relay;
  relay.ready = start_candidate_worker(request, /*only_if_built=*/true);  // else built first, then started
  const auto reference_begun = std::chrono::steady_clock::now();
  const double candidate_start = Seconds(reference_begun - started).count();
  ReferenceSide reference({request.problem, request.device, request.protocol, request.timeout_seconds,
                           request.compile_timeout_seconds, request.launch, request.progress});
  const double reference_start = Seconds(std::chrono::steady_clock::now() - reference_begun).count();
  Record record = evaluate(request, reference, &relay);
  record.stage_seconds["candidate_start"] += candidate_start;  // its sandbox planned, its process forked
  record.stage_seconds["reference_start"] = reference_start;
  {
    // Both processes tear down their device contexts at once (~0.1 s each on the H200).
    const Stage stage(record, "shutdown");
    reference.begin_shutdown();
    if (relay.leaving) relay.leaving->shutdown();
    reference.shutdown();
  }
  record.reference_log = reference.log_tail();
  record.wall_seconds = Seconds(std::chrono::steady_clock::now() - started).count();  // the reference's start too
  return record;
}

}  // namespace kbv::eval
