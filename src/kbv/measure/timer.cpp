#include "kbv/measure/timer.h"

#include <chrono>

namespace kbv::measure {
namespace {

// Host clock around the call. CPU kernels run synchronously on the calling thread, so the call
// returning is the work finishing. There is no cache flush: CPU timings serve the CI paths.
class HostTimer final : public Timer {
 public:
  void flush_cache() override {}
  TimedCall time(const std::function<void()>& call, const char* /*range*/) override {
    const auto start = std::chrono::steady_clock::now();
    call();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    TimedCall timed;
    timed.seconds = timed.stream_seconds = timed.launch_seconds = seconds;
    return timed;
  }
  nlohmann::json describe() const override { return {{"clock", "host steady_clock"}}; }
};

}  // namespace

std::unique_ptr<Timer> make_timer(const c10::Device& device, const protocol::Timing& timing) {
  if (device.is_cuda()) return make_cuda_timer(device, timing);
  return std::make_unique<HostTimer>();
}

}  // namespace kbv::measure
