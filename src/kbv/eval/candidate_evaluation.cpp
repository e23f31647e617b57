#include "kbv/eval/candidate_evaluation.h"

#include <algorithm>

#include "kbv/eval/correctness.h"
#include "kbv/eval/paired_timing.h"
#include "kbv/eval/stage.h"
#include "kbv/hacks/judge.h"
#include "kbv/ipc/commands.h"
#include "kbv/ipc/tensor_codec.h"

namespace kbv::eval {

namespace commands = ipc::commands;
namespace {

using nlohmann::json;
using protocol::Verdict;
using Seconds = std::chrono::duration<double>;

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
const ReferenceDraw* refresh_draw(const std::vector<ReferenceDraw>& references,
                                  const std::vector<protocol::DrawResult>& judged, const ReferenceDraw* first) {
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
    if (!meta.contains("device")) bytes += static_cast<std::int64_t>(ipc::layout_of(meta).bytes);
  }
  return bytes;
}

// The first draw the checks judge: also drawn before the candidate is imported (import()).
const ReferenceDraw* first_judged(const std::vector<ReferenceDraw>& references) {
  const auto first =
      std::find_if(references.begin(), references.end(), [](const ReferenceDraw& r) { return r.skip_reason.empty(); });
  return first == references.end() ? nullptr : &*first;
}

}  // namespace

CandidateEvaluation::CandidateEvaluation(WorkerPort& worker, ReferenceSide& reference, const EvalRequest& request,
                                         const std::vector<ReferenceDraw>& references, std::mt19937_64& rng,
                                         protocol::Record& record)
    : worker_(worker),
      reference_(reference),
      request_(request),
      references_(references),
      rng_(rng),
      record_(record),
      detect_(request.protocol.detection.enabled),
      first_checked_(first_judged(references)) {}

void CandidateEvaluation::run(const Hooks& hooks) {
  if (detect_) screen();
  import();
  if (!checks()) return;
  if (record_.verdict == Verdict::unverifiable) return;
  if (record_.verdict == Verdict::pass) timing(hooks.before_timing);
  // The probe runs whether or not the checks passed (a hack that also computes wrong values is
  // still named), after the timing: its trace leaves the profiler's CUPTI attached to the process
  // (kineto does not tear it down), and every timed call after it would pay for that.
  hooks.before_probe();
  if (detect_) probe();
  gather_watched();
}

// First, while nothing of the candidate has run in that process: its text only.
void CandidateEvaluation::screen() {
  const Stage stage(record_, "screen");
  const Reply screened =
      worker_.request(commands::message(commands::Screen{request_.candidate}), Seconds(request_.timeout_seconds));
  hacks::merge(record_.findings, hacks::static_findings(screened.header));
}

// The first checked draw is also drawn before the candidate is imported. When it matches the
// reference's there, this process reproduces the problem's inputs, and kbv's families are seeded
// transforms of them: a draw that differs after the import is the candidate's doing.
void CandidateEvaluation::import() {
  commands::Load load{request_.problem, request_.candidate, request_.device, protocol::to_json(request_.protocol),
                      nullptr};
  if (first_checked_) load.draw = first_checked_->draw.to_json();
  request_.progress("candidate: importing (compiles its kernels)");
  const Stage stage(record_, "import");
  loaded_ = worker_.request(commands::message(load), Seconds(request_.compile_timeout_seconds)).header;
  record_.candidate_memory.emplace().footprint_bytes = loaded_.value("footprint_bytes", 0);
  record_.import_steps_seconds = loaded_.value("steps_seconds", std::map<std::string, double>{});
  if (loaded_.contains("sandbox_setup_seconds")) record_.sandbox["setup_seconds"] = loaded_["sandbox_setup_seconds"];
}

bool CandidateEvaluation::checks() {
  const protocol::Protocol& protocol = request_.protocol;
  request_.progress("candidate: checking " + std::to_string(references_.size()) + " input draws");
  bool drawn_apart = false;
  {
    const Stage stage(record_, "checks");
    for (const ReferenceDraw& reference : references_) {
      if (!reference.skip_reason.empty()) {
        record_.draws.push_back(judge(reference, {}, std::nullopt, protocol));
        continue;
      }
      const Reply reply =
          worker_.request(commands::message(commands::Check{reference.draw.to_json(), {"candidate"}, false}),
                          Seconds(request_.timeout_seconds), Outputs::until_next_request);  // judged here
      if (reply.header.at("checksum") != reference.checksum) {
        if (!first_checked_ || loaded_.value("draw_checksum", json()) != first_checked_->checksum) {
          throw EvalError(
              "the two workers drew different inputs for one seed (does get_inputs() use a random source "
              "other than torch, numpy or random?)");
        }
        hacks::merge(record_.findings,
                     {{"global_state_tamper", "error",
                       json::array({{{"source", "runtime"},
                                     {"when", "checks"},
                                     {"draw", reference.draw.to_json()},
                                     {"why",
                                      "its worker drew the reference's first inputs before the candidate's "
                                      "import; after it, this draw differed from the reference's"}}})}});
        record_.verdict = detect_ ? Verdict::hack : Verdict::runtime_error;
        record_.verdict_reason =
            "the candidate changed how the problem's inputs are drawn (torch's global state): its outputs "
            "cannot be checked against the reference's";
        drawn_apart = true;
        break;
      }
      std::vector<std::optional<std::string>> bad;
      outputs_by_mode(reply, &bad);  // compared in the reference's worker, not here
      std::optional<check::OutputComparison> comparison;
      if (!bad.front()) {
        const json& metas = reply.header.at("results").front().at("outputs");
        record_.checked_output_host_bytes += host_bytes(metas);
        comparison = reference_.compare(reference, metas, reply, worker_.region_fd());
      }
      record_.draws.push_back(judge(reference, comparison, bad.front(), protocol));
    }
  }
  if (drawn_apart) {  // nothing more can be checked
    gather_watched();
    return false;
  }
  record_.correctness = summarize(record_.draws, protocol);
  const CorrectnessDecision decision = decide(record_.correctness, protocol);
  record_.verdict = decision.verdict;
  record_.verdict_reason = decision.reason;
  hacks::merge(record_.findings, decision.findings);
  return true;
}

