// The CPU meter: c10's CPU allocator wrapped so that each allocation's size is counted when it
// is made and uncounted when its deleter runs; peak is the high-water mark since reset_peak().
#include <atomic>

#include <c10/core/CPUAllocator.h>

#include "kbv/measure/memory.h"

namespace kbv::measure {
namespace {

class CountingCpuAllocator final : public c10::Allocator {
 public:
  explicit CountingCpuAllocator(c10::Allocator* base) : base_(base) {}

  c10::DataPtr allocate(size_t bytes) override {
    auto* held = new Held{base_->allocate(bytes), bytes, this};
    const std::int64_t now = current_.fetch_add(static_cast<std::int64_t>(bytes)) + static_cast<std::int64_t>(bytes);
    std::int64_t seen = peak_.load();
    while (now > seen && !peak_.compare_exchange_weak(seen, now)) {
    }
    return {held->inner.get(), held, &Held::release, held->inner.device()};
  }

  void copy_data(void* dest, const void* src, std::size_t count) const override { default_copy_data(dest, src, count); }

  std::int64_t current() const { return current_.load(); }
  std::int64_t peak() const { return peak_.load(); }
  void reset_peak() { peak_.store(current_.load()); }

 private:
  struct Held {
    c10::DataPtr inner;
    size_t bytes;
    CountingCpuAllocator* owner;
    static void release(void* context) {
      auto* held = static_cast<Held*>(context);
      held->owner->current_.fetch_sub(static_cast<std::int64_t>(held->bytes));
      delete held;
    }
  };

  c10::Allocator* base_;
  std::atomic<std::int64_t> current_{0};
  std::atomic<std::int64_t> peak_{0};
};

CountingCpuAllocator* counting_allocator = nullptr;

class CpuMemoryMeter final : public MemoryMeter {
 public:
  std::int64_t allocated() override { return counting_allocator ? counting_allocator->current() : 0; }
  void reset_peak() override {
    if (counting_allocator) counting_allocator->reset_peak();
  }
  std::int64_t peak() override { return counting_allocator ? counting_allocator->peak() : 0; }
  std::optional<std::int64_t> driver_used() override { return std::nullopt; }
};

}  // namespace

void install_counting_cpu_allocator() {
  if (counting_allocator != nullptr) return;
  // Never freed: tensors alive at exit still point at it.
  counting_allocator = new CountingCpuAllocator(c10::GetDefaultCPUAllocator());
  c10::SetCPUAllocator(counting_allocator, /*priority=*/100);
}

std::unique_ptr<MemoryMeter> make_memory_meter(const c10::Device& device) {
  if (device.is_cuda()) return make_cuda_memory_meter(device);
  return std::make_unique<CpuMemoryMeter>();
}

}  // namespace kbv::measure
