// The counting CPU allocator: every byte torch allocates is counted while it lives, and the
// pointers it hands out stay usable by code that needs raw allocations (oneDNN convolutions).
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "kbv/measure/memory.h"

namespace kbv::measure {
namespace {

TEST(CountingCpuAllocator, CountsLiveBytesAndPeak) {
  install_counting_cpu_allocator();
  auto meter = make_memory_meter(c10::Device(c10::kCPU));
  const std::int64_t before = meter->allocated();
  meter->reset_peak();
  {
    const at::Tensor a = at::empty({1 << 20}, at::kFloat);  // 4 MiB
    EXPECT_GE(meter->allocated() - before, 4 << 20);
    const at::Tensor b = at::empty({1 << 19}, at::kFloat);  // 2 MiB more
    EXPECT_GE(meter->peak() - before, 6 << 20);
  }
  EXPECT_EQ(meter->allocated(), before);
  EXPECT_GE(meter->peak() - before, 6 << 20);
  meter->reset_peak();
  EXPECT_EQ(meter->peak(), meter->allocated());
}

TEST(CountingCpuAllocator, ConvolutionsThatAllocateRawStillRun) {
  install_counting_cpu_allocator();
  const at::Tensor x = at::randn({2, 3, 16, 16}), w = at::randn({8, 3, 3, 3});
  const at::Tensor y = at::conv2d(x, w);
  EXPECT_EQ(y.sizes(), (std::vector<int64_t>{2, 8, 14, 14}));
  EXPECT_TRUE(at::allclose(y, at::conv2d(x.to(at::kDouble), w.to(at::kDouble)).to(at::kFloat), 1e-4, 1e-4));
}

}  // namespace
}  // namespace kbv::measure
