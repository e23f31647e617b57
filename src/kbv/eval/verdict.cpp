#include "kbv/eval/verdict.h"

#include "kbv/eval/paired_timing.h"
#include "kbv/hacks/judge.h"
#include "kbv/hacks/untimed_work.h"
#include "kbv/measure/stability.h"
#include "kbv/measure/statistics.h"

namespace kbv::eval {
namespace {

using nlohmann::json;
using protocol::Record;
using protocol::Verdict;

constexpr int kBootstrapResamples = 2000;

}  // namespace

// A failure the candidate's worker answered with. Its process runs the candidate's code, so what
// fails there in kbv's own steps or the problem's code (internal, problem_error, no_device) may be
// the candidate's doing: it is not told apart from the candidate's own raise.
Verdict verdict_of(ipc::FailureKind kind) {
  switch (kind) {
    case ipc::FailureKind::compile_error: return Verdict::compile_error;
    case ipc::FailureKind::crash: return Verdict::crash;
    case ipc::FailureKind::incorrect: return Verdict::incorrect;
    case ipc::FailureKind::runtime_error:
    case ipc::FailureKind::problem_error:
    case ipc::FailureKind::reference_error:
    case ipc::FailureKind::no_device:
    case ipc::FailureKind::internal: return Verdict::runtime_error;
  }
  return Verdict::runtime_error;
}

Verdict verdict_of_loss(const std::string& kind) {
  if (kind == "timeout") return Verdict::timeout;
  if (kind == "forged_reply") return Verdict::hack;
  return Verdict::crash;
}

// The speedup's interval is taken over rounds where the calls were uneven and that is lower; whether
// it can be trusted as a figure of the kernels is measure/stability.h's.
void judge_measured(Record& record, const protocol::Protocol& protocol, std::optional<double> copy_seconds,
                    std::int64_t output_bytes) {
  if (copy_seconds && record.candidate_timing) {
    if (auto anomaly =
            hacks::judge_floor(record.candidate_timing->seconds, *copy_seconds, output_bytes, protocol.detection)) {
      hacks::merge(record.findings, {*anomaly});
    }
  }
  if (protocol.detection.enabled && record.candidate_timing) {
    if (auto untimed = hacks::judge_untimed_work(record.candidate_timing->cpu,
                                                 record.baseline ? record.baseline->cpu : json(), protocol.detection)) {
      hacks::merge(record.findings, {std::move(*untimed)});
    }
    if (auto untimed = hacks::judge_untimed_device_work(
            record.candidate_timing->gpu, record.baseline ? record.baseline->gpu : json(), protocol.detection)) {
      hacks::merge(record.findings, {std::move(*untimed)});
    }
  }
  if (protocol.detection.enabled) hacks::settle(record);

  if (record.baseline && record.candidate_timing && record.candidate_timing->seconds > 0) {
    record.speedup = record.baseline->seconds / record.candidate_timing->seconds;
    if (!record.round_ratios.empty()) {
      const PairedSpeedup paired = paired_speedup(record.round_ratios);
      record.speedup = paired.speedup;
      record.speedup_ci_low = paired.ci.low;
      record.speedup_ci_high = paired.ci.high;
    } else if (protocol.timing.use_median) {
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
    // The cover each side's calls had (its clock says; on the CPU there is no launch to cover: a
    // call's host path is the call).
    const auto cover = [&](const protocol::TimingResult& side) {
      return record.device == "cuda" ? side.clock.value("launch_cover_seconds", t.launch_cover_seconds) : 0.0;
    };
    const measure::SideTiming baseline{record.baseline->samples, record.baseline->launch_samples, record.baseline->host,
                                       cover(*record.baseline)};
    const measure::SideTiming candidate{record.candidate_timing->samples, record.candidate_timing->launch_samples,
                                        record.candidate_timing->host, cover(*record.candidate_timing)};
    record.stability =
        measure::judge_stability(baseline, candidate,
                                 {t.unreliable_other_cores, t.unreliable_steal_share, t.unreliable_scatter_share,
                                  t.unreliable_drift_share, t.unreliable_round_spread_share},
                                 record.round_ratios);
  }
}

}  // namespace kbv::eval
