#include "kbv/measure/statistics.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <numeric>
#include <random>
#include <stdexcept>
#include <vector>

namespace kbv::measure {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

bool has_nan(std::span<const double> samples) {
  return std::any_of(samples.begin(), samples.end(), [](double x) { return std::isnan(x); });
}

void check_confidence(double confidence) {
  if (!(confidence > 0.0 && confidence < 1.0)) {
    throw std::invalid_argument("kbv::measure: confidence must lie in (0, 1)");
  }
}

void check_bootstrap(int resamples, double confidence) {
  check_confidence(confidence);
  if (resamples < 1) {
    throw std::invalid_argument("kbv::measure: bootstrap needs at least one resample");
  }
}

// Median of a non-empty, NaN-free buffer, reordering it. After nth_element the element at n/2 is
// the upper middle and everything before it is no larger, so for even n the lower middle is the
// largest of that prefix (one linear pass instead of a second nth_element).
double median_in_place(std::span<double> values) {
  const std::size_t n = values.size();
  const auto upper = values.begin() + static_cast<std::ptrdiff_t>(n / 2);
  std::nth_element(values.begin(), upper, values.end());
  if (n % 2 == 1) return *upper;
  const double lower = *std::max_element(values.begin(), upper);
  return lower + (*upper - lower) / 2.0;  // overflow-safe midpoint
}

// Standard-normal quantile for p in (0.5, 1): bisection on Phi(z) = erfc(-z/sqrt 2)/2, which
// std::erfc evaluates to full double precision; the loop ends when the bracket stops shrinking.
double normal_upper_quantile(double p) {
  double lo = 0.0;
  double hi = 40.0;  // Phi(40) rounds to 1
  for (int i = 0; i < 200; ++i) {
    const double mid = lo + (hi - lo) / 2.0;
    if (mid == lo || mid == hi) break;
    if (0.5 * std::erfc(-mid / std::sqrt(2.0)) < p) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  return lo + (hi - lo) / 2.0;
}

// Quantile q of sorted values by linear interpolation at position q*(n-1) (Hyndman & Fan type 7).
double sorted_quantile(std::span<const double> sorted, double q) {
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const auto below = static_cast<std::size_t>(std::floor(pos));
  const std::size_t above = std::min(below + 1, sorted.size() - 1);
  const double frac = pos - static_cast<double>(below);
  // Equal neighbours (including two infinities, where inf - inf would give NaN) need no blend.
  if (frac == 0.0 || sorted[below] == sorted[above]) return sorted[below];
  return sorted[below] + frac * (sorted[above] - sorted[below]);
}

// The percentile interval of bootstrap statistics: their (1-confidence)/2 and (1+confidence)/2
// quantiles. Sorts `statistics`, which must be free of NaN.
Interval percentile_interval(std::span<double> statistics, double confidence) {
  std::sort(statistics.begin(), statistics.end());
  const double tail = (1.0 - confidence) / 2.0;
  return {sorted_quantile(statistics, tail), sorted_quantile(statistics, 1.0 - tail)};
}

// Fills `out` with out.size() draws from `source` with replacement. `rng() % n` is used rather
// than std::uniform_int_distribution so the draws are the same on every standard library; its
// bias, at most n / 2^64, is far below anything a bootstrap can resolve.
void resample(std::span<const double> source, std::mt19937_64& rng, std::span<double> out) {
  const auto n = static_cast<std::uint64_t>(source.size());
  for (double& slot : out) slot = source[static_cast<std::size_t>(rng() % n)];
}

}  // namespace

double median(std::span<const double> samples) {
  if (samples.empty() || has_nan(samples)) return kNaN;
  std::vector<double> copy(samples.begin(), samples.end());
  return median_in_place(copy);
}

double quantile(std::span<const double> samples, double q) {
  if (!(q >= 0.0 && q <= 1.0)) throw std::invalid_argument("quantile: q must lie in [0, 1]");
  if (samples.empty() || has_nan(samples)) return kNaN;
  std::vector<double> copy(samples.begin(), samples.end());
  const auto rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(copy.size())));
  const auto at = copy.begin() + static_cast<std::ptrdiff_t>(rank == 0 ? 0 : rank - 1);
  std::nth_element(copy.begin(), at, copy.end());
  return *at;
}

