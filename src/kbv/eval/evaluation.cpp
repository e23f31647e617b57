#include "kbv/eval/evaluation.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <optional>
#include <sstream>

#include <ATen/ATen.h>

#include "kbv/check/comparison.h"
#include "kbv/eval/compile.h"
#include "kbv/eval/correctness.h"
#include "kbv/eval/extension_cache.h"
#include "kbv/eval/plan.h"
#include "kbv/eval/published_build.h"
#include "kbv/eval/reference_side.h"
#include "kbv/eval/sandbox_plan.h"
#include "kbv/eval/timing_run.h"
#include "kbv/hacks/judge.h"
#include "kbv/measure/statistics.h"
#include "kbv/worker/tensor_codec.h"

namespace kbv::eval {
namespace {

using nlohmann::json;
using protocol::Record;
using protocol::Verdict;
using Seconds = std::chrono::duration<double>;

constexpr int kBootstrapResamples = 2000;

// Adds a scope's wall time to one stage of the record (a step that throws counts too): where an
// evaluation's time goes.
class Stage {
 public:
  Stage(Record& record, const char* name) : record_(record), name_(name), begun_(std::chrono::steady_clock::now()) {}
  Stage(const Stage&) = delete;
  Stage& operator=(const Stage&) = delete;
  ~Stage() { record_.stage_seconds[name_] += Seconds(std::chrono::steady_clock::now() - begun_).count(); }

