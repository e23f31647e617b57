// CUDA events on the current stream around the call. Where the protocol asks for work on any
// stream to count (PROTOCOL.md, "Timing"), the host then waits for the whole device: the figure is
// the current stream's plus however long that wait outlasted an idle device's after a call as long.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <vector>

#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/Sleep.h>
#include <c10/cuda/CUDAFunctions.h>
#include <nvtx3/nvToolsExt.h>

#include "kbv/measure/timer.h"

namespace kbv::measure {
namespace {

class CudaEventTimer final : public Timer {
 public:
  CudaEventTimer(const c10::Device& device, const protocol::Timing& timing) : device_sync_(timing.device_sync) {
    int peak_khz = 0;
    C10_CUDA_CHECK(cudaDeviceGetAttribute(&peak_khz, cudaDevAttrClockRate, device.index()));
    // Cycles at the peak clock: at a lower clock the cover only lasts longer.
    peak_hz_ = peak_khz * 1e3;
    cover_cycles_ = static_cast<std::int64_t>(timing.launch_cover_seconds * peak_hz_);
    std::int64_t bytes = timing.l2_flush_bytes;
    // Twice the L2, as reported by the device: writing it evicts whatever the last call left.
    if (bytes <= 0) bytes = 2 * static_cast<std::int64_t>(at::cuda::getDeviceProperties(device.index())->l2CacheSize);
    flush_ = at::empty({bytes}, at::TensorOptions().dtype(at::kByte).device(device));
  }

  void flush_cache() override { flush_.zero_(); }

  TimedCall time(const std::function<void()>& call, const char* range) override {
    const double launch_seconds = launch(call, range);
    if (!device_sync_) {
      stream_end_.synchronize();
      const double seconds = start_.elapsed_time(stream_end_) / 1e3;
      return {seconds, seconds, launch_seconds};
    }
    // Nothing of the host's round trip is in the GPU's figure: only a wait for other streams.
    const double waited = device_wait_after_stream_end();
    const double stream_seconds = start_.elapsed_time(stream_end_) / 1e3;
    return {stream_seconds + std::max(0.0, waited - idle_wait(stream_seconds)), stream_seconds, launch_seconds};
  }

  nlohmann::json describe() const override {
    nlohmann::json idle_waits = nlohmann::json::array();
    for (const auto& [bucket, idle] : idle_waits_) {
      idle_waits.push_back({{"call_seconds", idle.call_seconds}, {"wait_seconds", idle.wait_seconds}});
    }
    return {{"clock", "cuda events, current stream"}, {"device_sync", device_sync_}, {"l2_flush_bytes", flush_.numel()},
            {"idle_waits", idle_waits}, {"launch_cover_cycles", cover_cycles_}};
  }

 private:
  // Launches the call behind the launch cover, between the start and end events; the host's
  // seconds from the start event's record to the call's return.
  double launch(const std::function<void()>& call, const char* range) {
    const auto stream = at::cuda::getCurrentCUDAStream();
    if (cover_cycles_ > 0) at::cuda::sleep(cover_cycles_);  // the call is launched while this spins
    start_.record(stream);
    const auto launched = std::chrono::steady_clock::now();
    nvtxRangePushA(range);  // a no-op unless a profiler is attached
    call();
    nvtxRangePop();
    const double launch_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - launched).count();
    stream_end_.record(stream);
    return launch_seconds;
  }

  // The host's seconds in a device-wide synchronize with nothing left to wait for, after a call
  // about `call_seconds` long on the current stream alone: a spin kernel as long, launched as a
  // timed call is, the median of a few. That wait grows with how long the host spun on the end
  // event (on the H200 ~8-25 us after 0.34 ms, 18-84 us after 16 ms, and one level per process:
  // bench/sync_probe.py), so one measured after a short flush left several microseconds per
  // sample that no other stream had run. Measured once per band of call lengths (kBandRatio
  // wide), the first time a call falls in it: a side's warm-up settles its band before its
  // timed samples. Work on another stream that ends within this wait after the host noticed the
  // current stream's end is not counted (the trace names side-stream work).
  double idle_wait(double call_seconds) {
    constexpr double kBandRatio = 1.2, kCalibrationSeconds = 0.05;
    call_seconds = std::max(call_seconds, 1e-6);
    const long band = std::lround(std::log(call_seconds) / std::log(kBandRatio));
    if (const auto found = idle_waits_.find(band); found != idle_waits_.end()) return found->second.wait_seconds;
    const auto cycles = static_cast<std::int64_t>(call_seconds * peak_hz_);
    const int calls = std::clamp(static_cast<int>(kCalibrationSeconds / call_seconds), 3, 21);
    std::vector<double> waits;
    for (int i = 0; i < calls; ++i) {
      flush_.zero_();
      launch([cycles] { at::cuda::sleep(cycles); }, "kbv idle wait");
      waits.push_back(device_wait_after_stream_end());
    }
    std::nth_element(waits.begin(), waits.begin() + calls / 2, waits.end());
    idle_waits_[band] = {call_seconds, waits[calls / 2]};
    return waits[calls / 2];
  }

  // Spins until `stream_end_` has happened (the host knows within one query, where the driver's
  // own wait can take several microseconds, more after a long one), then synchronizes the whole
  // device: the host's seconds in that synchronize, which waits only for work on other streams.
  double device_wait_after_stream_end() {
    while (!stream_end_.query()) {
    }
    const auto noticed = std::chrono::steady_clock::now();
    c10::cuda::device_synchronize();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - noticed).count();
  }

  struct IdleWait {
    double call_seconds;  // the first call in its band, the spin's length
    double wait_seconds;
  };

  bool device_sync_;
  double peak_hz_ = 0;
  std::map<long, IdleWait> idle_waits_;  // by band of call length
  std::int64_t cover_cycles_ = 0;
  at::Tensor flush_;
  at::cuda::CUDAEvent start_{cudaEventDefault}, stream_end_{cudaEventDefault};
};

}  // namespace

void synchronize(const c10::Device& device) {
  if (device.is_cuda()) c10::cuda::device_synchronize();
}

std::string cuda_driver_version() {
  int version = 0;
  C10_CUDA_CHECK(cudaDriverGetVersion(&version));
  return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}

std::unique_ptr<Timer> make_cuda_timer(const c10::Device& device, const protocol::Timing& timing) {
  return std::make_unique<CudaEventTimer>(device, timing);
}

}  // namespace kbv::measure
