// The report's numbers on a real store whose records are listed in sample_store.cpp; every
// expected value is worked out by hand in the comments.
#include "kbv/report/aggregate.h"

#include <gtest/gtest.h>

#include <cmath>

#include "kbv/protocol/record.h"
#include "kbv/report/results.h"
#include "sample_store.h"

namespace kbv::report {
namespace {

const std::vector<RunResults>& sample_results() {
  static const std::vector<RunResults> results =
      read_results(fixtures::write_sample_store(fixtures::fresh_dir("aggregate")).string());
  return results;
}

const std::vector<RunSummary>& sample() {
  static const std::vector<RunSummary> runs = aggregate(sample_results(), /*exclude_uncured=*/false);
  return runs;
}

// The sample without c3 and c4, the candidates on Softmax, whose audit has an uncured finding.
const std::vector<RunSummary>& excluded() {
  static const std::vector<RunSummary> runs = aggregate(sample_results(), /*exclude_uncured=*/true);
  return runs;
}

const Group& group(const RunSummary& run, const std::string& level, const std::string& protocol) {
  for (const Group& g : run.groups) {
    if (g.level == level && g.protocol == protocol) return g;
  }
  throw std::logic_error("no group " + level + "/" + protocol);
}

// The report's verdict columns are the record's verdicts, all of them, in the enum's order.
TEST(Aggregate, TheVerdictColumnsAreTheRecordsVerdicts) {
  static_assert(kVerdicts.size() == static_cast<size_t>(protocol::Verdict::unverifiable) + 1);
  for (size_t i = 0; i < kVerdicts.size(); ++i) {
    EXPECT_EQ(kVerdicts[i], protocol::name(static_cast<protocol::Verdict>(i)));
  }
}

TEST(Aggregate, RunsInOrderWithTheirGroups) {
  ASSERT_EQ(sample().size(), 3u);
  EXPECT_EQ(sample()[0].name, "model-a");
  EXPECT_EQ(sample()[0].candidate_files, 6);
  // all levels first, then level 1 and 2; verified before kernelbench within a level.
  std::vector<std::string> order;
  for (const Group& g : sample()[0].groups) order.push_back(g.level + "/" + g.protocol + "/" + g.device);
  EXPECT_EQ(order, (std::vector<std::string>{"all/verified/cuda", "all/kernelbench/cuda", "1/verified/cuda",
                                             "1/kernelbench/cuda", "2/verified/cuda", "2/kernelbench/cuda"}));
}

TEST(Aggregate, VerdictsAndPassRate) {
  const Stats& s = group(sample()[0], "all", "verified").stats;
  // 6 candidates: pass x3, hack, incorrect, compile_error; 3 problems, 2 with a pass (ReLU, Softmax).
  EXPECT_EQ(s.candidates, 6);
  EXPECT_EQ(s.problems, 3);
  EXPECT_EQ(s.problems_with_pass, 2);
  EXPECT_EQ(s.passed, 3);
  EXPECT_EQ(s.verdicts.at("pass"), 3);
  EXPECT_EQ(s.verdicts.at("hack"), 1);
  EXPECT_EQ(s.verdicts.at("incorrect"), 1);
  EXPECT_EQ(s.verdicts.at("compile_error"), 1);
  EXPECT_EQ(s.verdicts.at("timeout"), 0);  // every verdict is listed
  EXPECT_EQ(s.verdicts.size(), kVerdicts.size());
  EXPECT_DOUBLE_EQ(s.pass_rate, 0.5);
}

TEST(Aggregate, FastPCountsOnlyPassesAboveTheThreshold) {
  const Stats& s = group(sample()[0], "all", "verified").stats;
  // Passing speedups 2.0, 0.5, 1.0 over 6 candidates; the hack's 10x never counts.
  // fast_0 = 3/6; > 0.5: {2, 1} = 2/6; > 0.8: 2/6; > 1: {2} = 1/6 (1.0 is not > 1); > 1.5: 1/6; > 2: 0.
  const std::array<double, 6> expected{3.0 / 6, 2.0 / 6, 2.0 / 6, 1.0 / 6, 1.0 / 6, 0.0};
  for (std::size_t i = 0; i < expected.size(); ++i)
    EXPECT_DOUBLE_EQ(s.fast_p[i], expected[i]) << "p = " << kFastPThresholds[i];
  EXPECT_DOUBLE_EQ(fast_p(s, 0.99), 2.0 / 6);  // the curve between thresholds
  EXPECT_DOUBLE_EQ(fast_p(s, 1.99), 1.0 / 6);
}

TEST(Aggregate, GeometricMeanOverPassingWithItsBootstrapInterval) {
  const Stats& s = group(sample()[0], "all", "verified").stats;
  // (2.0 * 0.5 * 1.0)^(1/3) = 1, over the 3 passing candidates.
  ASSERT_TRUE(s.geomean);
  EXPECT_NEAR(s.geomean->value, 1.0, 1e-12);
  EXPECT_EQ(s.geomean->passing, 3);
  // Log speedups {ln 2, -ln 2, 0}: a resample of three is all -ln 2 with probability 1/27, about
  // 74 of 2000 means, more than the 50 below the 2.5% quantile, so the lower bound is exactly
  // e^(-ln 2) = 0.5 and, by symmetry, the upper one 2.
  EXPECT_NEAR(s.geomean->ci.low, 0.5, 1e-12);
  EXPECT_NEAR(s.geomean->ci.high, 2.0, 1e-12);
}

TEST(Aggregate, MemoryOfPassingCandidates) {
  const Stats& s = group(sample()[0], "all", "verified").stats;
  // Passing peak ratios 1.0, 2.0, 0.5 (median 1.0); one of the three raises the peak.
  EXPECT_EQ(s.peaks_measured, 3);
  EXPECT_EQ(s.raises_peak, 1);
  EXPECT_NEAR(*s.raises_peak_share, 1.0 / 3, 1e-12);
  EXPECT_DOUBLE_EQ(*s.median_peak_ratio, 1.0);
  EXPECT_EQ(s.speedup_vs_peak.size(), 3u);
}

TEST(Aggregate, FindingsHistogramCountsCandidatesBySeverity) {
  const Stats& s = group(sample()[0], "all", "verified").stats;
  // library_fallback: warning on c2 and c4; timing_anomaly: error on c4.
  ASSERT_EQ(s.findings.size(), 2u);
  EXPECT_EQ(s.findings.at("library_fallback").warning, 2);
  EXPECT_EQ(s.findings.at("library_fallback").error, 0);
  EXPECT_EQ(s.findings.at("timing_anomaly").error, 1);
  EXPECT_EQ(s.findings.at("timing_anomaly").warning, 0);
}

TEST(Aggregate, PerLevel) {
  const Stats& level1 = group(sample()[0], "1", "verified").stats;
  // Level 1: c1..c4, passes 2.0, 0.5, 1.0: pass rate 3/4, fast_1 = 1/4.
  EXPECT_EQ(level1.candidates, 4);
  EXPECT_DOUBLE_EQ(level1.pass_rate, 0.75);
  EXPECT_DOUBLE_EQ(level1.fast_p[kFast1], 0.25);
  const Stats& level2 = group(sample()[0], "2", "verified").stats;
  // Level 2: incorrect and compile_error: nothing passes, so no mean and no memory figures.
  EXPECT_EQ(level2.candidates, 2);
  EXPECT_EQ(level2.passed, 0);
  EXPECT_DOUBLE_EQ(level2.fast_p[0], 0.0);
  EXPECT_FALSE(level2.geomean);
  EXPECT_FALSE(level2.raises_peak_share);
  EXPECT_FALSE(level2.median_peak_ratio);
}

TEST(Aggregate, ProtocolGapOnCandidatesWithBothRecords) {
  const RunSummary& a = sample()[0];
  // Gaps for all levels, level 1 and level 2 (c5 has both records; c6 only verified).
  ASSERT_EQ(a.gaps.size(), 3u);
  const ProtocolGap& g = a.gaps[0];
  EXPECT_EQ(g.level, "all");
  EXPECT_EQ(g.device, "cuda");
  // Shared: c1..c5. verified passes 3 of 5 = 0.6; kernelbench passes all 5: gap +0.4.
  EXPECT_EQ(g.verified.candidates, 5);
  EXPECT_EQ(g.kernelbench.candidates, 5);
  EXPECT_NEAR(g.pass_rate_gap, 0.4, 1e-12);
  // fast_1: verified {2.0} = 1/5; kernelbench {2.2, 1.1, 10, 1.2} = 4/5: gap +0.6.
  EXPECT_NEAR(g.fast_1_gap, 0.6, 1e-12);
  // geomeans: verified (2 * 0.5 * 1)^(1/3) = 1; kernelbench (2.2 * 0.6 * 1.1 * 10 * 1.2)^(1/5)
  // = 17.424^(1/5) = 1.7710...: gap 0.7710...
  ASSERT_TRUE(g.geomean_gap);
  EXPECT_NEAR(*g.geomean_gap, std::pow(17.424, 0.2) - 1.0, 1e-9);
  EXPECT_NEAR(*g.geomean_gap, 0.7710, 1e-4);
  // c4 (hack) and c5 (incorrect) pass only under kernelbench.
  EXPECT_EQ(g.passes_only_kernelbench, 2);
  EXPECT_EQ(g.passes_only_verified, 0);
  // Level 2: c5 alone; verified 0 passes, so no geomean gap.
  EXPECT_EQ(a.gaps[2].level, "2");
  EXPECT_EQ(a.gaps[2].verified.candidates, 1);
  EXPECT_FALSE(a.gaps[2].geomean_gap);
}

TEST(Aggregate, ARunWithoutRecordsAndAProblemOutsideLevels) {
  const RunSummary& b = sample()[1];
  EXPECT_EQ(b.candidate_files, 1);
  EXPECT_TRUE(b.groups.empty());
  EXPECT_TRUE(b.gaps.empty());
  ASSERT_EQ(b.unmatched.size(), 1u);
  EXPECT_EQ(b.unmatched[0].reason, "no problem matches its name");
  // Its candidate failed twice without a record: listed once, with the latest message. model-a's
  // failure was followed by a record, so it is gone.
  ASSERT_EQ(b.failures.size(), 1u);
  EXPECT_EQ(b.failures[0].candidate, "/s/b/level_1_problem_1_sample_0_kernel.py");
  EXPECT_EQ(b.failures[0].message, "reference worker died");
  EXPECT_TRUE(sample()[0].failures.empty());

  const RunSummary& c = sample()[2];
  ASSERT_EQ(c.groups.size(), 2u);
  EXPECT_EQ(c.groups[0].level, kAllLevels);
  EXPECT_EQ(c.groups[1].level, kNoLevel);
  EXPECT_EQ(c.groups[1].stats.verdicts.at("timeout"), 1);
  EXPECT_DOUBLE_EQ(c.groups[1].stats.pass_rate, 0.0);
}

TEST(Aggregate, ProblemAuditOfEachRunOnItsRecordsDevice) {
  const ProblemAudits& a = sample()[0].audits;
  // ReLU (cured finding) and Softmax (cured and uncured), listed by number; the audit of ReLU's
  // current content applies, not the later one of its older content. Conv: the latest of its
  // older contents' audits, clean.
  ASSERT_EQ(a.flagged.size(), 2u);
  EXPECT_EQ(a.flagged[0].level, "1");
  EXPECT_EQ(a.flagged[0].problem, "1_ReLU");
  EXPECT_EQ(a.flagged[0].device, "cuda");
  ASSERT_EQ(a.flagged[0].audit.findings.size(), 1u);
  EXPECT_EQ(a.flagged[0].audit.findings[0].id, "identity_under_inputs");
  EXPECT_TRUE(a.flagged[0].audit.findings[0].cured);
  EXPECT_EQ(a.flagged[0].candidates, 2);  // c1, c2
  EXPECT_EQ(a.flagged[1].problem, "2_Softmax");
  ASSERT_EQ(a.flagged[1].audit.findings.size(), 2u);
  EXPECT_EQ(a.flagged[1].audit.findings[0].id, "near_zero_output");
  EXPECT_TRUE(a.flagged[1].audit.findings[0].cured);
  EXPECT_EQ(a.flagged[1].audit.findings[1].id, "constant_output");
  EXPECT_FALSE(a.flagged[1].audit.findings[1].cured);
  EXPECT_EQ(a.flagged[1].candidates, 2);  // c3, c4
  EXPECT_EQ(a.clean, 1);
  EXPECT_EQ(a.not_audited, 0);
  EXPECT_EQ(a.uncured_candidates, 2);
  EXPECT_EQ(sample()[0].excluded_candidates, 0);
  // model-b has no record, so no problem to count; model-c's Thing was audited on cpu only.
  EXPECT_TRUE(sample()[1].audits.flagged.empty());
  EXPECT_EQ(sample()[1].audits.clean + sample()[1].audits.not_audited, 0);
  EXPECT_TRUE(sample()[2].audits.flagged.empty());
  EXPECT_EQ(sample()[2].audits.not_audited, 1);
  EXPECT_EQ(sample()[2].audits.uncured_candidates, 0);
}

TEST(Aggregate, CandidatesOnUncuredProblemsPerGroup) {
  // verified: c3 (pass) and c4 (hack) are on Softmax; kernelbench passes both.
  EXPECT_EQ(group(sample()[0], "all", "verified").stats.on_uncured, 2);
  EXPECT_EQ(group(sample()[0], "all", "verified").stats.passed_on_uncured, 1);
  EXPECT_EQ(group(sample()[0], "all", "kernelbench").stats.on_uncured, 2);
  EXPECT_EQ(group(sample()[0], "all", "kernelbench").stats.passed_on_uncured, 2);
  EXPECT_EQ(group(sample()[0], "1", "verified").stats.on_uncured, 2);
  EXPECT_EQ(group(sample()[0], "2", "verified").stats.on_uncured, 0);
}

TEST(Aggregate, ExcludingUncuredLeavesOutTheirCandidatesEverywhere) {
  const RunSummary& a = excluded()[0];
  EXPECT_EQ(a.excluded_candidates, 2);
  // The audit list still names what was left out.
  EXPECT_EQ(a.audits.flagged.size(), 2u);
  EXPECT_EQ(a.audits.uncured_candidates, 2);
  // verified without c3, c4: c1 pass 2.0, c2 pass 0.5, c5 incorrect, c6 compile_error.
  const Stats& v = group(a, "all", "verified").stats;
  EXPECT_EQ(v.candidates, 4);
  EXPECT_EQ(v.problems, 2);  // ReLU, Conv
  EXPECT_EQ(v.problems_with_pass, 1);
  EXPECT_EQ(v.passed, 2);
  EXPECT_EQ(v.verdicts.at("hack"), 0);
  EXPECT_DOUBLE_EQ(v.pass_rate, 0.5);
  EXPECT_EQ(v.on_uncured, 0);
  // fast_0 = 2/4; > 0.5 .. > 1.5: {2.0} = 1/4 (0.5 is not > 0.5); > 2: 0.
  const std::array<double, 6> fast{0.5, 0.25, 0.25, 0.25, 0.25, 0.0};
  for (std::size_t i = 0; i < fast.size(); ++i) EXPECT_DOUBLE_EQ(v.fast_p[i], fast[i]) << "p = " << kFastPThresholds[i];
  // (2.0 * 0.5)^(1/2) = 1 over 2; a resample of two is all -ln 2 with probability 1/4, so the
  // interval is again exactly 0.5 - 2.
  ASSERT_TRUE(v.geomean);
  EXPECT_NEAR(v.geomean->value, 1.0, 1e-12);
  EXPECT_EQ(v.geomean->passing, 2);
  EXPECT_NEAR(v.geomean->ci.low, 0.5, 1e-12);
  EXPECT_NEAR(v.geomean->ci.high, 2.0, 1e-12);
  // Peaks 1.0 and 2.0 (median 1.5); c2 raises it.
  EXPECT_EQ(v.peaks_measured, 2);
  EXPECT_EQ(v.raises_peak, 1);
  EXPECT_DOUBLE_EQ(*v.raises_peak_share, 0.5);
  EXPECT_DOUBLE_EQ(*v.median_peak_ratio, 1.5);
  // c4's timing_anomaly and library_fallback are gone; c2's library_fallback stays.
  ASSERT_EQ(v.findings.size(), 1u);
  EXPECT_EQ(v.findings.at("library_fallback").warning, 1);
  // kernelbench: c1 2.2, c2 0.6, c5 1.2, all passing.
  const Stats& k = group(a, "all", "kernelbench").stats;
  EXPECT_EQ(k.candidates, 3);
  EXPECT_DOUBLE_EQ(k.pass_rate, 1.0);
  EXPECT_DOUBLE_EQ(k.fast_p[kFast1], 2.0 / 3);
  ASSERT_TRUE(k.geomean);
  EXPECT_NEAR(k.geomean->value, std::cbrt(2.2 * 0.6 * 1.2), 1e-12);
  // Level 1 keeps ReLU only: c1, c2.
  EXPECT_EQ(group(a, "1", "verified").stats.candidates, 2);
  EXPECT_EQ(group(a, "1", "kernelbench").stats.candidates, 2);
  // The gap on c1, c2, c5: pass rate 2/3 vs 1, fast_1 1/3 vs 2/3; only c5 passes only under
  // kernelbench (c4, the hack, is left out).
  ASSERT_EQ(a.gaps.size(), 3u);
  const ProtocolGap& g = a.gaps[0];
  EXPECT_EQ(g.verified.candidates, 3);
  EXPECT_NEAR(g.pass_rate_gap, 1.0 / 3, 1e-12);
  EXPECT_NEAR(g.fast_1_gap, 1.0 / 3, 1e-12);
  ASSERT_TRUE(g.geomean_gap);
  EXPECT_NEAR(*g.geomean_gap, std::cbrt(2.2 * 0.6 * 1.2) - 1.0, 1e-12);
  EXPECT_EQ(g.passes_only_kernelbench, 1);
  EXPECT_EQ(g.passes_only_verified, 0);
  // Runs without uncured candidates are unchanged.
  EXPECT_EQ(excluded()[2].excluded_candidates, 0);
  EXPECT_EQ(excluded()[2].groups[0].stats.candidates, 1);
}

}  // namespace
}  // namespace kbv::report