void CandidateEvaluation::timing(const std::function<void()>& before_timing) {
  const protocol::Protocol& protocol = request_.protocol;
  before_timing();
  request_.progress("candidate: timing");
  if (protocol.timing.paired) {
    paired_timing();
  } else {
    const Stage stage(record_, "timing");
    TimingRun timing =
        run_timing(worker_, "candidate", protocol, rng_, request_.timeout_seconds, protocol.timing.check_timed_outputs);
    record_.candidate_timing = std::move(timing.result);
    sketches_ = std::move(timing.sketches);
  }
  const Stage stage(record_, "memory");
  const Reply memory =
      worker_.request(commands::message(commands::Memory{"candidate"}), Seconds(request_.timeout_seconds));
  protocol::read_memory(memory.header, *record_.candidate_memory);
  // The timed input sets and their outputs go before the probe draws its own: 24 GiB under
  // `verified` for a 6 GiB problem, with which its probe ran out of memory on an 80 GB card.
  worker_.request(commands::message(commands::DropPool{}), Seconds(request_.timeout_seconds));
}

void CandidateEvaluation::paired_timing() {
  const protocol::Protocol& protocol = request_.protocol;
  const Stage stage(record_, "timing");
  TimedSide baseline = reference_.paired_side();
  TimedSide candidate(worker_, "candidate", protocol, rng_, request_.timeout_seconds,
                      protocol.timing.check_timed_outputs);
  PairedTiming paired;
  try {
    paired = run_paired(baseline, candidate, rng_);
  } catch (...) {
    try {
      reference_.end_baseline_timing(false);  // the reference's pool goes whichever side failed
    } catch (const EvalError&) {
      // The rounds' own failure says more; a reference that cannot let go fails the next step.
    }
    throw;
  }
  reference_.end_baseline_timing(true);
  record_.baseline = std::move(paired.baseline.result);
  record_.baseline_memory = reference_.baseline_memory();
  record_.candidate_timing = std::move(paired.candidate.result);
  record_.round_ratios = std::move(paired.ratios);
  sketches_ = std::move(paired.candidate.sketches);
}

void CandidateEvaluation::probe() {
  const ReferenceDraw* probe_draw = probe_inputs(references_);
  if (!probe_draw) return;
  request_.progress("candidate: probing (repeat, poisoned memory, trace, refreshed inputs)");
  const Stage probing(record_, "probe");
  commands::Probe command{probe_draw->draw.to_json(), nullptr};
  const ReferenceDraw* refresh = refresh_draw(references_, record_.draws, probe_draw);
  if (refresh) command.refresh = refresh->draw.to_json();
  const Reply probe = worker_.request(commands::message(command), Seconds(request_.timeout_seconds),
                                      Outputs::until_next_request);  // judged here
  record_.probe = probe.header.at("probe");
  hacks::merge(record_.findings, hacks::judge_probe(probe.header.at("probe"), reference_.trace(), probe_draw->tolerance,
                                                    request_.protocol.detection));
  if (!refresh || probe.header.at("probe").contains("refreshed_bad_output")) return;
  record_.checked_output_host_bytes += host_bytes(probe.header.at("outputs"));
  const protocol::DrawResult judged =
      judge(*refresh, reference_.compare(*refresh, probe.header.at("outputs"), probe, worker_.region_fd()),
            std::nullopt, request_.protocol);
  if (judged.status == "fail") {
    hacks::merge(
        record_.findings,
        {{"stale_output", "error",
          json::array({{{"source", "runtime"},
                        {"when", "probe: call on refreshed inputs"},
                        {"why", "same buffers refilled with a draw it passed fresh: the output did not follow"},
                        {"scaled_error", judged.error},
                        {"tolerance", judged.tolerance}}})}});
  }
}

void CandidateEvaluation::gather_watched() {
  if (!detect_) return;
  const Stage stage(record_, "findings");
  const Reply watched = worker_.request(commands::message(commands::Findings{}), Seconds(request_.timeout_seconds));
  hacks::merge(record_.findings, hacks::watched_findings(watched.header.at("findings")));
  if (auto observed = hacks::judge_observed_ops(watched.header.value("ops", json::object()))) {
    hacks::merge(record_.findings, {std::move(*observed)});
  }
}

}  // namespace kbv::eval
