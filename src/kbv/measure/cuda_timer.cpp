// CUDA events on the current stream around the call, with an optional device-wide synchronize
// before the end event so that work on any stream counts (PROTOCOL.md, "Timing"). A second end
// event recorded right after the call returns gives the current-stream-only figure beside it.
#include <algorithm>
#include <chrono>
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
    cover_cycles_ = static_cast<std::int64_t>(timing.launch_cover_seconds * peak_khz * 1e3);
    std::int64_t bytes = timing.l2_flush_bytes;
    // Twice the L2, as reported by the device: writing it evicts whatever the last call left.
    if (bytes <= 0) bytes = 2 * static_cast<std::int64_t>(at::cuda::getDeviceProperties(device.index())->l2CacheSize);
    flush_ = at::empty({bytes}, at::TensorOptions().dtype(at::kByte).device(device));
    if (device_sync_) sync_latency_ = measure_sync_latency();
  }

  void flush_cache() override { flush_.zero_(); }

  TimedCall time(const std::function<void()>& call, const char* range) override {
    const auto stream = at::cuda::getCurrentCUDAStream();
    if (cover_cycles_ > 0) at::cuda::sleep(cover_cycles_);  // the call is launched while this spins
    start_.record(stream);
    const auto launched = std::chrono::steady_clock::now();
    nvtxRangePushA(range);  // a no-op unless a profiler is attached
    call();
    nvtxRangePop();
    const double launch_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - launched).count();
    stream_end_.record(stream);
    if (device_sync_) c10::cuda::device_synchronize();
    end_.record(stream);
    end_.synchronize();
    const double stream_seconds = start_.elapsed_time(stream_end_) / 1e3;
    return {std::max(stream_seconds, start_.elapsed_time(end_) / 1e3 - sync_latency_), stream_seconds, launch_seconds};
  }

  nlohmann::json describe() const override {
    return {{"clock", "cuda events, current stream"}, {"device_sync", device_sync_}, {"l2_flush_bytes", flush_.numel()},
            {"sync_latency_seconds", sync_latency_}, {"launch_cover_cycles", cover_cycles_}};
  }

 private:
  // The end event of the device-wide figure is recorded once the host has returned from the
  // synchronize: the figure holds that round trip (6.5-8.6 us on the H200), which is no work of the
  // call's. Measured here as the call sees it (the host waiting while the GPU works: a flush), and
  // taken off each sample, never below the current stream's own figure. Work on other streams
  // that ends within this latency of the current stream's is not counted (the trace names it).
  double measure_sync_latency() {
    constexpr int kCalls = 21;
    const auto stream = at::cuda::getCurrentCUDAStream();
    std::vector<double> gaps;
    for (int i = 0; i < kCalls; ++i) {
      flush_.zero_();
      stream_end_.record(stream);
      c10::cuda::device_synchronize();
      end_.record(stream);
      end_.synchronize();
      gaps.push_back(stream_end_.elapsed_time(end_) / 1e3);
    }
    std::nth_element(gaps.begin(), gaps.begin() + kCalls / 2, gaps.end());
    return gaps[kCalls / 2];
  }

  bool device_sync_;
  double sync_latency_ = 0;
  std::int64_t cover_cycles_ = 0;
  at::Tensor flush_;
  at::cuda::CUDAEvent start_{cudaEventDefault}, stream_end_{cudaEventDefault}, end_{cudaEventDefault};
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
