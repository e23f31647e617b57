// Whether a speedup can be trusted as a figure of the kernels and not of the machine (PROTOCOL.md,
// "Stability"): each side's timing is judged on what was measured beside it, and the speedup is
// unreliable when either side's is. Pure: the record's facts in, the judgement out.
#pragma once

#include <span>

#include <nlohmann/json.hpp>

namespace kbv::measure {

// What the judgement reads of one side's timing.
struct SideTiming {
  std::span<const double> samples;         // seconds
  std::span<const double> launch_samples;  // the host's seconds from the start event to the call's return
  nlohmann::json host;                     // host_load.h's, or null where it could not be read
  double launch_cover_seconds = 0;         // the cover its calls had (> 0: a host path beyond it is host-bound)
};

struct StabilityLimits {
  double other_cores = 0.5;     // other processes' work beside the timing, in cores, beyond the counters' resolution
  double steal_share = 0.05;    // of the cores' time, given to another guest
  double scatter_share = 0.25;  // samples beyond twice the side's median or below half of it
  double drift_share = 0.25;    // the median of the last third of a side's samples against its first third's
  double round_spread_share = 0.25;  // paired rounds: their ratios' 95% interval, half its width over the median
};

// {"reliable": bool, "reasons": [{"id", "side", the measured value, "limit", "why"}, ...]}; ids:
// host_contention, steal, scattered_samples, drift, host_bound, and with paired rounds' ratios
// (eval/paired_timing.h; none: the sides were timed apart) rounds_disagree.
nlohmann::json judge_stability(const SideTiming& baseline, const SideTiming& candidate, const StabilityLimits& limits,
                               std::span<const double> round_ratios = {});

}  // namespace kbv::measure
