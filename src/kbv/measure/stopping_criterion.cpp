#include "kbv/measure/stopping_criterion.h"

#include <cmath>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

#include "kbv/measure/statistics.h"

namespace kbv::measure {
namespace {

// The protocol fixes the level; it is not a knob of the preset.
constexpr double kConfidence = 0.95;

void check_measurement(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0.0) {
    throw std::invalid_argument("kbv::measure: a measured time must be finite and >= 0, got " +
                                std::to_string(seconds));
  }
}

std::size_t checked_count(int n) {
  if (n < 1) throw std::invalid_argument("kbv::measure: FixedCountCriterion needs n >= 1");
  return static_cast<std::size_t>(n);
}

}  // namespace

MedianPrecisionCriterion::MedianPrecisionCriterion(MedianPrecisionSettings settings) : settings_(settings) {
  const auto& s = settings_;
  // Written as !(x >= 0) so that NaN settings are rejected too.
  if (s.min_samples < 0 || s.max_samples < 1 || !(s.min_seconds >= 0.0) || !(s.max_relative_half_width >= 0.0) ||
      !(s.max_seconds > 0.0)) {
    throw std::invalid_argument("kbv::measure: invalid MedianPrecisionSettings");
  }
  samples_.reserve(static_cast<std::size_t>(s.max_samples));
}

void MedianPrecisionCriterion::add_measurement(double seconds) {
  check_measurement(seconds);
  samples_.push_back(seconds);
  measured_seconds_ += seconds;
  reason_ = evaluate();
}

MedianPrecisionCriterion::Reason MedianPrecisionCriterion::evaluate() const {
  const auto& s = settings_;
  const auto n = static_cast<long>(samples_.size());
  if (n >= s.min_samples && measured_seconds_ >= s.min_seconds) {
    const double center = median(samples_);
    // A zero median (all-zero times) gives NaN or inf here, which never passes: it runs to a
    // cap instead of claiming a precision it does not have.
    if (relative_half_width(median_ci(samples_, kConfidence), center) <= s.max_relative_half_width) {
      return Reason::precision;
    }
  }
  if (n >= s.max_samples) return Reason::max_samples;
  if (measured_seconds_ >= s.max_seconds) return Reason::max_seconds;
  return Reason::running;
}

nlohmann::json MedianPrecisionCriterion::describe() const {
  const auto reason_name = [](Reason reason) {
    switch (reason) {
      case Reason::precision: return "precision";
      case Reason::max_samples: return "max_samples";
      case Reason::max_seconds: return "max_seconds";
      case Reason::running: break;
    }
    return "running";
  };
  return {
      {"criterion", "median_precision"},
      {"confidence", kConfidence},
      {"min_samples", settings_.min_samples},
      {"min_seconds", settings_.min_seconds},
      {"max_relative_half_width", settings_.max_relative_half_width},
      {"max_samples", settings_.max_samples},
      {"max_seconds", settings_.max_seconds},
      {"samples", samples_.size()},
      {"measured_seconds", measured_seconds_},
      {"finished", is_finished()},
      {"converged", converged()},
      {"stop_reason", reason_name(reason_)},
  };
}

FixedCountCriterion::FixedCountCriterion(int n) : count_(checked_count(n)) { samples_.reserve(count_); }

void FixedCountCriterion::add_measurement(double seconds) {
  check_measurement(seconds);
  samples_.push_back(seconds);
}

nlohmann::json FixedCountCriterion::describe() const {
  return {
      {"criterion", "fixed_count"},
      {"count", count_},
      {"samples", samples_.size()},
      {"finished", is_finished()},
  };
}

}  // namespace kbv::measure
