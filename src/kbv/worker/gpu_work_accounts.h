// Whose GPU work ran where the timer did not look (PROTOCOL.md, "Work outside the timed calls"):
// the GPU ledger's records of one worker's timing (worker/gpu_ledger.h) set against its calls.
//
// Every kernel, copy and set on the device is charged by the launch behind it: launched by kbv's
// main thread between two calls of the model, it is kbv's own step (a refill, the cache flush, the
// launch cover); launched by the main thread inside a call, it is that call's; launched by any other
// thread, or by a launch the ledger did not see, it is foreign. A timed call's window on the device
// opens where its launch cover (kbv's last launch before the call) ends and lasts the call's
// measured seconds. What a timed call launched, and every foreign piece of work, that ran outside
// the windows is work for the calls that no timer saw. Work of untimed calls (the warm-up's) is
// counted apart. Pure: the tests feed it records.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

namespace kbv::worker {

// A launch (CUPTI's API record): which thread called it, and when (ns, CUPTI's clock).
struct Launch {
  std::uint32_t correlation = 0;
  std::uint32_t thread = 0;
  std::uint64_t at = 0;
};

// A kernel, copy or set as it ran on the device (ns, CUPTI's clock).
struct DeviceWork {
  std::uint32_t correlation = 0;
  std::uint64_t start = 0, end = 0;
};

// A call of the model on kbv's main thread, from its first line to its return (ns, CUPTI's
// clock); a timed one with its measured seconds.
struct CallMark {
  std::uint64_t begin = 0, end = 0;
  std::optional<double> timed_seconds;
};

class GpuWorkAccounts {
 public:
  // `covered`: each timed call is preceded by a launch cover (kbv's last launch before it).
  GpuWorkAccounts(std::uint32_t main_thread, bool covered) : main_thread_(main_thread), covered_(covered) {}

  void add_launches(std::span<const Launch> launches);
  void add_call(const CallMark& call) { calls_.push_back(call); }
  // The last call added was timed: its measured seconds.
  void time_last_call(double seconds) {
    if (!calls_.empty()) calls_.back().timed_seconds = seconds;
  }
  // Charges `work` (everything that ran since the last settle, the device idle since) against the
  // calls added since then; the launches behind it must have been added.
  void settle(std::span<const DeviceWork> work);
  // Cumulative since construction: {"timed_calls", "windows_seconds", "kbv_seconds",
  // "timed_calls_seconds", "untimed_calls_seconds", "foreign_seconds", "outside_seconds",
  // "foreign_records", "unknown_launches", "covers_missing", "records"}.
  nlohmann::json totals() const;

  // A window's end is taken this much later than its measured seconds: CUPTI's timestamps and the
  // timer's events are two readings of the device's clock.
  static constexpr std::uint64_t kEndSlackNs = 2000;

 private:
  struct Window {
    std::uint64_t begin, end;
  };
  static std::uint64_t outside(const DeviceWork& work, std::span<const Window> windows);

  std::uint32_t main_thread_;
  bool covered_;
  std::unordered_map<std::uint32_t, Launch> launches_;  // by correlation, until their work is settled
  std::vector<CallMark> calls_;                         // since the last settle
  std::uint64_t settled_before_ = 0;                    // the previous settle's first call began then
  std::uint64_t kbv_ns_ = 0, timed_calls_ns_ = 0, untimed_calls_ns_ = 0, foreign_ns_ = 0, outside_ns_ = 0,
                windows_ns_ = 0;
  long timed_calls_ = 0, foreign_records_ = 0, unknown_launches_ = 0, covers_missing_ = 0, records_ = 0;
};

}  // namespace kbv::worker
