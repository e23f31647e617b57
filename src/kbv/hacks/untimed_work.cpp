#include "kbv/hacks/untimed_work.h"

#include <algorithm>

namespace kbv::hacks {
namespace {

using nlohmann::json;
using protocol::Finding;

Finding finding(json evidence) {
  evidence["source"] = "runtime";
  return {"untimed_work", "error", json::array({std::move(evidence)})};
}

}  // namespace

std::optional<Finding> judge_untimed_work(const json& candidate, const json& baseline,
                                          const protocol::Detection& detection) {
  if (!candidate.is_object() || !candidate.contains("outside_seconds")) return std::nullopt;
  const double main = candidate.at("main_thread_seconds"), in_calls = candidate.at("other_threads_in_calls_seconds");
  const double untimed = candidate.at("outside_seconds").get<double>() - main - in_calls;
  // What kbv's own steps cost the reference's worker in other threads per input set drawn (the same
  // get_inputs, the same copies into the pool): the candidate's worker draws as many, as they did.
  double kbv_per_fill = 0;
  if (baseline.is_object() && baseline.value("fills", 0) > 0) {
    const double kbv_other = baseline.at("process_seconds").get<double>() -
                             baseline.at("main_thread_seconds").get<double>() -
                             baseline.at("other_threads_in_calls_seconds").get<double>();
    kbv_per_fill = std::max(0.0, kbv_other) / baseline.at("fills").get<double>();
  }
  const double allowance = detection.untimed_floor_seconds + detection.untimed_fraction * (main + in_calls) +
                           2 * kbv_per_fill * candidate.value("fills", 0);
  if (!(untimed > allowance)) return std::nullopt;
  return finding({{"why", "its worker's threads or processes used CPU time while none of its calls was under way"},
                  {"untimed_cpu_seconds", untimed},
                  {"allowance_seconds", allowance},
                  {"worker_cpu_seconds", candidate["outside_seconds"]},
                  {"read_from", candidate.value("source", "")},
                  {"kbv_main_thread_seconds", main},
                  {"other_threads_in_calls_seconds", in_calls},
                  {"threads_started_since_import", candidate.value("threads_started_since_import", json::array())}});
}

std::optional<Finding> judge_untimed_device_work(const json& candidate, const json& baseline,
                                                 const protocol::Detection& detection) {
  if (!candidate.is_object()) return std::nullopt;
  const bool baseline_recorded = baseline.is_object() && !baseline.contains("unavailable");
  // The reference's worker is kbv's own: a ledger that loses its launch covers there does not work
  // on this machine, and proves nothing of the candidate.
  if (baseline_recorded && (baseline.value("covers_missing", 0L) > 0 || baseline.value("dropped", 0L) > 0))
    return std::nullopt;
  if (candidate.contains("unavailable")) {
    if (!baseline_recorded) return std::nullopt;  // CUPTI records nothing on this machine
    return finding({{"why", "kbv could not record its worker's GPU work, which it could in the reference's"},
                    {"gpu_ledger", candidate["unavailable"]}});
  }
  const long lost_covers = candidate.value("covers_missing", 0L), dropped = candidate.value("dropped", 0L);
  if (lost_covers > 0 || dropped > 0) {
    return finding({{"why", "its worker's GPU ledger lost records: its work on the device cannot be accounted"},
                    {"launch_covers_missing", lost_covers},
                    {"records_dropped", dropped},
                    {"timed_calls", candidate.value("timed_calls", 0L)}});
  }
  const double outside = candidate.value("outside_seconds", 0.0), windows = candidate.value("windows_seconds", 0.0);
  double reference_per_call = 0;
  if (baseline_recorded && baseline.value("timed_calls", 0L) > 0) {
    reference_per_call =
        baseline.value("outside_seconds", 0.0) / static_cast<double>(baseline["timed_calls"].get<long>());
  }
  const double allowance = detection.untimed_device_floor_seconds + detection.untimed_device_fraction * windows +
                           2 * reference_per_call * static_cast<double>(candidate.value("timed_calls", 0L));
  if (!(outside > allowance)) return std::nullopt;
  return finding({{"why",
                   "work it put on the GPU ran outside its timed calls' windows: under the launch cover, after a "
                   "call's end, or from another thread between calls"},
                  {"untimed_device_seconds", outside},
                  {"allowance_seconds", allowance},
                  {"windows_seconds", windows},
                  {"timed_calls", candidate.value("timed_calls", 0L)},
                  {"foreign_seconds", candidate.value("foreign_seconds", 0.0)},
                  {"foreign_records", candidate.value("foreign_records", 0L)},
                  {"unknown_launches", candidate.value("unknown_launches", 0L)}});
}

}  // namespace kbv::hacks
