// Outputs whose memory kbv can vouch for (hacks::foreign_outputs): torch's own allocations, views
// and empty tensors are; from_blob over a buffer of the caller's, with or without a deleter, is not.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <vector>

#include "kbv/hacks/integrity.h"
#include "kbv/measure/memory.h"

namespace kbv::hacks {
namespace {

TEST(ForeignOutputs, TorchAllocationsAndTheirViewsAreVouchedFor) {
  measure::install_counting_cpu_allocator();
  const at::Tensor a = at::relu(at::randn({64, 64}));
  EXPECT_TRUE(foreign_outputs({a, a.t(), a.slice(0, 1, 3), at::empty({0})}).empty());
}

TEST(ForeignOutputs, FromBlobIsForeignWithOrWithoutADeleter) {
  measure::install_counting_cpu_allocator();
  std::vector<float> buffer(16, 1.0f);
  const at::Tensor borrowed = at::from_blob(buffer.data(), {16});
  bool deleted = false;
  {
    const at::Tensor owned = at::from_blob(buffer.data(), {16}, [&](void*) { deleted = true; });
    EXPECT_EQ(foreign_outputs({at::ones({4}), borrowed, owned}), (std::vector<size_t>{1, 2}));
  }
  EXPECT_TRUE(deleted);
}

}  // namespace
}  // namespace kbv::hacks
