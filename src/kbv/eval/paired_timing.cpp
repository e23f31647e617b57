#include "kbv/eval/paired_timing.h"

#include <chrono>

#include "kbv/measure/host_load.h"

namespace kbv::eval {
namespace {

// A side's batch in a round: shorter than a side timed alone (timing_run.cpp's 0.05 s), so that
// as many seconds of timing give more rounds to pair.
constexpr double kRoundBatchSeconds = 0.02;

}  // namespace

PairedTiming run_paired(TimedSide& baseline, TimedSide& candidate, std::mt19937_64& rng) {
  const std::optional<measure::CpuCounters> host_before = measure::read_cpu_counters();
  const auto began = std::chrono::steady_clock::now();
  baseline.start();
  candidate.start();
  PairedTiming paired;
  while (!(baseline.finished() && candidate.finished()) || static_cast<int>(paired.ratios.size()) < kMinRounds) {
    const bool baseline_first = (rng() & 1) == 0;
    std::vector<double> first = (baseline_first ? baseline : candidate).batch(kRoundBatchSeconds);
    std::vector<double> second = (baseline_first ? candidate : baseline).batch(kRoundBatchSeconds);
    const double baseline_median = measure::median(baseline_first ? first : second);
    const double candidate_median = measure::median(baseline_first ? second : first);
    paired.ratios.push_back(baseline_median / candidate_median);
  }
  paired.baseline = baseline.finish();
  paired.candidate = candidate.finish();
  const std::optional<measure::CpuCounters> host_after = measure::read_cpu_counters();
  const std::optional<double> baseline_cpu = baseline.worker_cpu_seconds(),
                              candidate_cpu = candidate.worker_cpu_seconds();
  if (host_before && host_after && baseline_cpu && candidate_cpu) {
    const nlohmann::json host = measure::host_load(
        *host_before, *host_after, std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count(),
        *baseline_cpu + *candidate_cpu);
    paired.baseline.result.host = host;
    paired.candidate.result.host = host;
  }
  return paired;
}

PairedSpeedup paired_speedup(const std::vector<double>& ratios) {
  return {measure::median(ratios), measure::median_ci(ratios)};
}

}  // namespace kbv::eval
