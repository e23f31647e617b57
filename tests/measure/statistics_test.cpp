// Statistics against hand-computed values; the arithmetic is in the comments.
#include "kbv/measure/statistics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <vector>

namespace kbv::measure {
namespace {

// 1, 2, ..., n in a scrambled order, so that no function can rely on sorted input.
// 37 is coprime with every n used here (10, 100), so i*37 mod n visits each residue once.
std::vector<double> scrambled_one_to(int n) {
  std::vector<double> v;
  for (int i = 0; i < n; ++i) v.push_back(static_cast<double>((i * 37) % n + 1));
  return v;
}

TEST(Median, OddCount) {
  // sorted: 1 2 3 5 9 -> middle (3rd) value is 3
  const std::vector<double> v{5, 1, 9, 3, 2};
  EXPECT_DOUBLE_EQ(median(v), 3.0);
}

TEST(Median, EvenCountIsMeanOfMiddleTwo) {
  // sorted: 1 2 4 8 -> (2 + 4) / 2 = 3
  const std::vector<double> v{8, 2, 1, 4};
  EXPECT_DOUBLE_EQ(median(v), 3.0);
  // duplicates at the middle: sorted 1 7 7 9 -> (7 + 7) / 2 = 7
  const std::vector<double> w{7, 9, 1, 7};
  EXPECT_DOUBLE_EQ(median(w), 7.0);
}

TEST(Median, OneSample) {
  const std::vector<double> v{0.25};
  EXPECT_DOUBLE_EQ(median(v), 0.25);
}

TEST(Median, EmptyIsNaN) { EXPECT_TRUE(std::isnan(median(std::vector<double>{}))); }

TEST(Median, NaNSampleIsNaN) {
  const std::vector<double> v{1, NAN, 3};
  EXPECT_TRUE(std::isnan(median(v)));
}

TEST(Quantile, NearestRank) {
  const std::vector<double> v = scrambled_one_to(10);  // 1..10
  // q = 0.9: the smallest value with 9 of 10 at or below it -> 9; 0.91 -> 10; 0 -> the least
  EXPECT_DOUBLE_EQ(quantile(v, 0.9), 9.0);
  EXPECT_DOUBLE_EQ(quantile(v, 0.91), 10.0);
  EXPECT_DOUBLE_EQ(quantile(v, 1.0), 10.0);
  EXPECT_DOUBLE_EQ(quantile(v, 0.0), 1.0);
  EXPECT_DOUBLE_EQ(quantile(v, 0.5), 5.0);
}

TEST(Quantile, EdgeCases) {
  EXPECT_TRUE(std::isnan(quantile(std::vector<double>{}, 0.5)));
  EXPECT_TRUE(std::isnan(quantile(std::vector<double>{1, NAN}, 0.5)));
  EXPECT_THROW(quantile(std::vector<double>{1}, 1.5), std::invalid_argument);
}

TEST(Median, DoesNotReorderInput) {
  const std::vector<double> v{3, 1, 2};
  median(v);
  EXPECT_EQ(v, (std::vector<double>{3, 1, 2}));
}

TEST(Mean, Basic) {
  // (1 + 2 + 3 + 10) / 4 = 16 / 4 = 4
  const std::vector<double> v{1, 2, 3, 10};
  EXPECT_DOUBLE_EQ(mean(v), 4.0);
  EXPECT_TRUE(std::isnan(mean(std::vector<double>{})));
}

TEST(Stddev, SampleFormula) {
  // mean = 40 / 8 = 5; squared deviations 9 1 1 1 0 0 4 16, sum 32;
  // sample variance = 32 / (8 - 1) = 32/7; stddev = sqrt(32/7) = 2.138089935...
  const std::vector<double> v{2, 4, 4, 4, 5, 5, 7, 9};
  EXPECT_DOUBLE_EQ(stddev(v), std::sqrt(32.0 / 7.0));
  EXPECT_NEAR(stddev(v), 2.138089935, 1e-9);
}

TEST(Stddev, FewerThanTwoIsZero) {
  EXPECT_EQ(stddev(std::vector<double>{}), 0.0);
  EXPECT_EQ(stddev(std::vector<double>{42.0}), 0.0);
}

TEST(Stddev, TinySpreadAroundLargeMean) {
  // 1e9 + {1, 2, 3}: deviations -1 0 1, variance 2/2 = 1, stddev 1. A one-pass
  // sum-of-squares formula loses this entirely to cancellation (1e18 vs 1).
  const std::vector<double> v{1e9 + 1, 1e9 + 2, 1e9 + 3};
  EXPECT_DOUBLE_EQ(stddev(v), 1.0);
}

TEST(MedianCi, TenSamples) {
  // z(0.95) = 1.959964; z*sqrt(10)/2 = 1.959964 * 3.162278 / 2 = 3.0990
  // r = round(5 - 3.0990) = round(1.9010) = 2;  s = round(1 + 5 + 3.0990) = round(9.0990) = 9
  // values 1..10 -> [x(2), x(9)] = [2, 9]   (exact coverage 1 - 2*11/1024 = 0.979)
  const Interval ci = median_ci(scrambled_one_to(10));
  EXPECT_EQ(ci.low, 2.0);
  EXPECT_EQ(ci.high, 9.0);
}

TEST(MedianCi, HundredSamples) {
  // z*sqrt(100)/2 = 1.959964 * 10 / 2 = 9.79982
  // r = round(50 - 9.79982) = round(40.2) = 40;  s = round(1 + 50 + 9.79982) = round(60.8) = 61
  // values 1..100 -> [x(40), x(61)] = [40, 61], the textbook answer (coverage 0.965)
  const Interval ci = median_ci(scrambled_one_to(100));
  EXPECT_EQ(ci.low, 40.0);
  EXPECT_EQ(ci.high, 61.0);
}

TEST(MedianCi, HundredSamplesAt99Percent) {
  // z(0.99) = 2.575829; z*10/2 = 12.879
  // r = round(50 - 12.879) = round(37.12) = 37;  s = round(51 + 12.879) = round(63.88) = 64
  const Interval ci = median_ci(scrambled_one_to(100), 0.99);
  EXPECT_EQ(ci.low, 37.0);
  EXPECT_EQ(ci.high, 64.0);
}

TEST(MedianCi, NineIsTheFirstNontrivialCount) {
  // n = 9: z*3/2 = 2.93995; r = round(4.5 - 2.93995) = round(1.56) = 2;
  //        s = round(1 + 4.5 + 2.93995) = round(8.44) = 8  -> [x(2), x(8)] = [2, 8]
  const std::vector<double> nine{9, 1, 8, 2, 7, 3, 6, 4, 5};
  const Interval ci9 = median_ci(nine);
  EXPECT_EQ(ci9.low, 2.0);
  EXPECT_EQ(ci9.high, 8.0);
  // n = 8: z*sqrt(8)/2 = 2.77181; r = round(1.228) = 1; s = round(7.77) = 8 -> {min, max}
  const std::vector<double> eight{8, 1, 7, 2, 6, 3, 5, 4};
  const Interval ci8 = median_ci(eight);
  EXPECT_EQ(ci8.low, 1.0);
  EXPECT_EQ(ci8.high, 8.0);
}

TEST(MedianCi, SmallCountsClampToMinMax) {
  // n = 3: z*sqrt(3)/2 = 1.697; r = round(-0.197) = 0 -> clamped to 1;
  //        s = round(4.197) = 4 -> clamped to 3
  const std::vector<double> three{0.5, 0.1, 0.3};
  const Interval ci = median_ci(three);
  EXPECT_EQ(ci.low, 0.1);
  EXPECT_EQ(ci.high, 0.5);

  const Interval one = median_ci(std::vector<double>{0.7});
  EXPECT_EQ(one.low, 0.7);
  EXPECT_EQ(one.high, 0.7);
}

TEST(MedianCi, EmptyAndNaN) {
  const Interval empty = median_ci(std::vector<double>{});
  EXPECT_TRUE(std::isnan(empty.low) && std::isnan(empty.high));
  const Interval nan = median_ci(std::vector<double>{1, 2, NAN});
  EXPECT_TRUE(std::isnan(nan.low) && std::isnan(nan.high));
}

TEST(MedianCi, RejectsConfidenceOutsideOpenUnitInterval) {
  const std::vector<double> v{1, 2, 3};
  EXPECT_THROW(median_ci(v, 0.0), std::invalid_argument);
  EXPECT_THROW(median_ci(v, 1.0), std::invalid_argument);
  EXPECT_THROW(median_ci(v, NAN), std::invalid_argument);
}

TEST(RelativeHalfWidth, Basic) {
  // (1.1 - 0.9) / 2 / 1.0 = 0.1
  EXPECT_DOUBLE_EQ(relative_half_width({0.9, 1.1}, 1.0), 0.1);
  // the n = 100 interval above, around the median 50.5 of 1..100: (61 - 40) / 2 / 50.5 = 0.2079
  EXPECT_DOUBLE_EQ(relative_half_width({40.0, 61.0}, 50.5), 21.0 / 2.0 / 50.5);
  EXPECT_TRUE(std::isinf(relative_half_width({0.0, 1.0}, 0.0)));
}

// n values spread evenly over [center*(1 - spread), center*(1 + spread)], odd n so the middle
// value is exactly `center` (u = 0), in an order that depends on `stride`.
std::vector<double> spread_around(double center, double spread, int n, int stride) {
  std::vector<double> v;
  for (int i = 0; i < n; ++i) {
    const int k = (i * stride) % n;            // stride coprime with n: a permutation of 0..n-1
    const double u = 2.0 * k / (n - 1) - 1.0;  // in [-1, 1]
    v.push_back(center * (1.0 + spread * u));
  }
  return v;
}

TEST(BootstrapRatio, IdenticalInputsGiveTightIntervalAroundOne) {
  // Every value lies in [0.999, 1.001], so every resample median does too, and every ratio in
  // [0.999/1.001, 1.001/0.999] = [0.998002, 1.002002]: the interval must sit inside it.
  const auto x = spread_around(1.0, 0.001, 51, 7);
  const Interval ci = bootstrap_ratio_of_medians(x, x, 2000, 1234);
  EXPECT_LE(ci.low, 1.0);
  EXPECT_GE(ci.high, 1.0);
  EXPECT_GE(ci.low, 0.999 / 1.001);
  EXPECT_LE(ci.high, 1.001 / 0.999);
  EXPECT_LT(relative_half_width(ci, 1.0), 0.002);
}

TEST(BootstrapRatio, KnownTwoFoldRatioWithSmallNoise) {
  // baseline values 2*(1 + 0.005u), candidate 1*(1 + 0.005u), u spread over [-1, 1]; the
  // sample medians are exactly 2 and 1. Ratios are bounded by
  // [2*0.995/1.005, 2*1.005/0.995] = [1.9801, 2.0201], and the interval straddles 2.
  const auto baseline = spread_around(2.0, 0.005, 41, 3);
  const auto candidate = spread_around(1.0, 0.005, 61, 11);
  const Interval ci = bootstrap_ratio_of_medians(baseline, candidate, 2000, 99);
  EXPECT_LE(ci.low, 2.0);
  EXPECT_GE(ci.high, 2.0);
  EXPECT_GE(ci.low, 2.0 * 0.995 / 1.005);
  EXPECT_LE(ci.high, 2.0 * 1.005 / 0.995);
  EXPECT_LT(ci.low, ci.high);  // noise in the inputs shows up as width
}

TEST(BootstrapRatio, DeterministicForASeed) {
  const auto a = spread_around(3.0, 0.05, 31, 5);
  const auto b = spread_around(1.5, 0.05, 25, 7);
  const Interval first = bootstrap_ratio_of_medians(a, b, 500, 42);
  const Interval again = bootstrap_ratio_of_medians(a, b, 500, 42);
  EXPECT_EQ(first.low, again.low);
  EXPECT_EQ(first.high, again.high);
}

TEST(BootstrapRatio, ConstantInputsGiveThePointRatio) {
  // every resample median is 3 and 1.5, every ratio exactly 2
  const std::vector<double> a(9, 3.0);
  const std::vector<double> b(4, 1.5);
  const Interval ci = bootstrap_ratio_of_medians(a, b, 100, 7);
  EXPECT_EQ(ci.low, 2.0);
  EXPECT_EQ(ci.high, 2.0);
}

TEST(BootstrapRatio, EdgeCases) {
  const std::vector<double> some{1.0, 2.0};
  const std::vector<double> none;
  const Interval empty = bootstrap_ratio_of_medians(some, none, 10, 1);
  EXPECT_TRUE(std::isnan(empty.low) && std::isnan(empty.high));
  const std::vector<double> with_nan{1.0, NAN};
  const Interval nan = bootstrap_ratio_of_medians(with_nan, some, 10, 1);
  EXPECT_TRUE(std::isnan(nan.low) && std::isnan(nan.high));
  EXPECT_THROW(bootstrap_ratio_of_medians(some, some, 0, 1), std::invalid_argument);
  EXPECT_THROW(bootstrap_ratio_of_medians(some, some, 10, 1, 1.5), std::invalid_argument);
}

TEST(BootstrapMean, TwoValuesGiveTheFullRange) {
  // Samples {0, 1}: a resample of two is {0,0}, {0,1}, {1,0} or {1,1}, mean 0, 0.5 or 1 with
  // probabilities 1/4, 1/2, 1/4. Of 2000 means about 500 are 0 and 500 are 1, so the 2.5% and
  // 97.5% quantiles (positions 49.975 and 1949.025) are exactly 0 and 1.
  const std::vector<double> v{1.0, 0.0};
  const Interval ci = bootstrap_mean(v, 2000, 17);
  EXPECT_EQ(ci.low, 0.0);
  EXPECT_EQ(ci.high, 1.0);
}

TEST(BootstrapMean, StraddlesTheMeanWithinTheSampleRange) {
  // 1..100 has mean 50.5 and standard error 29.0/sqrt(100) = 2.9: the 95% interval is about
  // 50.5 +- 1.96*2.9 = [44.8, 56.2]; allow for resampling noise.
  const auto v = scrambled_one_to(100);
  const Interval ci = bootstrap_mean(v, 2000, 5);
  EXPECT_LT(ci.low, 50.5);
  EXPECT_GT(ci.high, 50.5);
  EXPECT_NEAR(ci.low, 44.8, 1.5);
  EXPECT_NEAR(ci.high, 56.2, 1.5);
  const Interval again = bootstrap_mean(v, 2000, 5);
  EXPECT_EQ(ci.low, again.low);
  EXPECT_EQ(ci.high, again.high);
}

TEST(BootstrapMean, EdgeCases) {
  const std::vector<double> one{2.5};
  const Interval single = bootstrap_mean(one, 10, 1);
  EXPECT_EQ(single.low, 2.5);
  EXPECT_EQ(single.high, 2.5);
  const std::vector<double> none;
  const Interval empty = bootstrap_mean(none, 10, 1);
  EXPECT_TRUE(std::isnan(empty.low) && std::isnan(empty.high));
  const std::vector<double> with_nan{1.0, NAN};
  const Interval nan = bootstrap_mean(with_nan, 10, 1);
  EXPECT_TRUE(std::isnan(nan.low) && std::isnan(nan.high));
  EXPECT_THROW(bootstrap_mean(one, 0, 1), std::invalid_argument);
  EXPECT_THROW(bootstrap_mean(one, 10, 1, 0.0), std::invalid_argument);
}

}  // namespace
}  // namespace kbv::measure
