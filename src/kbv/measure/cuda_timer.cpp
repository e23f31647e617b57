// CUDA events on the current stream around the call, with an optional device-wide synchronize
// before the end event so that work on any stream counts (PROTOCOL.md, "Timing"). A second end
// event recorded right after the call returns gives the current-stream-only figure beside it.
#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAFunctions.h>

#include "kbv/measure/timer.h"

namespace kbv::measure {
namespace {

class CudaEventTimer final : public Timer {
 public:
  CudaEventTimer(const c10::Device& device, const protocol::Timing& timing) : device_sync_(timing.device_sync) {
    std::int64_t bytes = timing.l2_flush_bytes;
    // Twice the L2, as reported by the device: writing it evicts whatever the last call left.
    if (bytes <= 0) bytes = 2 * static_cast<std::int64_t>(at::cuda::getDeviceProperties(device.index())->l2CacheSize);
    flush_ = at::empty({bytes}, at::TensorOptions().dtype(at::kByte).device(device));
  }

  void flush_cache() override { flush_.zero_(); }

  TimedCall time(const std::function<void()>& call) override {
    const auto stream = at::cuda::getCurrentCUDAStream();
    start_.record(stream);
    call();
    stream_end_.record(stream);
    if (device_sync_) c10::cuda::device_synchronize();
    end_.record(stream);
    end_.synchronize();
    return {start_.elapsed_time(end_) / 1e3, start_.elapsed_time(stream_end_) / 1e3};
  }

  nlohmann::json describe() const override {
    return {{"clock", "cuda events, current stream"}, {"device_sync", device_sync_}, {"l2_flush_bytes", flush_.numel()}};
  }

 private:
  bool device_sync_;
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
