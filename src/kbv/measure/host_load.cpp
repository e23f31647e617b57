#include "kbv/measure/host_load.h"

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

namespace kbv::measure {

std::optional<CpuCounters> read_cpu_counters() {
  std::ifstream stat("/proc/stat");
  std::string line;
  if (!std::getline(stat, line) || line.rfind("cpu ", 0) != 0) return std::nullopt;
  std::istringstream fields(line.substr(4));
  // user nice system idle iowait irq softirq steal (guest time is inside user already)
  double ticks[8] = {};
  for (double& tick : ticks) {
    if (!(fields >> tick)) return std::nullopt;
  }
  const double per_second = static_cast<double>(sysconf(_SC_CLK_TCK));
  CpuCounters counters;
  counters.busy_seconds = (ticks[0] + ticks[1] + ticks[2] + ticks[5] + ticks[6]) / per_second;
  counters.steal_seconds = ticks[7] / per_second;
  counters.total_seconds = counters.busy_seconds + (ticks[3] + ticks[4]) / per_second + counters.steal_seconds;
  return counters;
}

nlohmann::json host_load(const CpuCounters& before, const CpuCounters& after, double wall_seconds,
                         double worker_cpu_seconds) {
  const double wall = std::max(wall_seconds, 1e-9);
  const double busy = std::max(0.0, after.busy_seconds - before.busy_seconds);
  const double total = after.total_seconds - before.total_seconds;
  const double steal = std::max(0.0, after.steal_seconds - before.steal_seconds);
  const double tick = 1.0 / static_cast<double>(sysconf(_SC_CLK_TCK));
  return {{"wall_seconds", wall_seconds},        {"cores", std::max(1u, std::thread::hardware_concurrency())},
          {"busy_cores", busy / wall},           {"other_cores", std::max(0.0, busy - worker_cpu_seconds) / wall},
          {"resolution_cores", 3 * tick / wall}, {"steal_share", total > 0 ? steal / total : 0.0}};
}

HostWindow::HostWindow() : before_(read_cpu_counters()), opened_(std::chrono::steady_clock::now()) {}

nlohmann::json HostWindow::load(std::optional<double> workers_cpu_seconds) const {
  const std::optional<CpuCounters> after = read_cpu_counters();
  if (!before_ || !after || !workers_cpu_seconds) return nullptr;
  return host_load(*before_, *after, std::chrono::duration<double>(std::chrono::steady_clock::now() - opened_).count(),
                   *workers_cpu_seconds);
}

}  // namespace kbv::measure
