#include "kbv/eval/evaluation.h"

#include <chrono>
#include <filesystem>
#include <optional>

#include "kbv/eval/candidate_evaluation.h"
#include "kbv/eval/compile.h"
#include "kbv/eval/correctness.h"
#include "kbv/eval/extension_cache.h"
#include "kbv/eval/plan.h"
#include "kbv/eval/published_build.h"
#include "kbv/eval/reference_side.h"
#include "kbv/eval/sandbox_plan.h"
#include "kbv/eval/stage.h"
#include "kbv/eval/timed_output_checks.h"
#include "kbv/eval/timing_run.h"
#include "kbv/hacks/judge.h"
#include "kbv/measure/stability.h"
#include "kbv/measure/statistics.h"
#include "kbv/worker/commands.h"

namespace kbv::eval {
namespace {

using nlohmann::json;
using protocol::Record;
using protocol::Verdict;
using Seconds = std::chrono::duration<double>;

constexpr int kBootstrapResamples = 2000;

// A failure the candidate's worker answered with. Its process runs the candidate's code, so what
// fails there in kbv's own steps or the problem's code (internal, problem_error, no_device) may be
// the candidate's doing: it is not told apart from the candidate's own raise.
Verdict verdict_of(worker::FailureKind kind) {
  switch (kind) {
    case worker::FailureKind::compile_error: return Verdict::compile_error;
    case worker::FailureKind::crash: return Verdict::crash;
    case worker::FailureKind::incorrect: return Verdict::incorrect;
    case worker::FailureKind::runtime_error:
    case worker::FailureKind::problem_error:
    case worker::FailureKind::reference_error:
    case worker::FailureKind::no_device:
    case worker::FailureKind::internal: return Verdict::runtime_error;
  }
  return Verdict::runtime_error;
}

// A candidate's worker lost (WorkerLost::kind; `sandbox` is kbv's failure, not a verdict).
Verdict verdict_of_loss(const std::string& kind) {
  if (kind == "timeout") return Verdict::timeout;
  if (kind == "forged_reply") return Verdict::hack;
  return Verdict::crash;
}

// The first judged draw of the problem's own inputs: the reference's trace runs on it, and its
// outputs' size sets the physical floor.
const ReferenceDraw* first_standard(const std::vector<ReferenceDraw>& references) {
  for (const ReferenceDraw& r : references) {
    if (r.draw.family == protocol::Family::standard && r.skip_reason.empty()) return &r;
  }
  return nullptr;
}

// The parent's judgements once both sides are measured: the physical floor, work outside the
// timed calls (CPU and device), the findings settled into the verdict, the speedup with its
// interval (taken over rounds where the calls were uneven and that is lower) and whether it can be
// trusted as a figure of the kernels (measure/stability.h).
void judge_measured(Record& record, const protocol::Protocol& protocol, std::optional<double> copy_seconds,
                    std::int64_t output_bytes) {
  if (copy_seconds && record.candidate_timing) {
    if (auto anomaly = hacks::judge_floor(record.candidate_timing->seconds, *copy_seconds, output_bytes, protocol.detection)) {
      hacks::merge(record.findings, {*anomaly});
    }
  }
  if (protocol.detection.enabled && record.candidate_timing) {
    if (auto untimed = hacks::judge_untimed_work(record.candidate_timing->cpu, record.baseline ? record.baseline->cpu : json(),
                                                 protocol.detection)) {
      hacks::merge(record.findings, {std::move(*untimed)});
    }
    if (auto untimed = hacks::judge_untimed_device_work(record.candidate_timing->gpu,
                                                        record.baseline ? record.baseline->gpu : json(), protocol.detection)) {
      hacks::merge(record.findings, {std::move(*untimed)});
    }
  }
  if (protocol.detection.enabled) hacks::settle(record);

  if (record.baseline && record.candidate_timing && record.candidate_timing->seconds > 0) {
    record.speedup = record.baseline->seconds / record.candidate_timing->seconds;
    if (protocol.timing.use_median) {
      const auto ci = measure::bootstrap_ratio_of_medians(record.baseline->samples, record.candidate_timing->samples,
                                                          kBootstrapResamples, /*seed=*/0);
      record.speedup_ci_low = ci.low;
      record.speedup_ci_high = ci.high;
    }
    if (protocol.detection.enabled) {
      if (auto uneven = hacks::judge_uneven_calls(record.baseline->samples, record.candidate_timing->samples,
                                                  protocol.timing.pool_sets)) {
        const double over_rounds = uneven->evidence[0].at("speedup_over_rounds");
        if (over_rounds < *record.speedup) {  // the median's interval no longer describes it
          record.speedup = over_rounds;
          record.speedup_ci_low.reset();
          record.speedup_ci_high.reset();
        }
        hacks::merge(record.findings, {std::move(*uneven)});
      }
    }
    const protocol::Timing& t = protocol.timing;
    const measure::SideTiming baseline{record.baseline->samples, record.baseline->launch_samples, record.baseline->host};
    const measure::SideTiming candidate{record.candidate_timing->samples, record.candidate_timing->launch_samples,
                                        record.candidate_timing->host};
    // On the CPU there is no launch to cover: a call's host path is the call.
    const double cover = record.device == "cuda" ? t.launch_cover_seconds : 0.0;
    record.stability = measure::judge_stability(
        baseline, candidate, {t.unreliable_other_cores, t.unreliable_steal_share, t.unreliable_scatter_share, cover});
  }
}

// The candidate's worker, started: forked, then (posted, not awaited) its device context made and
// the kernels of kbv's own steps loaded (worker/kernel_warmup.h). In a sandbox it gets a private
// build folder with a checked copy of its content's published build (published_build.h); with
// `only_if_built`, none is started (nullptr) where nothing is published yet.
std::unique_ptr<WorkerClient> start_candidate_worker(const EvalRequest& request, bool only_if_built) {
  WorkerLaunch launch = request.launch;
  add_build_environment(launch, request.cache_dir, request.candidate, request.device);
  std::optional<sandbox::Spec> sandbox;
  std::optional<sandbox::BuildFolder> folder;
  if (launch.sandbox) {
    const std::string published = published_dir(request.cache_dir, request.candidate, request.device, launch.python);
    const std::optional<PublishedBuild> build = find_published(published);
    if (!build && only_if_built) return nullptr;
    folder.emplace(private_copy(published, build, launch.limits.build_bytes));
    sandbox = plan_sandbox(launch, request.cache_dir, {request.problem, request.candidate});
  }
  // The worker holds the folder's mount from here on; this descriptor closes on return.
  auto worker = std::make_unique<WorkerClient>("candidate", launch, sandbox ? &*sandbox : nullptr, folder ? folder->fd() : -1);
  worker->post(worker::commands::message(worker::commands::Device{request.device, protocol::to_json(request.protocol)}),
               Seconds(request.timeout_seconds));
  return worker;
}

// The next candidate's worker, and the next problem's reference side, started beside this
// evaluation's untimed steps and waited for before its timing (kbv run).
void start_next(WorkerRelay& relay) {
  if (relay.next) {
    try {
      relay.ready = start_candidate_worker(*relay.next, /*only_if_built=*/true);
    } catch (const std::exception&) {
      // Its own evaluation starts it again, and files what fails then.
    }
  }
  if (relay.next_reference && !relay.reference_ahead) {
    try {
      relay.reference_ahead = std::make_unique<ReferenceSide>(*relay.next_reference, ReferenceSide::Start::posted);
    } catch (const std::exception&) {
      // The next problem's evaluations start it again, and file what fails then.
    }
  }
}

// In a sandbox, the candidate content's build, published before its evaluation's worker starts:
// found, or made now by a build worker of its own (compile.h), so that nothing the evaluation does
// reaches the cache. Returns false, with the record's verdict set, where the build ends the
// evaluation: it took longer than --compile-timeout, or filled its build folder.
bool build_first(const EvalRequest& request, Record& record) {
  if (!request.launch.sandbox) return true;
  const Stage stage(record, "build");
  CompileRequest compile;
  compile.device = request.device;
  compile.timeout_seconds = request.compile_timeout_seconds;
  compile.cache_dir = request.cache_dir;
  compile.launch = request.launch;
  compile.building = [&](const std::string&) { request.progress("candidate: building its kernels"); };
  const CompileResult built = compile_candidate(compile, request.candidate);
  if (built.outcome == "timeout") {
    record.verdict = Verdict::timeout;
    record.verdict_reason = "its build took longer than --compile-timeout: " + built.message;
  } else if (built.over_limit) {
    record.verdict = Verdict::compile_error;
    record.verdict_reason = built.message;
  } else {
    return true;
  }
  if (built.containment.is_object()) record.sandbox.update(built.containment);
  return false;
}

}  // namespace

Record evaluate(const EvalRequest& request, ReferenceSide& reference, WorkerRelay* relay) {
  const auto started = std::chrono::steady_clock::now();
  if (!std::filesystem::is_regular_file(request.candidate)) throw EvalError("no such file: " + request.candidate);
  if (request.problem != reference.config().problem || request.device != reference.config().device ||
      request.protocol.name != reference.config().protocol.name) {
    throw std::logic_error("evaluate: the reference side serves another problem, device or protocol");
  }
  const protocol::Protocol& protocol = request.protocol;
  Record record;
  record.problem = request.problem;
  record.candidate = request.candidate;
  record.device = request.device;
  record.protocol = protocol::to_json(protocol);
  record.sandbox = request.launch.sandbox ? json{{"enabled", true}, {"limits", sandbox::to_json(request.launch.limits)}}
                                          : json{{"enabled", false}};

  // Candidate side, in a fresh process whose extension builds are keyed by content. Unless it was
  // started ahead, it makes its device context (~0.25 s on the H200) and loads kbv's kernels while
  // the reference draws: neither is timed.
  std::unique_ptr<WorkerClient> worker = relay ? std::move(relay->ready) : nullptr;
  if (!worker) {
    if (!build_first(request, record)) {
      record.wall_seconds = Seconds(std::chrono::steady_clock::now() - started).count();
      return record;
    }
    const Stage stage(record, "candidate_start");
    worker = start_candidate_worker(request, false);
  }
  WorkerClient& candidate = *worker;
  if (request.launch.sandbox) record.sandbox.update(candidate.containment());
  // The previous candidate's worker (kbv run), asked to exit, tears down while this evaluation's
  // untimed steps run; it is reaped before anything here is timed, in a stage of its own (outside
  // the others, so that no second counts twice).
  const auto reap_previous = [&] {
    if (!relay || (!relay->leaving && !relay->leaving_reference)) return;
    const Stage stage(record, "previous_worker");
    if (relay->leaving) relay->leaving->shutdown();
    relay->leaving.reset();
    if (relay->leaving_reference) relay->leaving_reference->shutdown();
    relay->leaving_reference.reset();
  };

  {
    // Started beside the evaluation before (kbv run) or by the caller: here its load is waited for.
    const Stage stage(record, "reference_load");
    reference.ready();
  }
  record.versions = reference.versions();
  std::mt19937_64 rng = make_rng(protocol);
  std::vector<ReferenceDraw> references;
  {
    const Stage stage(record, "reference_draws");
    references = reference.draws(plan_draws(protocol, rng), record.reference_repeat_error);
    prepare(references, protocol, record.reference_repeat_error);
  }
  // The repeat is of the first draw's reference; its tolerance is the one it is weighed against.
  if (std::optional<std::string> stochastic =
          stochastic_reason(record.reference_repeat_error, references.front().baseline_error, protocol)) {
    record.verdict = Verdict::unverifiable;
    record.verdict_reason = *stochastic;
    record.wall_seconds = Seconds(std::chrono::steady_clock::now() - started).count();
    return record;
  }
  const ReferenceDraw* traced = first_standard(references);
  if (!reference.baseline_measured()) {  // by this evaluation; later ones of a kbv run reuse it
    {
      const Stage stage(record, "import");
      candidate.settle();  // nothing of the candidate's process runs while the baseline is timed
    }
    reap_previous();
    const Stage stage(record, "baseline");
    reference.measure_baseline();
  }
  record.baseline = reference.baseline();
  record.baseline_memory = reference.baseline_memory();
  // The physical floor's yardstick, a timed copy: measured before the candidate (once per output
  // size and problem in a run), so that nothing timed follows the candidate's own timing.
  std::optional<double> copy_seconds;
  std::int64_t output_bytes = 0;
  if (protocol.detection.enabled && traced) {
    output_bytes = traced->output_bytes;
    reap_previous();
    {
      const Stage stage(record, "floor");
      candidate.settle();
      copy_seconds = reference.copy_seconds(output_bytes);
    }
    // The reference's own ops, for the probe's judgement: traced once the reference worker has
    // timed its baseline and the floor (a later output size's floor in a run follows the trace).
    if (!reference.traced()) {
      const Stage stage(record, "reference_trace");
      reference.trace_once(*traced);
    }
  }

  // Nothing timed is left before the candidate's own timing: the next workers start now.
  if (relay) start_next(*relay);
  const auto before_timing = [&] {
    reap_previous();
    if (!relay || (!relay->ready && !relay->reference_ahead)) return;
    const Stage stage(record, "next_worker");
    if (relay->ready) relay->ready->settle();
    if (relay->reference_ahead) relay->reference_ahead->settle();
  };

  CandidateEvaluation candidate_side(candidate, reference, request, references, rng, record);
  try {
    candidate_side.run(before_timing);
  } catch (const WorkerFailed& failed) {
    record.verdict = verdict_of(failed.kind);
    record.verdict_reason = failed.what();
  } catch (const WorkerLost& lost) {
    // Its sandbox failed before any of its code ran: the evaluation could not be carried out.
    if (lost.kind == "sandbox") throw EvalError(lost.what());
    record.verdict = verdict_of_loss(lost.kind);
    record.verdict_reason = lost.what();
    if (lost.kind == "forged_reply") {
      hacks::merge(record.findings, {{"forged_reply", "error", json::array({{{"source", "result channel"}, {"why", lost.what()}}})}});
    }
  }
  {
    // The process's teardown (on a GPU, its device context's) runs beside the timed outputs'
    // checks; the reap waits for what is left of it.
    const Stage stage(record, "shutdown");
    candidate.begin_shutdown();
  }
  if (record.verdict == Verdict::pass) {
    const Stage stage(record, "timed_output_checks");
    check_timed_outputs(reference, request, references, candidate_side.sketches(), record);
  }
  if (relay) {
    // Reaped by the next evaluation before its timing, or by the relay's holder (the group's end in
    // kbv run, evaluate(request)); the log holds all the worker printed before its exit's reply.
    record.candidate_log = candidate.log_tail();
    relay->leaving = std::move(worker);
  } else {
    const Stage stage(record, "shutdown");
    candidate.shutdown();
    record.candidate_log = candidate.log_tail();
  }
  judge_measured(record, protocol, copy_seconds, output_bytes);
  record.reference_log = reference.log_tail();
  record.wall_seconds = Seconds(std::chrono::steady_clock::now() - started).count();
  return record;
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
