// Stopping rules for timing loops: when has a measurement taken enough samples?
//
// The timer feeds each measured time (seconds) to add_measurement() and stops once is_finished()
// is true; the criterion keeps the samples, so the summary is computed from exactly what the rule
// saw. The rules need no GPU and are tested with synthetic numbers.
#pragma once

#include <cstddef>
#include <nlohmann/json_fwd.hpp>  // callers of describe() include <nlohmann/json.hpp>
#include <span>
#include <vector>

namespace kbv::measure {

class StoppingCriterion {
 public:
  virtual ~StoppingCriterion() = default;
  // Records one measured time in seconds. Throws std::invalid_argument for a negative or
  // non-finite time: a timer that produces one is broken. Samples added after is_finished()
  // are kept and the decision is re-evaluated.
  virtual void add_measurement(double seconds) = 0;
  virtual bool is_finished() const = 0;
  // Every sample so far, in order of arrival; invalidated by the next add_measurement().
  virtual std::span<const double> samples() const = 0;
  // The rule's settings plus its state (sample count, whether it finished, and why), for the
  // record.
  virtual nlohmann::json describe() const = 0;
};

// The `verified` preset's rule (PROTOCOL.md, Timing, Repetitions).
struct MedianPrecisionSettings {
  int min_samples = 10;
  double min_seconds = 0.2;               // of measured time (sum of samples), not wall time
  double max_relative_half_width = 0.01;  // of the 95% CI of the median, relative to the median
  int max_samples = 200;
  double max_seconds = 10.0;  // of measured time
};

// Adaptive: once at least min_samples and min_seconds of measured time are in, stop as soon as
// the 95% confidence interval of the median (median_ci) has a relative half-width of at most
// max_relative_half_width. Stop regardless at max_samples samples or max_seconds of measured time;
// a cap below the minimums wins. The precision test comes first, so a sample that meets the
// precision and a cap at once counts as converged.
class MedianPrecisionCriterion final : public StoppingCriterion {
 public:
  // Throws std::invalid_argument for settings no loop can honour: max_samples < 1, a negative
  // count, time or width, or a non-positive max_seconds.
  explicit MedianPrecisionCriterion(MedianPrecisionSettings settings = {});

  void add_measurement(double seconds) override;
  bool is_finished() const override { return reason_ != Reason::running; }
  std::span<const double> samples() const override { return samples_; }
  nlohmann::json describe() const override;

  // True when the rule stopped on precision rather than on a cap.
  bool converged() const { return reason_ == Reason::precision; }
  const MedianPrecisionSettings& settings() const { return settings_; }

 private:
  enum class Reason { running, precision, max_samples, max_seconds };
  Reason evaluate() const;

  MedianPrecisionSettings settings_;
  std::vector<double> samples_;
  double measured_seconds_ = 0.0;
  Reason reason_ = Reason::running;
};

// The `kernelbench` preset's rule: exactly n samples, whatever their spread.
class FixedCountCriterion final : public StoppingCriterion {
 public:
  // Throws std::invalid_argument for n < 1.
  explicit FixedCountCriterion(int n);

  void add_measurement(double seconds) override;
  bool is_finished() const override { return samples_.size() >= count_; }
  std::span<const double> samples() const override { return samples_; }
  nlohmann::json describe() const override;

  int count() const { return static_cast<int>(count_); }

 private:
  std::size_t count_;
  std::vector<double> samples_;
};

}  // namespace kbv::measure