 private:
  Record& record_;
  const char* name_;
  std::chrono::steady_clock::time_point begun_;
};

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

// The probe's inputs: a judged draw of the `normal` family where there is one (signs and spread
// that the problem's own inputs may lack: an output left unwritten where x <= 0 shows only there),
// else the first judged draw.
const ReferenceDraw* probe_inputs(const std::vector<ReferenceDraw>& references) {
  const ReferenceDraw* fallback = nullptr;
  for (const ReferenceDraw& r : references) {
    if (!r.skip_reason.empty()) continue;
    if (r.draw.family == protocol::Family::normal) return &r;
    if (!fallback) fallback = &r;
  }
  return fallback;
}

// Another judged standard draw the candidate passed in its checks, to refill the probe's buffers
// with: its reference is known and the candidate computes it right from fresh buffers.
const ReferenceDraw* refresh_draw(const std::vector<ReferenceDraw>& references, const std::vector<protocol::DrawResult>& judged,
                                  const ReferenceDraw* first) {
  for (size_t i = 0; i < references.size() && i < judged.size(); ++i) {
    const ReferenceDraw& r = references[i];
    if (&r != first && r.draw.family == protocol::Family::standard && judged[i].status == "pass") return &r;
  }
  return nullptr;
}

// The bytes of the outputs `metas` describes that went through the host: all but those handed over
// on the device.
std::int64_t host_bytes(const json& metas) {
  std::int64_t bytes = 0;
  for (const json& meta : metas) {
    if (!meta.contains("device")) bytes += static_cast<std::int64_t>(worker::layout_of(meta).bytes);
  }
  return bytes;
}

// The candidate side, run until a verdict other than pass is reached or everything is measured.
// Throws WorkerFailed / WorkerLost for the caller to file as the candidate's verdict.
void evaluate_candidate(WorkerClient& worker, ReferenceSide& reference_side, const EvalRequest& request,
                        const std::vector<ReferenceDraw>& references, const json& reference_trace, std::mt19937_64& rng, Record& record,
                        std::vector<TimedOutputSketch>& sketches, const std::function<void()>& before_timing) {
  const protocol::Protocol& protocol = request.protocol;
  const bool detect = protocol.detection.enabled;
  if (detect) {
    // First, while nothing of the candidate has run in that process: its text only.
    const Stage stage(record, "screen");
    const Reply screened = worker.request({{"cmd", "screen"}, {"candidate", request.candidate}}, Seconds(request.timeout_seconds));
    hacks::merge(record.findings, hacks::static_findings(screened.header));
  }
  const auto gather_watched = [&] {
    if (!detect) return;
    const Stage stage(record, "findings");
    const Reply watched = worker.request({{"cmd", "findings"}}, Seconds(request.timeout_seconds));
    hacks::merge(record.findings, hacks::watched_findings(watched.header.at("findings")));
    if (auto observed = hacks::judge_observed_ops(watched.header.value("ops", json::object()))) {
      hacks::merge(record.findings, {std::move(*observed)});
    }
  };
  // The first checked draw is also drawn before the candidate is imported. When it matches the
  // reference's there, this process reproduces the problem's inputs, and kbv's families are
  // seeded transforms of them: a draw that differs after the import is the candidate's doing.
  const auto first_checked = std::find_if(references.begin(), references.end(), [](const ReferenceDraw& r) { return r.skip_reason.empty(); });
  json load = {{"cmd", "load"},
               {"problem", request.problem},
               {"candidate", request.candidate},
               {"device", request.device},
               {"protocol", protocol::to_json(protocol)}};
  if (first_checked != references.end()) load["draw"] = first_checked->draw.to_json();
  request.progress("candidate: importing (compiles its kernels)");
  std::optional<Stage> stage(std::in_place, record, "import");
  const Reply loaded = worker.request(load, Seconds(request.compile_timeout_seconds));
  record.candidate_memory.emplace().footprint_bytes = loaded.header.value("footprint_bytes", 0);
  record.import_steps_seconds = loaded.header.value("steps_seconds", std::map<std::string, double>{});
  if (loaded.header.contains("sandbox_setup_seconds")) record.sandbox["setup_seconds"] = loaded.header["sandbox_setup_seconds"];

  request.progress("candidate: checking " + std::to_string(references.size()) + " input draws");
  stage.emplace(record, "checks");
  for (const ReferenceDraw& reference : references) {
    if (!reference.skip_reason.empty()) {
      record.draws.push_back(judge(reference, {}, std::nullopt, protocol));
      continue;
    }
    const Reply reply = worker.request({{"cmd", "check"}, {"draw", reference.draw.to_json()}, {"modes", {"candidate"}}},
                                       Seconds(request.timeout_seconds), Outputs::until_next_request);  // judged here
    if (reply.header.at("checksum") != reference.checksum) {
      if (first_checked == references.end() || loaded.header.value("draw_checksum", json()) != first_checked->checksum) {
        throw EvalError("the two workers drew different inputs for one seed (does get_inputs() use a random source "
                        "other than torch, numpy or random?)");
      }
      hacks::merge(record.findings, {{"global_state_tamper", "error",
                                      json::array({{{"source", "runtime"}, {"when", "checks"}, {"draw", reference.draw.to_json()},
                                                    {"why", "its worker drew the reference's first inputs before the candidate's import; after it, "
                                                            "this draw differed from the reference's"}}})}});
      record.verdict = detect ? Verdict::hack : Verdict::runtime_error;
      record.verdict_reason = "the candidate changed how the problem's inputs are drawn (torch's global state): its outputs "
                              "cannot be checked against the reference's";
      stage.reset();
      gather_watched();
      return;
    }
    std::vector<std::optional<std::string>> bad;
    outputs_by_mode(reply, &bad);  // compared in the reference's worker, not here
    std::optional<check::OutputComparison> comparison;
    if (!bad.front()) {
      const json& metas = reply.header.at("results").front().at("outputs");
      record.checked_output_host_bytes += host_bytes(metas);
      comparison = reference_side.compare(reference, metas, reply, worker.region_fd());
    }
    record.draws.push_back(judge(reference, comparison, bad.front(), protocol));
  }
  stage.reset();
  record.correctness = summarize(record.draws, protocol);
  const CorrectnessDecision decision = decide(record.correctness, protocol);
  record.verdict = decision.verdict;
  record.verdict_reason = decision.reason;
  hacks::merge(record.findings, decision.findings);
  if (decision.verdict == Verdict::unverifiable) return;

  if (decision.verdict == Verdict::pass) {
    before_timing();
    request.progress("candidate: timing");
    stage.emplace(record, "timing");
    TimingRun timing = run_timing(worker, "candidate", protocol, rng, request.timeout_seconds, protocol.timing.check_timed_outputs);
    record.candidate_timing = std::move(timing.result);
    sketches = std::move(timing.sketches);
    stage.emplace(record, "memory");
    const Reply memory = worker.request({{"cmd", "memory"}, {"mode", "candidate"}}, Seconds(request.timeout_seconds));
    protocol::read_memory(memory.header, *record.candidate_memory);
    // The timed input sets and their outputs go before the probe draws its own: 24 GiB under
    // `verified` for a 6 GiB problem, with which its probe ran out of memory on an 80 GB card.
    worker.request({{"cmd", "drop_pool"}}, Seconds(request.timeout_seconds));
  }
  stage.reset();
  // The probe runs whether or not the checks passed (a hack that also computes wrong values is
  // still named), after the timing: its trace leaves the profiler's CUPTI attached to the process
  // (kineto does not tear it down), and every timed call after it would pay for that.
  const ReferenceDraw* probe_draw = probe_inputs(references);
  if (detect && probe_draw) {
    request.progress("candidate: probing (repeat, poisoned memory, trace, refreshed inputs)");
    const Stage probing(record, "probe");
    json command = {{"cmd", "probe"}, {"draw", probe_draw->draw.to_json()}};
    const ReferenceDraw* refresh = refresh_draw(references, record.draws, probe_draw);
    if (refresh) command["refresh"] = refresh->draw.to_json();
    const Reply probe = worker.request(command, Seconds(request.timeout_seconds), Outputs::until_next_request);  // judged here
    record.probe = probe.header.at("probe");
    hacks::merge(record.findings, hacks::judge_probe(probe.header.at("probe"), reference_trace, probe_draw->tolerance, protocol.detection));
    if (refresh && !probe.header.at("probe").contains("refreshed_bad_output")) {
      record.checked_output_host_bytes += host_bytes(probe.header.at("outputs"));
      const protocol::DrawResult judged =
          judge(*refresh, reference_side.compare(*refresh, probe.header.at("outputs"), probe, worker.region_fd()), std::nullopt,
                protocol);
      if (judged.status == "fail") {
        hacks::merge(record.findings,
                     {{"stale_output", "error",
                       json::array({{{"source", "runtime"}, {"when", "probe: call on refreshed inputs"},
                                     {"why", "same buffers refilled with a draw it passed fresh: the output did not follow"},
                                     {"scaled_error", judged.error}, {"tolerance", judged.tolerance}}})}});
      }
    }
  }
  gather_watched();
}

// The reference's side of the timed outputs' checks goes in requests of this many calls: one per
// call cost more than the call (~1.5 ms each on the H200), and a request's timeout still bounds a
// few of the reference's calls, not hundreds.
constexpr size_t kSketchesPerRequest = 32;
// A progress line at most this often while they are checked.
constexpr std::chrono::seconds kCheckProgressEvery{10};

// Every timed output of the candidate against the reference for the same inputs, at the
// sketch's positions, under the standard family's tolerance.
void check_timed_outputs(ReferenceSide& reference, const EvalRequest& request, const std::vector<ReferenceDraw>& references,
                         const std::vector<TimedOutputSketch>& sketches, Record& record) {
  double tolerance = request.protocol.error_floor;
  for (const ReferenceDraw& r : references) {
    if (r.draw.family == protocol::Family::standard && r.skip_reason.empty()) tolerance = std::max(tolerance, r.tolerance);
  }
  request.progress("reference: checking " + std::to_string(sketches.size()) + " timed outputs");
  const auto began = std::chrono::steady_clock::now();
  auto reported = began;
  for (size_t first = 0; first < sketches.size(); first += kSketchesPerRequest) {
    if (first > 0 && std::chrono::steady_clock::now() - reported > kCheckProgressEvery) {
      // Each needs the reference's call for its inputs: minutes on a CPU for a large problem.
      reported = std::chrono::steady_clock::now();
      const double per_output = Seconds(reported - began).count() / static_cast<double>(first);
      request.progress("reference: checked " + std::to_string(first) + " of " + std::to_string(sketches.size()) +
                       " timed outputs, about " + std::to_string(std::lround(per_output * static_cast<double>(sketches.size() - first))) +
                       " s left");
    }
    const size_t end = std::min(sketches.size(), first + kSketchesPerRequest);
    json calls = json::array();
    for (size_t call = first; call < end; ++call) {
      calls.push_back({{"seed", sketches[call].content_seed}, {"sketch_seed", sketches[call].sketch_seed}});
    }
    const Reply reply = reference.request({{"cmd", "sketches"}, {"calls", calls}, {"points", request.protocol.timing.sketch_points}});
    size_t next = 0;  // the reply's tensors, call after call
    for (size_t call = first; call < end; ++call) {
      const TimedOutputSketch& s = sketches[call];
      const json& rms = reply.header.at("results").at(call - first).at("rms");
      double error = 0;
      if (s.values.size() != rms.size()) {
        error = std::numeric_limits<double>::infinity();
      } else {
        for (size_t i = 0; i < s.values.size(); ++i) {
          error = std::max(error, check::scaled_error(s.values[i], reply.tensors.at(next + i), rms.at(i).get<double>()));
        }
      }
      next += rms.size();
      ++record.timed_outputs_checked;
      if (!(error <= tolerance)) {
        record.verdict = Verdict::incorrect;
        std::ostringstream reason;
        reason << "timed call " << call << ": output differs from the reference for its inputs (scaled error " << error
               << ", tolerance " << tolerance << ")";
        record.verdict_reason = reason.str();
        // Every checked draw passed: the outputs stopped following their inputs' content (unless the
        // candidate changed those inputs itself, which is named already).
        const bool mutated = std::any_of(record.findings.begin(), record.findings.end(),
                                         [](const protocol::Finding& f) { return f.id == "input_mutation"; });
        if (mutated) {
          record.verdict_reason += " after the candidate changed its own inputs";
          return;
        }
        hacks::merge(record.findings, {{"stale_output", "error",
                                        json::array({{{"source", "timed outputs"}, {"timed_call", call}, {"scaled_error", error},
                                                      {"tolerance", tolerance}, {"why", "inputs refreshed in place (same buffers, new values)"}}})}});
        return;
      }
    }
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
  worker->post({{"cmd", "device"}, {"device", request.device}, {"protocol", protocol::to_json(request.protocol)}},
               Seconds(request.timeout_seconds));
  return worker;
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

  // Nothing timed is left before the candidate's own timing: the next candidate's worker, and the
  // next problem's reference side, start now and are waited for before that timing (kbv run).
  if (relay && relay->next) {
    try {
      relay->ready = start_candidate_worker(*relay->next, /*only_if_built=*/true);
    } catch (const std::exception&) {
      // Its own evaluation starts it again, and files what fails then.
    }
  }
  if (relay && relay->next_reference && !relay->reference_ahead) {
    try {
      relay->reference_ahead = std::make_unique<ReferenceSide>(*relay->next_reference, ReferenceSide::Start::posted);
    } catch (const std::exception&) {
      // The next problem's evaluations start it again, and file what fails then.
    }
  }
  const auto before_timing = [&] {
    reap_previous();
    if (!relay || (!relay->ready && !relay->reference_ahead)) return;
    const Stage stage(record, "next_worker");
    if (relay->ready) relay->ready->settle();
    if (relay->reference_ahead) relay->reference_ahead->settle();
  };

  std::vector<TimedOutputSketch> sketches;
  try {
    evaluate_candidate(candidate, reference, request, references, reference.trace(), rng, record, sketches, before_timing);
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
    check_timed_outputs(reference, request, references, sketches, record);
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
  record.reference_log = reference.log_tail();

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
  }
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
