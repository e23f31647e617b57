// The GPU meter: the caching allocator's own statistics, plus cudaMemGetInfo for the driver's
// count, which also sees memory the candidate took with raw cudaMalloc.
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAException.h>
#include <cuda_runtime_api.h>

#include "kbv/measure/memory.h"

namespace kbv::measure {
namespace {

class CudaMemoryMeter final : public MemoryMeter {
 public:
  explicit CudaMemoryMeter(const c10::Device& device) : index_(device.index() < 0 ? 0 : device.index()) {}

  std::int64_t allocated() override { return bytes().current; }
  void reset_peak() override { c10::cuda::CUDACachingAllocator::resetPeakStats(index_); }
  std::int64_t peak() override { return bytes().peak; }
  std::optional<std::int64_t> driver_used() override {
    size_t free = 0, total = 0;
    C10_CUDA_CHECK(cudaMemGetInfo(&free, &total));
    return static_cast<std::int64_t>(total - free);
  }
  std::int64_t capacity() override {
    size_t free = 0, total = 0;
    C10_CUDA_CHECK(cudaMemGetInfo(&free, &total));
    return static_cast<std::int64_t>(total);
  }

 private:
  c10::CachingAllocator::Stat bytes() {
    const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(index_);
    return stats.allocated_bytes[static_cast<size_t>(c10::CachingAllocator::StatType::AGGREGATE)];
  }
  c10::DeviceIndex index_;
};

}  // namespace

std::unique_ptr<MemoryMeter> make_cuda_memory_meter(const c10::Device& device) {
  return std::make_unique<CudaMemoryMeter>(device);
}

}  // namespace kbv::measure
