// The CPU meter: c10's CPU allocator wrapped so that each allocation's size is counted when it
// is made and uncounted when it is freed; peak is the high-water mark since reset_peak().
// Its data pointers stay "simple" (context == data, one raw deleter), as callers of
// raw_allocate (oneDNN convolutions, for one) require; sizes are found by address. While poison
// is on, every new block is filled with all-ones bytes (hacks/poison.h).
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <mutex>
#include <unordered_map>

#include <c10/core/CPUAllocator.h>

#include "kbv/measure/memory.h"

namespace kbv::measure {
namespace {

class CountingCpuAllocator final : public c10::Allocator {
 public:
  explicit CountingCpuAllocator(c10::Allocator* base) : base_(base), base_deleter_(base->raw_deleter()) {}

  c10::DataPtr allocate(size_t bytes) override {
    void* data = base_->raw_allocate(bytes);
    if (poison_.load(std::memory_order_relaxed) && data != nullptr) std::memset(data, 0xFF, bytes);
    {
      std::lock_guard lock(mutex_);
      sizes_[data] = bytes;
      current_ += static_cast<std::int64_t>(bytes);
      peak_ = std::max(peak_, current_);
    }
    return {data, data, &release, c10::Device(c10::kCPU)};
  }

  c10::DeleterFnPtr raw_deleter() const override { return &release; }

  void copy_data(void* dest, const void* src, std::size_t count) const override { default_copy_data(dest, src, count); }

  std::int64_t current() {
    std::lock_guard lock(mutex_);
    return current_;
  }
  std::int64_t peak() {
    std::lock_guard lock(mutex_);
    return peak_;
  }
  void reset_peak() {
    std::lock_guard lock(mutex_);
    peak_ = current_;
  }

  void set_poison(bool on) { poison_.store(on); }

  static inline CountingCpuAllocator* instance = nullptr;

 private:
  static void release(void* data) {
    if (data == nullptr) return;
    CountingCpuAllocator* self = instance;
    {
      std::lock_guard lock(self->mutex_);
      auto found = self->sizes_.find(data);
      if (found != self->sizes_.end()) {
        self->current_ -= static_cast<std::int64_t>(found->second);
        self->sizes_.erase(found);
      }
    }
    self->base_deleter_(data);
  }

  c10::Allocator* base_;
  c10::DeleterFnPtr base_deleter_;
  std::mutex mutex_;
  std::unordered_map<void*, size_t> sizes_;
  std::int64_t current_ = 0;
  std::int64_t peak_ = 0;
  std::atomic<bool> poison_{false};
};

class CpuMemoryMeter final : public MemoryMeter {
 public:
  std::int64_t allocated() override { return allocator() ? allocator()->current() : 0; }
  void reset_peak() override {
    if (allocator()) allocator()->reset_peak();
  }
  std::int64_t peak() override { return allocator() ? allocator()->peak() : 0; }
  std::optional<std::int64_t> driver_used() override { return std::nullopt; }
  std::int64_t capacity() override {
    return static_cast<std::int64_t>(sysconf(_SC_PHYS_PAGES)) * static_cast<std::int64_t>(sysconf(_SC_PAGESIZE));
  }

 private:
  static CountingCpuAllocator* allocator() { return CountingCpuAllocator::instance; }
};

}  // namespace

void install_counting_cpu_allocator() {
  if (CountingCpuAllocator::instance != nullptr) return;
  // Never freed: tensors alive at exit still point at it.
  CountingCpuAllocator::instance = new CountingCpuAllocator(c10::GetDefaultCPUAllocator());
  c10::SetCPUAllocator(CountingCpuAllocator::instance, /*priority=*/100);
}

void set_cpu_allocation_poison(bool on) {
  if (CountingCpuAllocator::instance != nullptr) CountingCpuAllocator::instance->set_poison(on);
}

std::unique_ptr<MemoryMeter> make_memory_meter(const c10::Device& device) {
  if (device.is_cuda()) return make_cuda_memory_meter(device);
  return std::make_unique<CpuMemoryMeter>();
}

}  // namespace kbv::measure
