// The report's numbers (docs/report.md says what each one means): per run, per level and over
// all levels, per protocol and device, the verdicts, fast_p, the geometric-mean speedup of the
// passing candidates with its bootstrap CI, memory and findings; and, where a candidate has
// records under both the verified and the kernelbench protocol, the gap between the two.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kbv/measure/statistics.h"
#include "kbv/report/results.h"

namespace kbv::report {

// KernelBench's thresholds: fast_p is the share of all candidates that pass with speedup > p.
// PROTOCOL.md, "Verdicts", in its order: every group lists them all, zeros included.
inline constexpr std::array<const char*, 8> kVerdicts{"pass",          "incorrect", "hack",  "compile_error",
                                                      "runtime_error", "timeout",   "crash", "unverifiable"};
inline constexpr std::array<double, 6> kFastPThresholds{0.0, 0.5, 0.8, 1.0, 1.5, 2.0};
inline constexpr std::size_t kFast1 = 3;  // fast_1, the headline: faster than PyTorch at all
static_assert(kFastPThresholds[kFast1] == 1.0);
inline constexpr int kBootstrapResamples = 2000;
inline constexpr std::uint64_t kBootstrapSeed = 20240601;  // fixed: a report reproduces exactly
inline constexpr double kConfidence = 0.95;
inline constexpr const char* kAllLevels = "all";
inline constexpr const char* kNoLevel = "none";  // problems outside a level{L} folder

struct FindingCount {
  int error = 0, warning = 0;  // candidates with the finding at that severity
};

struct GeometricMean {
  double value = 0;
  measure::Interval ci{};  // 95% percentile bootstrap over the passing candidates
  int passing = 0;         // the passing candidates it is over (those with a positive speedup)
};

// The numbers of one set of outcomes (a group of the report).
struct Stats {
  int candidates = 0;
  int problems = 0;            // distinct problems among the candidates (several samples each is common)
  int problems_with_pass = 0;  // problems with at least one passing candidate
  std::map<std::string, int> verdicts;  // kVerdicts (zeros included) and any other name found
  int passed = 0;
  double pass_rate = 0;
  std::array<double, kFastPThresholds.size()> fast_p{};
  std::optional<GeometricMean> geomean;  // none: no passing candidate
  int peaks_measured = 0;                // passing candidates with both peaks measured
  int raises_peak = 0;                   // of those, candidates whose peak exceeds the baseline's
  std::optional<double> raises_peak_share, median_peak_ratio;
  std::map<std::string, FindingCount> findings;  // by finding id
  std::vector<double> pass_speedups;             // sorted: the fast_p curve
  std::vector<std::pair<double, double>> speedup_vs_peak;  // passing: (speedup, peak ratio)
};

Stats stats_of(const std::vector<const Outcome*>& outcomes);

// fast_p at any threshold p >= 0 (for the curve): passing with speedup > p, over all candidates.
// fast_0 is the pass rate, as KernelBench's fast_0 is its correctness rate.
double fast_p(const Stats& stats, double p);

struct Group {
  std::string level;  // kAllLevels, a level number, or kNoLevel
  std::string protocol, device;
  Stats stats;
};

// verified and kernelbench on the candidates that have a record under both (same run, level and
// device); each gap is kernelbench minus verified.
struct ProtocolGap {
  std::string level, device;
  Stats verified, kernelbench;
  int passes_only_kernelbench = 0;  // pass under kernelbench, not under verified
  int passes_only_verified = 0;
  double pass_rate_gap = 0, fast_1_gap = 0;
  std::optional<double> geomean_gap;  // none unless both sides have passing candidates
};

struct RunSummary {
  std::string name;
  int candidate_files = 0;
  std::vector<Unmatched> unmatched;
  std::vector<Failure> failures;
  std::vector<Group> groups;  // all levels first, then by level; verified before kernelbench
  std::vector<ProtocolGap> gaps;
};

std::vector<RunSummary> aggregate(const std::vector<RunResults>& runs);

}  // namespace kbv::report