double mean(std::span<const double> samples) {
  if (samples.empty()) return kNaN;
  return std::accumulate(samples.begin(), samples.end(), 0.0) / static_cast<double>(samples.size());
}

double stddev(std::span<const double> samples) {
  if (samples.size() < 2) return 0.0;
  // Two passes (mean, then squared deviations): the one-pass sum-of-squares formula cancels
  // catastrophically when the spread is tiny against the mean, which is the usual case for
  // repeated kernel times.
  const double m = mean(samples);
  double sum_sq = 0.0;
  for (double x : samples) sum_sq += (x - m) * (x - m);
  return std::sqrt(sum_sq / static_cast<double>(samples.size() - 1));
}

Interval median_ci(std::span<const double> samples, double confidence) {
  check_confidence(confidence);
  if (samples.empty() || has_nan(samples)) return {kNaN, kNaN};

  const auto n = static_cast<long>(samples.size());
  const double z = normal_upper_quantile((1.0 + confidence) / 2.0);
  const double half_spread = z * std::sqrt(static_cast<double>(n)) / 2.0;
  const double half_n = static_cast<double>(n) / 2.0;
  // 1-based ranks of the order statistics, clamped to [1, n]; see the header for the source.
  const long r = std::clamp(std::lround(half_n - half_spread), 1L, n);
  const long s = std::clamp(std::lround(1.0 + half_n + half_spread), 1L, n);

  std::vector<double> sorted(samples.begin(), samples.end());
  std::sort(sorted.begin(), sorted.end());
  return {sorted[static_cast<std::size_t>(r - 1)], sorted[static_cast<std::size_t>(s - 1)]};
}

double relative_half_width(Interval ci, double center) { return (ci.high - ci.low) / 2.0 / center; }

Interval bootstrap_ratio_of_medians(std::span<const double> numerator, std::span<const double> denominator,
                                    int resamples, std::uint64_t seed, double confidence) {
  check_bootstrap(resamples, confidence);
  if (numerator.empty() || denominator.empty() || has_nan(numerator) || has_nan(denominator)) {
    return {kNaN, kNaN};
  }

  std::mt19937_64 rng(seed);
  std::vector<double> num_buf(numerator.size());
  std::vector<double> den_buf(denominator.size());
  std::vector<double> ratios(static_cast<std::size_t>(resamples));
  for (double& ratio : ratios) {
    // Numerator first, then denominator, from one engine: the order is part of what makes a
    // seed reproduce the same interval.
    resample(numerator, rng, num_buf);
    resample(denominator, rng, den_buf);
    ratio = median_in_place(num_buf) / median_in_place(den_buf);
  }
  // 0/0 ratios would break the sort's ordering; they can only come from zero times.
  if (has_nan(ratios)) return {kNaN, kNaN};
  return percentile_interval(ratios, confidence);
}

Interval bootstrap_mean(std::span<const double> samples, int resamples, std::uint64_t seed, double confidence) {
  check_bootstrap(resamples, confidence);
  if (samples.empty() || has_nan(samples)) return {kNaN, kNaN};

  std::mt19937_64 rng(seed);
  std::vector<double> buf(samples.size());
  std::vector<double> means(static_cast<std::size_t>(resamples));
  for (double& m : means) {
    resample(samples, rng, buf);
    m = mean(buf);
  }
  // Infinite samples of both signs give inf - inf = NaN means, which break the sort's ordering.
  if (has_nan(means)) return {kNaN, kNaN};
  return percentile_interval(means, confidence);
}

}  // namespace kbv::measure
