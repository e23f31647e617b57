// Timers: one timed call of a callable, on the host clock (CPU) or with CUDA events (GPU).
// Both sides of a comparison use the same timer with the same settings (PROTOCOL.md, "Timing").
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <c10/core/Device.h>

#include "kbv/protocol/protocol.h"

namespace kbv::measure {

struct TimedCall {
  double seconds = 0;         // the measured time (device-wide when the protocol syncs the device)
  double stream_seconds = 0;  // current stream only (equal to `seconds` on the CPU)
  // Host seconds from the start to the call's return: on the GPU, where it outlasts the launch
  // cover, the GPU idled inside the timed region waiting for the host.
  double launch_seconds = 0;
  // Where the device-wide end was taken (GPU, when the protocol syncs the device): the figure the
  // host's wait gives (current stream plus the wait beyond an idle device's), and whether
  // `seconds` is the context-wide event's instead (PROTOCOL.md, "Device-wide end").
  std::optional<double> host_wait_seconds;
  bool end_on_device = false;
};

class Timer {
 public:
  virtual ~Timer() = default;
  // Evicts the call's data from cache; outside the timed region.
  virtual void flush_cache() = 0;
  // `range` names the call for profilers (an NVTX range on the GPU: `ncu --nvtx-include` selects
  // exactly the timed calls' kernels).
  virtual TimedCall time(const std::function<void()>& call, const char* range) = 0;
  // Sizes the launch cover (where there is one) for calls whose host path takes `host_path_seconds`
  // (protocol::Timing's rule); the cover in use is in describe().
  virtual void cover_host_path(double /*host_path_seconds*/) {}
  virtual nlohmann::json describe() const = 0;
};

std::unique_ptr<Timer> make_timer(const c10::Device& device, const protocol::Timing& timing);

// Defined in cuda_timer.cpp.
std::unique_ptr<Timer> make_cuda_timer(const c10::Device& device, const protocol::Timing& timing);
// Waits for all work on the device (nothing to wait for on the CPU).
void synchronize(const c10::Device& device);
// The CUDA driver's version, e.g. "13.0".
std::string cuda_driver_version();

}  // namespace kbv::measure
