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
    peak_hz_ = peak_khz * 1e3;
    // Cycles at the peak clock: at a lower clock the cover only lasts longer.
    cover_cycles_ = static_cast<std::int64_t>(timing.launch_cover_seconds * peak_hz_);
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
    if (!device_sync_) return {stream_seconds, stream_seconds, launch_seconds};
    // The round trip measured once, at the start, was taken off every sample; but it moves with
    // the host's and the GPU's state (6.5-8.6 us at the start of five evaluations on the H200, up
    // to 30 us through stretches of one), and a 0.34 ms call's device-wide median moved 5% between
    // evaluations where its current-stream median moved 1.8%. So each sample's own round trip is
    // measured right after it, bounded by kMaxLatencyFactor times the first figure.
    const double latency = std::min(round_trip(kSampleLatencySpinSeconds), kMaxLatencyFactor * sync_latency_);
    return {std::max(stream_seconds, start_.elapsed_time(end_) / 1e3 - latency), stream_seconds, launch_seconds};
  }

  nlohmann::json describe() const override {
    return {{"clock", "cuda events, current stream"}, {"device_sync", device_sync_}, {"l2_flush_bytes", flush_.numel()},
            {"sync_latency_seconds", sync_latency_}, {"launch_cover_cycles", cover_cycles_}};
  }

 private:
  // The end event of the device-wide figure is recorded once the host has returned from the
  // synchronize: the figure holds that round trip (6.5-8.6 us on the H200), which is no work of the
  // call's. Measured as the call sees it (the host waiting while the GPU works), first here (the
  // median of 21: the bound) and then after each sample, and taken off that sample, never below
  // the current stream's own figure. Work on other streams that ends within this latency of the
  // current stream's is not counted (the trace names it).
  double measure_sync_latency() {
    constexpr int kCalls = 21;
    std::vector<double> gaps;
    for (int i = 0; i < kCalls; ++i) gaps.push_back(round_trip(kSampleLatencySpinSeconds));
    std::nth_element(gaps.begin(), gaps.begin() + kCalls / 2, gaps.end());
    return gaps[kCalls / 2];
  }

  // One round trip as a sample sees it: the host waits in the synchronize while the GPU works (a
  // spin of `spin_seconds`), then records the end event once it returns.
  double round_trip(double spin_seconds) {
    const auto stream = at::cuda::getCurrentCUDAStream();
    at::cuda::sleep(static_cast<std::int64_t>(spin_seconds * peak_hz_));
    probe_start_.record(stream);
    c10::cuda::device_synchronize();
    probe_end_.record(stream);
    probe_end_.synchronize();
    return probe_start_.elapsed_time(probe_end_) / 1e3;
  }

  // Long enough for the host to be waiting in the synchronize before the spin ends.
  static constexpr double kSampleLatencySpinSeconds = 20e-6;
  // A sample's round trip is trusted up to this multiple of the first measurement: a larger one
  // could hide work on other streams that ends after the current stream's.
  static constexpr double kMaxLatencyFactor = 3;

  bool device_sync_;
  double peak_hz_ = 0;
  double sync_latency_ = 0;  // the first measurement, the bound of each sample's own
  std::int64_t cover_cycles_ = 0;
  at::Tensor flush_;
  at::cuda::CUDAEvent start_{cudaEventDefault}, stream_end_{cudaEventDefault}, end_{cudaEventDefault};
  at::cuda::CUDAEvent probe_start_{cudaEventDefault}, probe_end_{cudaEventDefault};
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
