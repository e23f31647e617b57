#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "kbv/check/comparison.h"
#include "kbv/check/sketch.h"

namespace kbv::check {
namespace {

TEST(Sketch, SameSeedSamplesTheSamePositions) {
  const at::Tensor out = at::randn({64, 64});
  const auto a = sketch({out}, 17, 512, at::kCPU), b = sketch({out.clone()}, 17, 512, at::kCPU);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].numel(), 512);
  EXPECT_EQ(a[0].scalar_type(), at::kDouble);
  EXPECT_TRUE(at::equal(a[0], b[0]));
  EXPECT_FALSE(at::equal(a[0], sketch({out}, 18, 512, at::kCPU)[0]));
  // Gathered now, taken to the host later: the same values.
  EXPECT_TRUE(at::equal(a[0], to_host(gather_sketch({out}, 17, 512, at::kCPU))[0]));
}

TEST(Sketch, CatchesAStaleOutput) {
  // A result cached from earlier inputs differs at the sampled positions.
  const at::Tensor fresh = at::relu(at::randn({4096}));
  const at::Tensor stale = at::relu(at::randn({4096}));
  const auto reference = sketch({fresh}, 5, 256, at::kCPU), candidate = sketch({stale}, 5, 256, at::kCPU);
  EXPECT_GT(scaled_error(candidate[0], reference[0], finite_rms(fresh)), 0.1);
  EXPECT_EQ(scaled_error(sketch({fresh}, 5, 256, at::kCPU)[0], reference[0], finite_rms(fresh)), 0.0);
}

TEST(Sketch, EmptyOutputsGiveEmptySketches) { EXPECT_EQ(sketch({at::empty({0, 3})}, 1, 64, at::kCPU)[0].numel(), 0); }

}  // namespace
}  // namespace kbv::check
