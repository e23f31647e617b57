// Memory meters (PROTOCOL.md, "Memory"): allocator bytes in use, the peak since a reset, and,
// on the GPU, the driver's view of used device memory (growth the caching allocator does not
// account for is raw cudaMalloc).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include <c10/core/Device.h>

namespace kbv::measure {

class MemoryMeter {
 public:
  virtual ~MemoryMeter() = default;
  virtual std::int64_t allocated() = 0;
  virtual void reset_peak() = 0;
  virtual std::int64_t peak() = 0;
  virtual std::optional<std::int64_t> driver_used() = 0;
  virtual std::int64_t capacity() = 0;  // the device's memory: GPU total, or the host's RAM
};

// On the CPU, counts every byte torch allocates through a wrapping allocator; it must be
// installed before the first tensor is allocated (worker start).
void install_counting_cpu_allocator();
// While on, CPU blocks are handed out filled with all-ones bytes (NaN as floats): hacks/poison.h.
void set_cpu_allocation_poison(bool on);

std::unique_ptr<MemoryMeter> make_memory_meter(const c10::Device& device);
std::unique_ptr<MemoryMeter> make_cuda_memory_meter(const c10::Device& device);  // cuda_memory.cpp

}  // namespace kbv::measure
