// The correctness rules of PROTOCOL.md ("Correctness" 3) on real LibTorch tensors.
#include <cmath>
#include <limits>

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "kbv/check/comparison.h"

namespace kbv::check {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
const double kNaN = std::nan("");

TEST(ScaledError, ExactMatchIsZero) {
  const at::Tensor r = at::randn({64, 64});
  EXPECT_EQ(scaled_error(r.clone(), r), 0.0);
}

TEST(ScaledError, ZerosDoNotPassAnOutputOfTinyValues) {
  // A softmax over 65536-wide rows: every value about 1.5e-5. allclose(1e-4) passes zeros;
  // the scaled error of zeros is |r| / (rms + |r|), about 0.5.
  const at::Tensor r = at::softmax(at::rand({4, 65536}), 1);
  const at::Tensor zeros = at::zeros_like(r);
  EXPECT_TRUE(check::allclose(zeros, r, 1e-4, 1e-4));
  EXPECT_GT(scaled_error(zeros, r), 0.4);
}

TEST(ScaledError, RelativeNoiseOfFp32SizeIsTiny) {
  const at::Tensor r = at::randn({1000}, at::kDouble);
  const at::Tensor x = r.to(at::kFloat);  // rounding only
  EXPECT_LT(scaled_error(x, r), 1e-7);
}

TEST(ScaledError, IsScaleInvariant) {
  const at::Tensor r = at::randn({256}, at::kDouble);
  const at::Tensor x = r + 1e-3 * at::randn({256}, at::kDouble);
  const double error = scaled_error(x, r);
  EXPECT_NEAR(scaled_error(x * 1e-6, r * 1e-6), error, 1e-9 * error);
}

TEST(ScaledError, NonFiniteMustMatchTheReference) {
  const at::Tensor r = at::tensor({1.0, kNaN, kInf, -kInf});
  EXPECT_EQ(scaled_error(r.clone(), r), 0.0);
  EXPECT_EQ(scaled_error(at::tensor({1.0, 0.0, kInf, -kInf}), r), kInf);   // number for NaN
  EXPECT_EQ(scaled_error(at::tensor({1.0, kNaN, -kInf, -kInf}), r), kInf); // wrong sign of inf
  EXPECT_EQ(scaled_error(at::tensor({kNaN, kNaN, kInf, -kInf}), r), kInf); // NaN for a number
}

TEST(ScaledError, AllZeroReferencePassesOnlyZeros) {
  const at::Tensor r = at::zeros({8});
  EXPECT_EQ(scaled_error(at::zeros({8}), r), 0.0);
  EXPECT_EQ(scaled_error(at::full({8}, 1e-30), r), kInf);
}

TEST(ScaledError, IntegerOutputsCompareExactly) {
  const at::Tensor r = at::arange(10);
  EXPECT_EQ(scaled_error(r.clone(), r), 0.0);
  EXPECT_EQ(scaled_error(r + 1, r), kInf);
}

TEST(ScaledError, GivenRmsReplacesTheSampleEstimate) {
  const at::Tensor r = at::tensor({1.0, 1.0});
  const at::Tensor x = at::tensor({1.1, 1.0});
  EXPECT_NEAR(scaled_error(x, r), 0.1 / 2.0, 1e-12);             // rms 1 + |r| 1
  EXPECT_NEAR(scaled_error(x, r, 9.0), 0.1 / 10.0, 1e-12);       // rms 9 + |r| 1
}

TEST(Allclose, MatchesKernelBenchTolerance) {
  const at::Tensor r = at::ones({4});
  EXPECT_TRUE(check::allclose(r + 1.5e-4, r, 1e-4, 1e-4));   // 1e-4 + 1e-4 * 1
  EXPECT_FALSE(check::allclose(r + 3e-4, r, 1e-4, 1e-4));
  EXPECT_FALSE(check::allclose(at::full({4}, kNaN), at::full({4}, kNaN), 1e-4, 1e-4));  // equal_nan=False
}

TEST(StructureMismatch, NamesCountShapeAndDtype) {
  const std::vector<at::Tensor> ref = {at::zeros({2, 3})};
  EXPECT_FALSE(structure_mismatch({at::zeros({2, 3})}, ref).has_value());
  EXPECT_EQ(*structure_mismatch({at::zeros({6})}, ref), "output shape [6], expected [2, 3]");
  EXPECT_EQ(*structure_mismatch({at::zeros({2, 3}, at::kDouble)}, ref), "output dtype Double, expected Float");
  EXPECT_EQ(*structure_mismatch({}, ref), "returned 0 outputs, the reference 1");
}

}  // namespace
}  // namespace kbv::check
