#include "kbv/report/aggregate.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <set>
#include <tuple>

namespace kbv::report {
namespace {

// Groups are never empty, so a zero total only comes from a caller's empty set: share 0 then.
double share(int count, int total) { return total == 0 ? 0.0 : static_cast<double>(count) / total; }

std::string level_label(const std::optional<int>& level) { return level ? std::to_string(*level) : kNoLevel; }

// The two protocols the report compares come first, in the order PROTOCOL.md presents them.
int protocol_rank(const std::string& protocol) {
  if (protocol == "verified") return 0;
  if (protocol == "kernelbench") return 1;
  return 2;
}

// "all", then the levels in numeric order, then problems outside any level.
std::vector<std::string> level_labels(const std::vector<Outcome>& outcomes) {
  std::set<int> levels;
  bool unleveled = false;
  for (const Outcome& o : outcomes) {
    if (o.level) {
      levels.insert(*o.level);
    } else {
      unleveled = true;
    }
  }
  std::vector<std::string> labels{kAllLevels};
  for (int level : levels) labels.push_back(std::to_string(level));
  if (unleveled) labels.push_back(kNoLevel);
  return labels;
}

std::vector<const Outcome*> at_level(const std::vector<Outcome>& outcomes, const std::string& label) {
  std::vector<const Outcome*> selected;
  for (const Outcome& o : outcomes) {
    if (label == kAllLevels || level_label(o.level) == label) selected.push_back(&o);
  }
  return selected;
}

std::vector<Group> groups_at(const std::vector<const Outcome*>& outcomes, const std::string& level) {
  std::map<std::tuple<int, std::string, std::string>, std::vector<const Outcome*>> by_key;
  for (const Outcome* o : outcomes) by_key[{protocol_rank(o->protocol), o->protocol, o->device}].push_back(o);
  std::vector<Group> groups;
  for (const auto& [key, members] : by_key)
    groups.push_back({level, std::get<1>(key), std::get<2>(key), stats_of(members)});
  return groups;
}

// The candidates with both a verified and a kernelbench record on `device`, compared side by side.
std::optional<ProtocolGap> gap_at(const std::vector<const Outcome*>& outcomes, const std::string& level,
                                  const std::string& device) {
  std::map<std::int64_t, const Outcome*> verified, kernelbench;
  for (const Outcome* o : outcomes) {
    if (o->device != device) continue;
    if (o->protocol == "verified") verified[o->candidate] = o;
    if (o->protocol == "kernelbench") kernelbench[o->candidate] = o;
  }
  ProtocolGap gap;
  gap.level = level;
  gap.device = device;
  std::vector<const Outcome*> verified_side, kernelbench_side;
  for (const auto& [candidate, v] : verified) {
    const auto k = kernelbench.find(candidate);
    if (k == kernelbench.end()) continue;
    verified_side.push_back(v);
    kernelbench_side.push_back(k->second);
    const bool v_pass = v->verdict == "pass", k_pass = k->second->verdict == "pass";
    gap.passes_only_kernelbench += k_pass && !v_pass;
    gap.passes_only_verified += v_pass && !k_pass;
  }
  if (verified_side.empty()) return std::nullopt;
  gap.verified = stats_of(verified_side);
  gap.kernelbench = stats_of(kernelbench_side);
  gap.pass_rate_gap = gap.kernelbench.pass_rate - gap.verified.pass_rate;
  gap.fast_1_gap = gap.kernelbench.fast_p[kFast1] - gap.verified.fast_p[kFast1];
  if (gap.verified.geomean && gap.kernelbench.geomean)
    gap.geomean_gap = gap.kernelbench.geomean->value - gap.verified.geomean->value;
  return gap;
}

// Problems in the order KernelBench numbers them: by level (none last), then number.
auto problem_order(const Outcome& o) {
  return std::tuple(o.level.value_or(INT_MAX), o.problem_number.value_or(INT_MAX), o.problem_name, o.device);
}

ProblemAudits audits_of(const std::vector<Outcome>& outcomes) {
  // Per (problem, device): one of its outcomes (they share the audit) and its candidates.
  std::map<std::pair<std::int64_t, std::string>, std::pair<const Outcome*, std::set<std::int64_t>>> problems;
  std::set<std::int64_t> uncured;
  for (const Outcome& o : outcomes) {
    auto& [first, candidates] = problems[{o.problem, o.device}];
    if (first == nullptr) first = &o;
    candidates.insert(o.candidate);
    if (on_uncured(o)) uncured.insert(o.candidate);
  }
  std::vector<std::pair<const Outcome*, int>> flagged;
  ProblemAudits audits;
  for (const auto& [key, problem] : problems) {
    const auto& [o, candidates] = problem;
    if (!o->audit) {
      ++audits.not_audited;
    } else if (o->audit->findings.empty() && o->audit->error.empty()) {
      ++audits.clean;
    } else {
      flagged.emplace_back(o, static_cast<int>(candidates.size()));
    }
  }
  std::sort(flagged.begin(), flagged.end(),
            [](const auto& a, const auto& b) { return problem_order(*a.first) < problem_order(*b.first); });
  for (const auto& [o, candidates] : flagged) {
    audits.flagged.push_back({level_label(o->level), problem_label(*o), o->device, *o->audit, candidates});
  }
  audits.uncured_candidates = static_cast<int>(uncured.size());
  return audits;
}

}  // namespace

bool on_uncured(const Outcome& outcome) { return outcome.audit && has_uncured(*outcome.audit); }

double fast_p(const Stats& stats, double p) {
  if (p == 0.0) return stats.pass_rate;
  const auto above =
      stats.pass_speedups.end() - std::upper_bound(stats.pass_speedups.begin(), stats.pass_speedups.end(), p);
  return share(static_cast<int>(above), stats.candidates);
}

Stats stats_of(const std::vector<const Outcome*>& outcomes) {
  Stats s;
  for (const char* verdict : kVerdicts) s.verdicts[verdict] = 0;
  std::set<std::int64_t> problems, solved;
  std::vector<double> log_speedups, peak_ratios;
  for (const Outcome* o : outcomes) {
    ++s.candidates;
    problems.insert(o->problem);
    ++s.verdicts[o->verdict];
    s.on_uncured += on_uncured(*o);
    // A histogram of candidates: a finding reported twice for one candidate counts once.
    std::set<std::pair<std::string, std::string>> seen;
    for (const Finding& f : o->findings) {
      if (!seen.insert({f.id, f.severity}).second) continue;
      FindingCount& count = s.findings[f.id];
      ++(f.severity == "error" ? count.error : count.warning);
    }
    if (o->verdict != "pass") continue;
    ++s.passed;
    s.passed_on_uncured += on_uncured(*o);
    solved.insert(o->problem);
    if (o->speedup && *o->speedup > 0) {  // false for NaN too
      s.pass_speedups.push_back(*o->speedup);
      log_speedups.push_back(std::log(*o->speedup));
    }
    if (o->raises_peak) {
      ++s.peaks_measured;
      s.raises_peak += *o->raises_peak;
    }
    if (o->peak_ratio) {
      peak_ratios.push_back(*o->peak_ratio);
      if (o->speedup) s.speedup_vs_peak.emplace_back(*o->speedup, *o->peak_ratio);
    }
  }
  s.problems = static_cast<int>(problems.size());
  s.problems_with_pass = static_cast<int>(solved.size());
  s.pass_rate = share(s.passed, s.candidates);
  std::sort(s.pass_speedups.begin(), s.pass_speedups.end());
  for (std::size_t i = 0; i < kFastPThresholds.size(); ++i) s.fast_p[i] = fast_p(s, kFastPThresholds[i]);
  if (!log_speedups.empty()) {
    // The geometric mean is exp(mean log speedup); exp is monotone, so the percentile interval of
    // the mean log maps to the geometric mean's.
    const measure::Interval log_ci =
        measure::bootstrap_mean(log_speedups, kBootstrapResamples, kBootstrapSeed, kConfidence);
    s.geomean = GeometricMean{std::exp(measure::mean(log_speedups)),
                              {std::exp(log_ci.low), std::exp(log_ci.high)},
                              static_cast<int>(log_speedups.size())};
  }
  if (s.peaks_measured > 0) s.raises_peak_share = share(s.raises_peak, s.peaks_measured);
  if (!peak_ratios.empty()) s.median_peak_ratio = measure::median(peak_ratios);
  return s;
}

std::vector<RunSummary> aggregate(const std::vector<RunResults>& runs, bool exclude_uncured) {
  std::vector<RunSummary> summaries;
  for (const RunResults& run : runs) {
    RunSummary summary{
        run.name, run.candidate_files, run.unmatched, run.failures, {}, {}, audits_of(run.outcomes), 0, run.sessions,
        {}};
    std::vector<Outcome> counted;
    for (const Outcome& o : run.outcomes) {
      if (!(exclude_uncured && on_uncured(o))) counted.push_back(o);
    }
    if (exclude_uncured) summary.excluded_candidates = summary.audits.uncured_candidates;
    std::set<std::string> devices;
    for (const Outcome& o : counted) devices.insert(o.device);
    for (const std::string& level : level_labels(counted)) {
      const std::vector<const Outcome*> outcomes = at_level(counted, level);
      for (Group& group : groups_at(outcomes, level)) summary.groups.push_back(std::move(group));
      for (const std::string& device : devices) {
        if (auto gap = gap_at(outcomes, level, device)) summary.gaps.push_back(std::move(*gap));
      }
    }
    summary.outcomes = std::move(counted);
    summaries.push_back(std::move(summary));
  }
  return summaries;
}

}  // namespace kbv::report
