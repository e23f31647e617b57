// Timing statistics: pure functions over samples in seconds.
//
// Every function takes its samples by span, never modifies them, and returns a value in the
// samples' own unit (seconds for times, a plain number for ratios). Edge cases are part of the
// contract and are commented on each function; none of them throws on sample content. Parameters
// that only a bug in kbv could get wrong (a confidence outside (0, 1), no resamples) throw
// std::invalid_argument.
#pragma once

#include <cstdint>
#include <span>

namespace kbv::measure {

// Median. Even n: the mean of the two middle values. Empty, or any NaN among the samples: NaN
// (ordering is undefined with NaN, so no order statistic is returned for such input).
double median(std::span<const double> samples);

// The q-quantile, q in [0, 1], by nearest rank: the smallest sample with at least q of the samples
// at or below it (q = 0: the least). Empty, or any NaN among the samples: NaN.
double quantile(std::span<const double> samples, double q);

// Arithmetic mean. Empty: NaN. NaN or infinities propagate as in plain summation.
double mean(std::span<const double> samples);

// Sample standard deviation (divides by n - 1). n < 2: 0, since one sample shows no spread.
double stddev(std::span<const double> samples);

// A closed interval [low, high] in the unit of the quantity it bounds.
struct Interval {
  double low;
  double high;
};

// Distribution-free confidence interval for the median, from order statistics.
//
// With x(1) <= ... <= x(n) the sorted samples, [x(r), x(s)] covers the population median with
// probability P(r <= B < s), B ~ Binomial(n, 1/2). The normal approximation to B gives the
// 1-based ranks (Gardner & Altman, "Statistics with Confidence", 2nd ed., ch. 5; Campbell &
// Gardner, BMJ 296:1454, 1988):
//     r = round(n/2 - z*sqrt(n)/2),    s = round(1 + n/2 + z*sqrt(n)/2),
// z the two-sided standard-normal quantile for `confidence` (1.96 at 0.95), both clamped to
// [1, n]. Examples at 0.95: n = 10 -> [x(2), x(9)], n = 100 -> [x(40), x(61)].
// Edge cases: empty or any NaN -> {NaN, NaN}; n = 1 -> {x, x}. For n <= 8 at 0.95 no
// nontrivial interval exists and the ranks clamp to {min, max}, whose true coverage
// 1 - 2^(1-n) is below the requested level for n <= 5: callers that need the level should
// require n >= 6 (the stopping rules ask for at least 10 samples).
// Throws std::invalid_argument unless 0 < confidence < 1.
Interval median_ci(std::span<const double> samples, double confidence = 0.95);

// Half the interval's width relative to `center`: (high - low) / 2 / center. The precision
// measure of the adaptive stopping rule. center == 0 yields +inf (or NaN for a zero-width
// interval); a negative center yields a negative value, which no time produces.
double relative_half_width(Interval ci, double center);

// Percentile-bootstrap confidence interval for median(numerator) / median(denominator). Used for
// speedup = baseline median / candidate median.
//
// Each of `resamples` rounds draws len(numerator) values from `numerator` and len(denominator)
// values from `denominator` with replacement, independently, and records the ratio of the two
// medians; the interval is the (1-confidence)/2 and (1+confidence)/2 quantiles of those ratios
// (linear interpolation between order statistics, position q*(resamples-1)). Deterministic for a
// seed on every platform: indices come straight from std::mt19937_64(seed), whose output the
// standard fixes (std::uniform_int_distribution is left to the library, so it is not used).
// Edge cases: either side empty or containing NaN -> {NaN, NaN}; a resample whose denominator
// median is 0 contributes +inf, and one that is 0/0 makes the whole interval {NaN, NaN}: only
// positive times make sense.
// Throws std::invalid_argument unless 0 < confidence < 1 and resamples >= 1.
Interval bootstrap_ratio_of_medians(std::span<const double> numerator, std::span<const double> denominator,
                                    int resamples, std::uint64_t seed, double confidence = 0.95);

// Percentile-bootstrap confidence interval for the mean of `samples`. `kbv report` uses it on
// log speedups, resampling candidates, for the CI of the geometric-mean speedup.
//
// Each of `resamples` rounds draws len(samples) values with replacement and records their mean;
// the interval is the (1-confidence)/2 and (1+confidence)/2 quantiles of those means, taken and
// seeded exactly as in bootstrap_ratio_of_medians above.
// Edge cases: empty or containing NaN -> {NaN, NaN}; one value x (or all equal) -> {x, x}.
// Throws std::invalid_argument unless 0 < confidence < 1 and resamples >= 1.
Interval bootstrap_mean(std::span<const double> samples, int resamples, std::uint64_t seed, double confidence = 0.95);

}  // namespace kbv::measure
