#include "kbv/eval/evaluation.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <optional>
#include <sstream>

#include <ATen/ATen.h>

#include "kbv/check/comparison.h"
#include "kbv/eval/correctness.h"
#include "kbv/eval/extension_cache.h"
#include "kbv/eval/plan.h"
#include "kbv/eval/timing_run.h"
#include "kbv/hacks/judge.h"
#include "kbv/measure/statistics.h"

namespace kbv::eval {
namespace {

using nlohmann::json;
using protocol::Record;
using protocol::Verdict;
using Seconds = std::chrono::duration<double>;

constexpr int kBootstrapResamples = 2000;

Verdict verdict_of(const std::string& kind) {
  if (kind == "compile_error") return Verdict::compile_error;
  if (kind == "crash") return Verdict::crash;
  if (kind == "timeout") return Verdict::timeout;
  if (kind == "incorrect") return Verdict::incorrect;
  return Verdict::runtime_error;
}

[[noreturn]] void throw_reference_lost(const WorkerClient& worker, const WorkerLost& lost) {
  throw EvalError("the reference worker " + std::string(lost.what()) + "\n" + worker.log_tail());
}

// A request to the reference worker: any failure is the evaluator's, not the candidate's.
Reply reference_request(WorkerClient& worker, const json& command, double timeout) {
  try {
    return worker.request(command, Seconds(timeout));
  } catch (const WorkerFailed& failed) {
    if (failed.kind == "no_device" || failed.kind == "problem_error") throw EvalError(failed.what());
    throw EvalError("the reference worker failed (" + failed.kind + "): " + failed.what());
  } catch (const WorkerLost& lost) {
    throw_reference_lost(worker, lost);
  }
}

// Splits a check reply into its per-mode output lists.
std::vector<std::vector<at::Tensor>> outputs_by_mode(const Reply& reply, std::vector<std::optional<std::string>>* bad) {
  std::vector<std::vector<at::Tensor>> by_mode;
  size_t next = 0;
  for (const json& result : reply.header.at("results")) {
    std::vector<at::Tensor> outputs;
    if (result.contains("bad_output")) {
      if (bad) bad->push_back(result.at("bad_output").get<std::string>());
    } else {
      if (bad) bad->push_back(std::nullopt);
      for (size_t i = 0; i < result.at("outputs").size(); ++i) outputs.push_back(reply.tensors.at(next++));
    }
    by_mode.push_back(std::move(outputs));
  }
  return by_mode;
}

// The reference side of every draw: reference and baseline outputs, and whether the reference
// is stochastic (two calls on the first draw's inputs differ).
std::vector<ReferenceDraw> reference_draws(WorkerClient& worker, const std::vector<Draw>& plan,
                                           const EvalRequest& request, bool& stochastic) {
  std::vector<ReferenceDraw> draws;
  stochastic = false;
  for (const Draw& draw : plan) {
    ReferenceDraw d{draw, {}, {}, {}, "", 0, 0};
    const bool first = draws.empty();
    json modes = first ? json{"reference", "reference", "baseline"} : json{"reference", "baseline"};
    try {
      const Reply reply = worker.request({{"cmd", "check"}, {"draw", draw.to_json()}, {"modes", modes}},
                                         Seconds(request.timeout_seconds));
      std::vector<std::optional<std::string>> bad;
      auto outputs = outputs_by_mode(reply, &bad);
      if (bad[0]) throw EvalError("the problem's Model returns no tensors: " + *bad[0]);
      d.reference = outputs.front();
      d.baseline = outputs.back();
      d.checksum = reply.header.at("checksum");
      if (first) stochastic = check::scaled_error(outputs[0], outputs[1]) != 0.0;
    } catch (const WorkerFailed& failed) {
      if (failed.kind != "reference_error") throw EvalError("the reference worker failed: " + std::string(failed.what()));
      if (draw.family == protocol::Family::standard) {
        throw EvalError(std::string("the problem's Model raised on its own inputs: ") + failed.what());
      }
      d.skip_reason = "out of domain: the reference raised under this family";
    } catch (const WorkerLost& lost) {
      throw_reference_lost(worker, lost);
    }
    draws.push_back(std::move(d));
  }
  return draws;
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

// The candidate side, run until a verdict other than pass is reached or everything is measured.
// Throws WorkerFailed / WorkerLost for the caller to file as the candidate's verdict.
void evaluate_candidate(WorkerClient& worker, const EvalRequest& request, const std::vector<ReferenceDraw>& references,
                        const json& reference_trace, std::mt19937_64& rng, Record& record,
                        std::vector<TimedOutputSketch>& sketches) {
  const protocol::Protocol& protocol = request.protocol;
  const bool detect = protocol.detection.enabled;
  if (detect) {
    // First, while nothing of the candidate has run in that process: its text only.
    const Reply screened = worker.request({{"cmd", "screen"}, {"candidate", request.candidate}}, Seconds(request.timeout_seconds));
    hacks::merge(record.findings, hacks::static_findings(screened.header));
  }
  request.progress("candidate: importing (compiles its kernels)");
  const Reply loaded = worker.request({{"cmd", "load"},
                                       {"problem", request.problem},
                                       {"candidate", request.candidate},
                                       {"device", request.device},
                                       {"protocol", protocol::to_json(protocol)}},
                                      Seconds(request.compile_timeout_seconds));
  record.candidate_memory.emplace().footprint_bytes = loaded.header.value("footprint_bytes", 0);

  request.progress("candidate: checking " + std::to_string(references.size()) + " input draws");
  for (const ReferenceDraw& reference : references) {
    if (!reference.skip_reason.empty()) {
      record.draws.push_back(judge(reference, {}, std::nullopt, protocol));
      continue;
    }
    const Reply reply = worker.request(
        {{"cmd", "check"}, {"draw", reference.draw.to_json()}, {"modes", {"candidate"}}}, Seconds(request.timeout_seconds));
    if (reply.header.at("checksum") != reference.checksum) {
      throw EvalError("the two workers drew different inputs for one seed (does get_inputs() use a random source "
                      "other than torch, numpy or random?)");
    }
    std::vector<std::optional<std::string>> bad;
    auto outputs = outputs_by_mode(reply, &bad);
    record.draws.push_back(judge(reference, outputs.front(), bad.front(), protocol));
  }
  record.correctness = summarize(record.draws, protocol);
  const CorrectnessDecision decision = decide(record.correctness, protocol);
  record.verdict = decision.verdict;
  record.verdict_reason = decision.reason;
  hacks::merge(record.findings, decision.findings);
  if (decision.verdict == Verdict::unverifiable) return;

  // The probe runs whether or not the checks passed: a hack that also computes wrong values is
  // still named.
  const ReferenceDraw* probe_draw = probe_inputs(references);
  if (detect && probe_draw) {
    request.progress("candidate: probing (repeat, poisoned memory, trace, refreshed inputs)");
    json command = {{"cmd", "probe"}, {"draw", probe_draw->draw.to_json()}};
    const ReferenceDraw* refresh = refresh_draw(references, record.draws, probe_draw);
    if (refresh) command["refresh"] = refresh->draw.to_json();
    const Reply probe = worker.request(command, Seconds(request.timeout_seconds));
    record.probe = probe.header.at("probe");
    hacks::merge(record.findings, hacks::judge_probe(probe.header.at("probe"), reference_trace, probe_draw->tolerance, protocol.detection));
    if (refresh && !probe.header.at("probe").contains("refreshed_bad_output")) {
      const protocol::DrawResult judged = judge(*refresh, probe.tensors, std::nullopt, protocol);
      if (judged.status == "fail") {
        hacks::merge(record.findings,
                     {{"stale_output", "error",
                       json::array({{{"source", "runtime"}, {"when", "probe: call on refreshed inputs"},
                                     {"why", "same buffers refilled with a draw it passed fresh: the output did not follow"},
                                     {"scaled_error", judged.error}, {"tolerance", judged.tolerance}}})}});
      }
    }
  }
  if (decision.verdict == Verdict::pass) {
    request.progress("candidate: timing");
    TimingRun timing = run_timing(worker, "candidate", protocol, rng, request.timeout_seconds, protocol.timing.check_timed_outputs);
    record.candidate_timing = std::move(timing.result);
    sketches = std::move(timing.sketches);
    const Reply memory = worker.request({{"cmd", "memory"}, {"mode", "candidate"}}, Seconds(request.timeout_seconds));
    record.candidate_memory->peak_bytes = memory.header.at("peak_bytes").get<std::int64_t>();
    if (memory.header.contains("driver_growth_bytes")) record.candidate_memory->driver_growth_bytes = memory.header["driver_growth_bytes"];
  }
  if (detect) {
    const Reply watched = worker.request({{"cmd", "findings"}}, Seconds(request.timeout_seconds));
    hacks::merge(record.findings, hacks::watched_findings(watched.header.at("findings")));
  }
}

// Every timed output of the candidate against the reference for the same inputs, at the
// sketch's positions, under the standard family's tolerance.
void check_timed_outputs(WorkerClient& reference, const EvalRequest& request, const std::vector<ReferenceDraw>& references,
                         const std::vector<TimedOutputSketch>& sketches, Record& record) {
  double tolerance = request.protocol.error_floor;
  for (const ReferenceDraw& r : references) {
    if (r.draw.family == protocol::Family::standard && r.skip_reason.empty()) tolerance = std::max(tolerance, r.tolerance);
  }
  request.progress("reference: checking " + std::to_string(sketches.size()) + " timed outputs");
  for (size_t call = 0; call < sketches.size(); ++call) {
    const TimedOutputSketch& s = sketches[call];
    const json draw = {{"family", "standard"}, {"params", json::object()}, {"seed", s.content_seed}};
    const Reply reply = reference_request(
        reference,
        {{"cmd", "check"}, {"draw", draw}, {"modes", {"reference"}}, {"sketch", {{"seed", s.sketch_seed}, {"points", request.protocol.timing.sketch_points}}}},
        request.timeout_seconds);
    const json& rms = reply.header.at("results").at(0).at("rms");
    double error = 0;
    if (s.values.size() != reply.tensors.size()) {
      error = std::numeric_limits<double>::infinity();
    } else {
      for (size_t i = 0; i < s.values.size(); ++i) {
        error = std::max(error, check::scaled_error(s.values[i], reply.tensors[i], rms.at(i).get<double>()));
      }
    }
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

}  // namespace

Record evaluate(const EvalRequest& request) {
  const auto started = std::chrono::steady_clock::now();
  for (const std::string& path : {request.problem, request.candidate}) {
    if (!std::filesystem::is_regular_file(path)) throw EvalError("no such file: " + path);
  }
  const protocol::Protocol& protocol = request.protocol;
  Record record;
  record.problem = request.problem;
  record.candidate = request.candidate;
  record.device = request.device;
  record.protocol = protocol::to_json(protocol);

  std::mt19937_64 rng = make_rng(protocol);
  const std::vector<Draw> plan = plan_draws(protocol, rng);

  // Reference side, in a process that never imports the candidate.
  request.progress("reference: loading the problem");
  WorkerClient reference("reference", request.launch);
  const Reply loaded = reference_request(
      reference, {{"cmd", "load"}, {"problem", request.problem}, {"device", request.device}, {"protocol", record.protocol}},
      request.compile_timeout_seconds);
  record.versions = loaded.header.at("versions");
  record.versions["kbv"] = KBV_VERSION;
  for (const char* key : {"gpu", "cuda_driver_api"}) {
    if (loaded.header.contains(key)) record.versions[key] = loaded.header[key];
  }
  request.progress("reference: " + std::to_string(plan.size()) + " input draws");
  bool stochastic = false;
  std::vector<ReferenceDraw> references = reference_draws(reference, plan, request, stochastic);
  prepare(references, protocol);
  if (stochastic) {
    reference.shutdown();
    record.verdict = Verdict::unverifiable;
    record.verdict_reason = "stochastic reference: two calls on the same inputs differ";
    record.wall_seconds = Seconds(std::chrono::steady_clock::now() - started).count();
    return record;
  }
  json reference_trace;
  const ReferenceDraw* traced = first_standard(references);
  if (protocol.detection.enabled && traced) {
    // The ops the reference itself runs: library ops doing all of them in the candidate are the
    // op. Traced before the baseline is timed, as the candidate is traced before its timing, so
    // whatever the profiler leaves behind weighs on both sides alike.
    reference_trace = reference_request(reference, {{"cmd", "trace"}, {"draw", traced->draw.to_json()}, {"mode", "baseline"}},
                                        request.timeout_seconds).header.at("trace");
  }
  request.progress("reference: timing the baseline");
  try {
    record.baseline = run_timing(reference, "baseline", protocol, rng, request.timeout_seconds, false).result;
  } catch (const std::exception& error) {
    throw EvalError(std::string("timing the baseline failed: ") + error.what());
  }
  const Reply base_memory = reference_request(reference, {{"cmd", "memory"}, {"mode", "baseline"}}, request.timeout_seconds);
  record.baseline_memory.emplace();
  record.baseline_memory->footprint_bytes = loaded.header.value("footprint_bytes", 0);
  record.baseline_memory->peak_bytes = base_memory.header.at("peak_bytes").get<std::int64_t>();
  if (base_memory.header.contains("driver_growth_bytes")) {
    record.baseline_memory->driver_growth_bytes = base_memory.header["driver_growth_bytes"];
  }

  // Candidate side, in a fresh process whose extension builds are keyed by content.
  WorkerLaunch launch = request.launch;
  launch.environment.emplace_back("TORCH_EXTENSIONS_DIR",
                                  extension_dir(request.cache_dir, request.candidate, request.device, launch.python));
  std::vector<TimedOutputSketch> sketches;
  {
    WorkerClient candidate("candidate", launch);
    try {
      evaluate_candidate(candidate, request, references, reference_trace, rng, record, sketches);
    } catch (const WorkerFailed& failed) {
      record.verdict = verdict_of(failed.kind);
      record.verdict_reason = failed.what();
    } catch (const WorkerLost& lost) {
      record.verdict = verdict_of(lost.kind);
      record.verdict_reason = lost.what();
    }
    candidate.shutdown();
    record.candidate_log = candidate.log_tail();
  }
  if (record.verdict == Verdict::pass) check_timed_outputs(reference, request, references, sketches, record);
  if (protocol.detection.enabled && record.candidate_timing && traced) {
    std::int64_t output_bytes = 0;
    for (const at::Tensor& t : traced->reference) output_bytes += static_cast<std::int64_t>(t.nbytes());
    const double copy = reference_request(reference, {{"cmd", "floor"}, {"bytes", output_bytes}}, request.timeout_seconds)
                            .header.at("copy_seconds");
    if (auto anomaly = hacks::judge_floor(record.candidate_timing->seconds, copy, output_bytes, protocol.detection)) {
      hacks::merge(record.findings, {*anomaly});
    }
  }
  if (protocol.detection.enabled) hacks::settle(record);
  reference.shutdown();
  record.reference_log = reference.log_tail();

  if (record.baseline && record.candidate_timing && record.candidate_timing->seconds > 0) {
    record.speedup = record.baseline->seconds / record.candidate_timing->seconds;
    if (protocol.timing.use_median) {
      const auto ci = measure::bootstrap_ratio_of_medians(record.baseline->samples, record.candidate_timing->samples,
                                                          kBootstrapResamples, /*seed=*/0);
      record.speedup_ci_low = ci.low;
      record.speedup_ci_high = ci.high;
    }
  }
  record.wall_seconds = Seconds(std::chrono::steady_clock::now() - started).count();
  return record;
}

}  // namespace kbv::eval
