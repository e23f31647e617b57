// The report's numbers (docs/report.md says what each one means): per run, per level and over
// all levels, per protocol and device, the verdicts, fast_p, the geometric-mean speedup of the
// passing candidates with its bootstrap CI, memory and findings; and, where a candidate has
// records under both the verified and the kernelbench protocol, the gap between the two; and
// kbv audit's findings on the run's problems, whose uncured defects can inflate those numbers.
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
inline constexpr std::array<const char*, 9> kVerdicts{
    "pass", "incorrect", "hack", "no_kernel", "compile_error", "runtime_error", "timeout", "crash", "unverifiable"};
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
  int problems = 0;                     // distinct problems among the candidates (several samples each is common)
  int problems_with_pass = 0;           // problems with at least one passing candidate
  std::map<std::string, int> verdicts;  // kVerdicts (zeros included) and any other name found
  int passed = 0;
  double pass_rate = 0;
  std::array<double, kFastPThresholds.size()> fast_p{};
  std::optional<GeometricMean> geomean;  // none: no passing candidate
  int peaks_measured = 0;                // passing candidates with both peaks measured
  int raises_peak = 0;                   // of those, candidates whose peak exceeds the baseline's
  std::optional<double> raises_peak_share, median_peak_ratio;
  std::map<std::string, FindingCount> findings;            // by finding id
  std::vector<double> pass_speedups;                       // sorted: the fast_p curve
  std::vector<std::pair<double, double>> speedup_vs_peak;  // passing: (speedup, peak ratio)
  int on_uncured = 0;         // candidates on a problem with an uncured audit finding (on_uncured())
  int passed_on_uncured = 0;  // of those, passing: passes the defect may have made possible
};

// True when the audit of the outcome's problem on its device has a finding the verified protocol
// does not cure.
bool on_uncured(const Outcome& outcome);

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

// A problem of the run whose audit on `device` has findings or failed.
struct AuditedProblem {
  std::string level;    // as Group::level
  std::string problem;  // "{number}_{name}", as its file is named
  std::string device;
  Audit audit;
  int candidates = 0;  // the run's candidates with a record on the problem on `device`
};

// kbv audit on the problems of a run's records, counted per (problem, device), over every record
// (those left out by exclude_uncured included: the list says what was left out).
struct ProblemAudits {
  std::vector<AuditedProblem> flagged;  // by level, problem number, name, device
  int clean = 0;                        // audited without findings
  int not_audited = 0;                  // never audited on that device
  int uncured_candidates = 0;           // candidates with a record on a problem with an uncured finding
};

struct RunSummary {
  std::string name;
  int candidate_files = 0;
  std::vector<Unmatched> unmatched;
  std::vector<Failure> failures;
  std::vector<Group> groups;  // all levels first, then by level; verified before kernelbench
  std::vector<ProtocolGap> gaps;
  ProblemAudits audits;
  int excluded_candidates = 0;    // left out of groups and gaps by exclude_uncured
  std::vector<Session> sessions;  // the invocations that wrote its records, with their lanes' use
  std::vector<Outcome> outcomes;  // every record counted (not those exclude_uncured leaves out), one row each
};

// With `exclude_uncured`, the records for which on_uncured() holds are left out of every group and
// gap, so no number can be inflated by a defect the verified protocol does not cure.
std::vector<RunSummary> aggregate(const std::vector<RunResults>& runs, bool exclude_uncured);

}  // namespace kbv::report
