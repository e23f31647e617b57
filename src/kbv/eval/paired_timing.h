// Baseline and candidate timed in alternating rounds (PROTOCOL.md, "Timing"): both workers warm,
// then rounds in which each side times one batch of calls, the order of the two drawn for each
// round, until both sides' stopping rules are met and at least kMinRounds rounds ran. A round's
// ratio is the baseline batch's median over the candidate batch's: drift both sides share (the
// machine's load, the GPU's clocks) cancels in it, and drift of one side alone shows as rounds that
// disagree. The speedup is the median of the ratios, its interval the order-statistic interval of
// that median (measure/statistics.h).
#pragma once

#include <random>
#include <vector>

#include "kbv/eval/timing_run.h"
#include "kbv/measure/statistics.h"

namespace kbv::eval {

struct PairedTiming {
  TimingRun baseline, candidate;  // each side's own figures, as if timed alone
  std::vector<double> ratios;     // per round, in the rounds' order
};

constexpr int kMinRounds = 10;  // an interval of the median needs 6 or more (statistics.h); 10 give [x(2), x(9)]

// Starts both sides (baseline first), runs the rounds and finishes both; the host's load over the
// whole span, less both workers' CPU time, goes to both sides' results.
PairedTiming run_paired(TimedSide& baseline, TimedSide& candidate, std::mt19937_64& rng);

// The speedup the rounds give: the median of the ratios and its 95% interval.
struct PairedSpeedup {
  double speedup;
  measure::Interval ci;
};
PairedSpeedup paired_speedup(const std::vector<double>& ratios);

}  // namespace kbv::eval
