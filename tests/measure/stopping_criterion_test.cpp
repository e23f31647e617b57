// Stopping rules fed synthetic times; no GPU. Times are powers of two (or sums of them) where a
// test depends on the running total, so the float sums are exact and the stopping sample is the
// one computed by hand.
#include "kbv/measure/stopping_criterion.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace kbv::measure {
namespace {

// Feeds next(i) for i = 0, 1, ... until the criterion finishes (or `limit` samples, to keep a
// broken rule from looping forever) and returns how many samples it took.
int run_until_finished(StoppingCriterion& criterion, const std::function<double(int)>& next, int limit = 100000) {
  int i = 0;
  while (!criterion.is_finished() && i < limit) criterion.add_measurement(next(i++));
  return i;
}

// Alternates between two times: the median's CI spans both, so precision is never reached.
// 1/1024 s and 1/512 s: CI [1/1024, 1/512] around median 1.5/1024 -> half-width 1/3 of the median.
double alternating(int i) { return i % 2 == 0 ? 1.0 / 1024 : 1.0 / 512; }

TEST(MedianPrecision, ConstantSamplesStopAtMinSamples) {
  // 1/16 s each: min_seconds 0.2 needs ceil(0.2 / 0.0625) = ceil(3.2) = 4 samples, fewer than
  // min_samples = 10, so it stops at max(10, 4) = 10 with a zero-width CI.
  MedianPrecisionCriterion c;
  EXPECT_EQ(run_until_finished(c, [](int) { return 1.0 / 16; }), 10);
  EXPECT_TRUE(c.converged());
  EXPECT_EQ(c.samples().size(), 10u);
}

TEST(MedianPrecision, ConstantSamplesStopAtMinSeconds) {
  // 1/64 s each: ceil(0.2 / 0.015625) = ceil(12.8) = 13 samples (12 give 0.1875 s, 13 give
  // 0.203125 s), more than min_samples = 10, so it stops at max(10, 13) = 13.
  MedianPrecisionCriterion c;
  for (int i = 0; i < 12; ++i) c.add_measurement(1.0 / 64);
  EXPECT_FALSE(c.is_finished());
  c.add_measurement(1.0 / 64);
  EXPECT_TRUE(c.is_finished());
  EXPECT_TRUE(c.converged());
}

TEST(MedianPrecision, SmallNoiseConvergesAtTheMinimum) {
  // 0.1 s * (1 + 0.002*k), k in -2..2: every sample within 0.4% of 0.1 s, so any CI of the
  // median has half-width <= 0.4% < 1%; 10 samples already hold ~1 s >= 0.2 s -> stops at 10.
  MedianPrecisionCriterion c;
  EXPECT_EQ(run_until_finished(c, [](int i) { return 0.1 * (1.0 + 0.002 * (i % 5 - 2)); }), 10);
  EXPECT_TRUE(c.converged());
}

TEST(MedianPrecision, NoisySamplesKeepGoingThenCapAtMaxSamples) {
  // Alternating 1/1024 and 1/512 s: 150 samples hold 75 * 3/1024 = 0.22 s (past min_seconds)
  // and 10 s is far off, yet the relative half-width (1/3) never reaches 1%: it stops only at
  // max_samples = 200, not converged.
  MedianPrecisionCriterion c;
  for (int i = 0; i < 150; ++i) c.add_measurement(alternating(i));
  EXPECT_FALSE(c.is_finished());
  EXPECT_EQ(run_until_finished(c, [](int i) { return alternating(150 + i); }), 50);
  EXPECT_EQ(c.samples().size(), 200u);
  EXPECT_FALSE(c.converged());
  EXPECT_EQ(c.describe().at("stop_reason"), "max_samples");
}

TEST(MedianPrecision, CapByMeasuredSeconds) {
  // Alternating 1/4 s and 1/2 s: each pair adds 3/4 s. After 26 samples (13 pairs) the total is
  // 9.75 s; the 27th sample (index 26, even -> 1/4 s) brings it to exactly 10 s = max_seconds.
  MedianPrecisionCriterion c;
  EXPECT_EQ(run_until_finished(c, [](int i) { return i % 2 == 0 ? 0.25 : 0.5; }), 27);
  EXPECT_FALSE(c.converged());
  const nlohmann::json d = c.describe();
  EXPECT_EQ(d.at("stop_reason"), "max_seconds");
  EXPECT_EQ(d.at("measured_seconds").get<double>(), 10.0);
}

TEST(MedianPrecision, CapBelowMinimumsWins) {
  // max_samples 5 < min_samples 10: the cap ends it at 5 even though the minimums are unmet.
  MedianPrecisionCriterion c({.min_samples = 10, .max_samples = 5});
  EXPECT_EQ(run_until_finished(c, [](int) { return 1.0; }), 5);
  EXPECT_FALSE(c.converged());
}

TEST(MedianPrecision, PrecisionAtTheCapCountsAsConverged) {
  // Constant 1 s with min_samples = max_samples = 10: both hold at sample 10, precision first.
  MedianPrecisionCriterion c({.min_samples = 10, .max_samples = 10});
  EXPECT_EQ(run_until_finished(c, [](int) { return 1.0; }), 10);
  EXPECT_TRUE(c.converged());
}

TEST(MedianPrecision, DescribeCarriesSettingsAndState) {
  MedianPrecisionCriterion c;
  c.add_measurement(1.0 / 16);
  const nlohmann::json d = c.describe();
  EXPECT_EQ(d.at("criterion"), "median_precision");
  EXPECT_EQ(d.at("min_samples"), 10);
  EXPECT_EQ(d.at("min_seconds"), 0.2);
  EXPECT_EQ(d.at("max_relative_half_width"), 0.01);
  EXPECT_EQ(d.at("max_samples"), 200);
  EXPECT_EQ(d.at("max_seconds"), 10.0);
  EXPECT_EQ(d.at("confidence"), 0.95);
  EXPECT_EQ(d.at("samples"), 1);
  EXPECT_EQ(d.at("finished"), false);
  EXPECT_EQ(d.at("converged"), false);
  EXPECT_EQ(d.at("stop_reason"), "running");
}

TEST(MedianPrecision, AllZeroTimesNeverClaimPrecision) {
  // median 0 -> relative half-width 0/0 = NaN, which never passes; it runs to max_samples.
  MedianPrecisionCriterion c({.max_samples = 30});
  EXPECT_EQ(run_until_finished(c, [](int) { return 0.0; }), 30);
  EXPECT_FALSE(c.converged());
}

TEST(MedianPrecision, RejectsBadSettingsAndTimes) {
  EXPECT_THROW(MedianPrecisionCriterion({.max_samples = 0}), std::invalid_argument);
  EXPECT_THROW(MedianPrecisionCriterion({.min_seconds = -1.0}), std::invalid_argument);
  EXPECT_THROW(MedianPrecisionCriterion({.max_relative_half_width = NAN}), std::invalid_argument);
  EXPECT_THROW(MedianPrecisionCriterion({.max_seconds = 0.0}), std::invalid_argument);
  MedianPrecisionCriterion c;
  EXPECT_THROW(c.add_measurement(-1e-6), std::invalid_argument);
  EXPECT_THROW(c.add_measurement(NAN), std::invalid_argument);
  EXPECT_THROW(c.add_measurement(INFINITY), std::invalid_argument);
  EXPECT_TRUE(c.samples().empty());
}

TEST(FixedCount, StopsAtExactlyN) {
  FixedCountCriterion c(100);
  for (int i = 0; i < 99; ++i) c.add_measurement(alternating(i));
  EXPECT_FALSE(c.is_finished());
  c.add_measurement(alternating(99));
  EXPECT_TRUE(c.is_finished());
  EXPECT_EQ(c.samples().size(), 100u);
  EXPECT_EQ(c.samples()[1], 1.0 / 512);  // kept in arrival order
}

TEST(FixedCount, IgnoresSpreadAndTime) {
  // Wildly noisy, long samples: still exactly 3.
  FixedCountCriterion c(3);
  EXPECT_EQ(run_until_finished(c, [](int i) { return i == 1 ? 100.0 : 1e-6; }), 3);
}

TEST(FixedCount, DescribeAndValidation) {
  FixedCountCriterion c(2);
  c.add_measurement(0.5);
  const nlohmann::json d = c.describe();
  EXPECT_EQ(d.at("criterion"), "fixed_count");
  EXPECT_EQ(d.at("count"), 2);
  EXPECT_EQ(d.at("samples"), 1);
  EXPECT_EQ(d.at("finished"), false);
  EXPECT_EQ(c.count(), 2);
  EXPECT_THROW(FixedCountCriterion(0), std::invalid_argument);
  EXPECT_THROW(c.add_measurement(NAN), std::invalid_argument);
}

}  // namespace
}  // namespace kbv::measure
