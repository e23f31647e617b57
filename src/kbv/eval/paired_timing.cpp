#include "kbv/eval/paired_timing.h"

#include "kbv/measure/host_load.h"

namespace kbv::eval {
namespace {

// A side's batch in a round: shorter than a side timed alone (timing_run.cpp's 0.05 s), so that
// as many seconds of timing give more rounds to pair.
constexpr double kRoundBatchSeconds = 0.02;

}  // namespace

PairedTiming run_paired(TimedSide& baseline, TimedSide& candidate, std::mt19937_64& rng) {
  const measure::HostWindow host;
  baseline.start();
  candidate.start();
  PairedTiming paired;
  while (!(baseline.finished() && candidate.finished()) || static_cast<int>(paired.ratios.size()) < kMinRounds) {
    std::vector<double> baseline_batch, candidate_batch;
    if ((rng() & 1) == 0) {
      baseline_batch = baseline.batch(kRoundBatchSeconds);
      candidate_batch = candidate.batch(kRoundBatchSeconds);
    } else {
      candidate_batch = candidate.batch(kRoundBatchSeconds);
      baseline_batch = baseline.batch(kRoundBatchSeconds);
    }
    paired.ratios.push_back(measure::median(baseline_batch) / measure::median(candidate_batch));
  }
  paired.baseline = baseline.finish();
  paired.candidate = candidate.finish();
  const std::optional<double> baseline_cpu = baseline.worker_cpu_seconds(),
                              candidate_cpu = candidate.worker_cpu_seconds();
  const nlohmann::json load =
      host.load(baseline_cpu && candidate_cpu ? std::optional(*baseline_cpu + *candidate_cpu) : std::nullopt);
  paired.baseline.result.host = load;
  paired.candidate.result.host = load;
  return paired;
}

PairedSpeedup paired_speedup(const std::vector<double>& ratios) {
  return {measure::median(ratios), measure::median_ci(ratios)};
}

}  // namespace kbv::eval
