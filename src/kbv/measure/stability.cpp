#include "kbv/measure/stability.h"

#include <cmath>
#include <string>

#include "kbv/measure/statistics.h"

namespace kbv::measure {
namespace {

using nlohmann::json;

void judge_side(const char* side, const SideTiming& timing, const StabilityLimits& limits, json& reasons) {
  if (timing.host.is_object()) {
    // Only what the counters' resolution cannot explain: a window of a few ticks says nothing.
    const double other = timing.host.value("other_cores", 0.0);
    const double resolution = timing.host.value("resolution_cores", 0.0);
    if (other - resolution > limits.other_cores) {
      reasons.push_back(
          {{"id", "host_contention"},
           {"side", side},
           {"other_cores", other},
           {"resolution_cores", resolution},
           {"limit", limits.other_cores},
           {"why", "other processes kept cores busy while it was timed: its calls waited for a core or a cache"}});
    }
    const double steal = timing.host.value("steal_share", 0.0);
    if (steal > limits.steal_share) {
      reasons.push_back({{"id", "steal"},
                         {"side", side},
                         {"steal_share", steal},
                         {"limit", limits.steal_share},
                         {"why", "the hypervisor gave the cores to another guest while it was timed"}});
    }
  }
  if (!timing.samples.empty()) {
    const double middle = median(timing.samples);
    std::size_t scattered = 0;
    for (const double s : timing.samples) scattered += s > 2 * middle || s < middle / 2;
    const double share = static_cast<double>(scattered) / static_cast<double>(timing.samples.size());
    if (share > limits.scatter_share) {
      reasons.push_back({{"id", "scattered_samples"},
                         {"side", side},
                         {"share", share},
                         {"limit", limits.scatter_share},
                         {"why",
                          "its samples fall in groups far apart (beyond twice the median or below half of it): "
                          "the median depends on which group the run happened to fill"}});
    }
  }
  // At least three samples in each third: fewer say nothing of a trend.
  if (const std::size_t third = timing.samples.size() / 3; third >= 3) {
    const double first = median(timing.samples.first(third)), last = median(timing.samples.last(third));
    const double change = last / first - 1;
    if (std::abs(change) > limits.drift_share) {
      reasons.push_back({{"id", "drift"},
                         {"side", side},
                         {"first_third_median_seconds", first},
                         {"last_third_median_seconds", last},
                         {"change", change},
                         {"limit", limits.drift_share},
                         {"why",
                          "its calls ran at another speed at the end of its timing than at its start: the machine "
                          "changed while it was timed, and its median depends on when the samples were taken"}});
    }
  }
  if (timing.launch_cover_seconds > 0 && !timing.launch_samples.empty()) {
    const double launch = median(timing.launch_samples);
    if (launch > timing.launch_cover_seconds) {
      reasons.push_back(
          {{"id", "host_bound"},
           {"side", side},
           {"launch_seconds", launch},
           {"limit", timing.launch_cover_seconds},
           {"why",
            "the host took longer to launch a call than the launch cover keeps the device busy: the "
            "device waited for the host inside the timed region, so the figure follows the host's speed"}});
    }
  }
}

}  // namespace

json judge_stability(const SideTiming& baseline, const SideTiming& candidate, const StabilityLimits& limits,
                     std::span<const double> round_ratios) {
  json reasons = json::array();
  judge_side("baseline", baseline, limits, reasons);
  judge_side("candidate", candidate, limits, reasons);
  if (!round_ratios.empty()) {
    const double middle = median(round_ratios);
    const Interval ci = median_ci(round_ratios);
    const double spread = relative_half_width(ci, middle);
    if (!(spread <= limits.round_spread_share)) {
      reasons.push_back({{"id", "rounds_disagree"},
                         {"side", "both"},
                         {"speedup_ci", {ci.low, ci.high}},
                         {"half_width_share", spread},
                         {"limit", limits.round_spread_share},
                         {"why",
                          "the paired rounds' ratios disagree: from round to round the two sides did not see the "
                          "same machine, and the median depends on which rounds the run happened to get"}});
    }
  }
  return {{"reliable", reasons.empty()}, {"reasons", std::move(reasons)}};
}

}  // namespace kbv::measure
