// How busy the host was while one side was timed: the machine's CPU use as the kernel counts it
// (/proc/stat's aggregate line), read before and after, against the timed worker's own CPU time.
// What is left is work of other processes that shared the cores with the timing (a noisy
// neighbour, another evaluation), and steal, the time a hypervisor gave the cores to another guest.
#pragma once

#include <chrono>
#include <optional>

#include <nlohmann/json.hpp>

namespace kbv::measure {

struct CpuCounters {
  double busy_seconds = 0;   // all cores together: user, nice, system, irq, softirq
  double total_seconds = 0;  // the above, idle, iowait and steal
  double steal_seconds = 0;
};

// The counters now; none where /proc/stat cannot be read.
std::optional<CpuCounters> read_cpu_counters();

// The host over a window of `wall_seconds` in which the timed worker used `worker_cpu_seconds`:
// {"cores", "busy_cores" (all processes), "other_cores" (busy_cores less the worker's),
// "resolution_cores" (what the counters' clock ticks leave unknown: a tick at each end of the
// window and one in the worker's reading, over the window; 0.15 core for 0.2 s at 100 ticks a
// second, 2 cores for kernelbench's ~15 ms), "steal_share" (of all cores' time), "wall_seconds"}.
nlohmann::json host_load(const CpuCounters& before, const CpuCounters& after, double wall_seconds,
                         double worker_cpu_seconds);

// A window of timing on this host: the counters and the clock read when it opens; load() reads them
// again and gives host_load's figures for the timed workers' CPU time over the window, or null
// where the counters or the workers' time could not be read.
class HostWindow {
 public:
  HostWindow();
  nlohmann::json load(std::optional<double> workers_cpu_seconds) const;

 private:
  std::optional<CpuCounters> before_;
  std::chrono::steady_clock::time_point opened_;
};

}  // namespace kbv::measure
