// The correctness rules of PROTOCOL.md ("Correctness" 3) on real LibTorch tensors.
#include <cmath>
#include <limits>
#include <optional>

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "kbv/check/comparison.h"

namespace kbv::check {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
const double kNaN = std::nan("");

// The two halves of KernelBench's judgement, taken apart.
double max_abs_difference(const at::Tensor& x, const at::Tensor& r) {
  return closeness(x, r, 1e-4, 1e-4).max_abs_difference;
}
bool kernelbench_allclose(const at::Tensor& x, const at::Tensor& r, double atol, double rtol) {
  return closeness(x, r, atol, rtol).allclose;
}

TEST(ScaledError, ExactMatchIsZero) {
  const at::Tensor r = at::randn({64, 64});
  EXPECT_EQ(scaled_error(r.clone(), r), 0.0);
}

TEST(ScaledError, ZerosDoNotPassAnOutputOfTinyValues) {
  // A softmax over 65536-wide rows: every value about 1.5e-5. allclose(1e-4) passes zeros;
  // the scaled error of zeros is |r| / (rms + |r|), about 0.5.
  const at::Tensor r = at::softmax(at::rand({4, 65536}), 1);
  const at::Tensor zeros = at::zeros_like(r);
  EXPECT_TRUE(kernelbench_allclose(zeros, r, 1e-4, 1e-4));
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
  EXPECT_EQ(scaled_error(at::tensor({1.0, 0.0, kInf, -kInf}), r), kInf);    // number for NaN
  EXPECT_EQ(scaled_error(at::tensor({1.0, kNaN, -kInf, -kInf}), r), kInf);  // wrong sign of inf
  EXPECT_EQ(scaled_error(at::tensor({kNaN, kNaN, kInf, -kInf}), r), kInf);  // NaN for a number
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
  EXPECT_NEAR(scaled_error(x, r), 0.1 / 2.0, 1e-12);        // rms 1 + |r| 1
  EXPECT_NEAR(scaled_error(x, r, 9.0), 0.1 / 10.0, 1e-12);  // rms 9 + |r| 1
}

// Contiguous CPU tensors of one dtype take a fused pass, others (here: transposed views) the
// tensor expressions; both must give the same errors, non-finite values included.
TEST(ScaledError, FusedPassAgreesWithTheExpressions) {
  for (const at::ScalarType type : {at::kFloat, at::kDouble, at::kHalf, at::kBFloat16}) {
    at::Tensor r = at::randn({300, 200}).to(type);
    at::Tensor x = (r.to(at::kDouble) * (1 + 1e-3 * at::randn({300, 200}, at::kDouble))).to(type);
    r.index_put_({0, 0}, kNaN);
    x.index_put_({0, 0}, kNaN);
    r.index_put_({1, 1}, kInf);
    x.index_put_({1, 1}, kInf);
    const at::Tensor rt = r.t().contiguous().t(), xt = x.t().contiguous().t();  // same values, not contiguous
    ASSERT_FALSE(rt.is_contiguous());
    EXPECT_NEAR(finite_rms(r), finite_rms(rt), 1e-12 * finite_rms(rt)) << type;
    const double error = scaled_error(xt, rt);
    EXPECT_GT(error, 0.0) << type;
    EXPECT_NEAR(scaled_error(x, r), error, 1e-9 * error) << type;
    EXPECT_NEAR(scaled_error(x, r, 3.0), scaled_error(xt, rt, 3.0), 1e-9 * error) << type;
    x.index_put_({2, 2}, kNaN);  // NaN where the reference is finite
    EXPECT_EQ(scaled_error(x, r), kInf) << type;
    EXPECT_EQ(scaled_error(x.t().contiguous().t(), rt), kInf) << type;
  }
  const at::Tensor zeros = at::zeros({1 << 18});
  EXPECT_EQ(scaled_error(zeros.clone(), zeros), 0.0);
  EXPECT_EQ(scaled_error(at::full({1 << 18}, 1e-30), zeros), kInf);
}

// The expressions go slice by slice (2^24 elements): what lies past the first slice counts, and
// the RMS is the whole tensor's. (bfloat16: float and double views take the chunks.)
TEST(ScaledError, ExpressionsCoverEverySlice) {
  const int64_t side = 4100;  // 16.8 M elements: two slices
  at::Tensor r = at::randn({side, side}).to(at::kBFloat16);
  at::Tensor x = r.clone();
  x.index_put_({side - 1, side - 2}, r.index({side - 1, side - 2}) + 0.5);  // flattened: the second slice
  const at::Tensor rt = r.t().contiguous().t(), xt = x.t().contiguous().t();
  EXPECT_NEAR(scaled_error(xt, rt), scaled_error(x, r), 1e-12);
  EXPECT_GT(scaled_error(xt, rt), 0.1);
  EXPECT_NEAR(finite_rms(rt), finite_rms(r), 1e-9);
  EXPECT_EQ(max_abs_difference(xt, rt), max_abs_difference(x, r));
  x.index_put_({side - 1, side - 1}, kNaN);
  EXPECT_EQ(scaled_error(x.t().contiguous().t(), rt), kInf);
  EXPECT_FALSE(all_finite({x}));
  EXPECT_FALSE(all_finite({x.t().contiguous().t()}));
  EXPECT_TRUE(all_finite({r, rt}));
}

// Float and double tensors the fused pass does not take (here: transposed views; on the device,
// every large output) go chunk by chunk in their own dtype; the slices decide wherever a value is
// not finite or past the dtype's range. Against the fused float64 pass over the same values.
TEST(ScaledError, ChunksAgreeWithTheFusedPass) {
  const auto transposed = [](const at::Tensor& t) { return t.t().contiguous().t(); };
  for (const at::ScalarType type : {at::kFloat, at::kDouble}) {
    const double within = type == at::kFloat ? 1e-6 : 1e-12;
    for (const double magnitude : {1.0, 1e-30, 1e30}) {
      const at::Tensor r = transposed((at::randn({300, 200}, at::kDouble) * magnitude).to(type));
      const at::Tensor x = transposed((r.to(at::kDouble) * (1 + 1e-3 * at::randn({300, 200}, at::kDouble))).to(type));
      const double rms = finite_rms(r.contiguous());
      const std::optional<double> chunked = chunked_scaled_error(x, r, rms);
      ASSERT_TRUE(chunked.has_value()) << type << " " << magnitude;
      const double error = scaled_error(x.contiguous(), r.contiguous());
      EXPECT_GT(error, 1e-4) << type << " " << magnitude;
      EXPECT_NEAR(*chunked, error, within * error) << type << " " << magnitude;
      EXPECT_EQ(scaled_error(x, r, rms), *chunked) << type << " " << magnitude;  // the path taken
      ASSERT_TRUE(chunked_rms(r).has_value()) << type << " " << magnitude;
      EXPECT_NEAR(*chunked_rms(r), rms, 1e-12 * rms) << type << " " << magnitude;
    }
    // The slices decide past float's range, on a reference of zeros, on non-finite values.
    const at::Tensor huge = transposed(at::full({64, 64}, 3e38, type)), near = huge * 0.999;
    EXPECT_EQ(chunked_scaled_error(near, huge, finite_rms(huge)).has_value(), type == at::kDouble);
    EXPECT_NEAR(scaled_error(near, huge), scaled_error(near.contiguous(), huge.contiguous()), 1e-12) << type;
    const at::Tensor zeros = transposed(at::zeros({64, 64}, type));
    EXPECT_FALSE(chunked_scaled_error(zeros, zeros, 0.0).has_value()) << type;
    EXPECT_EQ(scaled_error(zeros.clone(), zeros), 0.0) << type;
    EXPECT_EQ(scaled_error(transposed(at::full({64, 64}, 1e-30, type)), zeros), kInf) << type;
    at::Tensor r = at::randn({64, 64}).to(type), x = r.clone();
    r.index_put_({3, 5}, kInf);
    x.index_put_({3, 5}, kInf);
    EXPECT_FALSE(chunked_rms(transposed(r)).has_value()) << type;
    EXPECT_FALSE(chunked_scaled_error(transposed(x), transposed(r), 1.0).has_value()) << type;
    EXPECT_EQ(scaled_error(transposed(x), transposed(r)), 0.0) << type;
    x.index_put_({3, 5}, -kInf);
    EXPECT_EQ(scaled_error(transposed(x), transposed(r)), kInf) << type;
    EXPECT_NEAR(finite_rms(transposed(r)), finite_rms(r), 1e-12 * finite_rms(r)) << type;
  }
}

// Past the first chunk (2^26 elements) counts too.
TEST(ScaledError, ChunksCoverEveryChunk) {
  const int64_t side = 8200;  // 67.2 M elements: two chunks
  const at::Tensor r = at::randn({side, side});
  at::Tensor x = r.clone();
  x.index_put_({side - 1, side - 2}, r.index({side - 1, side - 2}) + 0.5);  // flattened: the second chunk
  const double rms = finite_rms(r);
  const std::optional<double> chunked = chunked_scaled_error(x, r, rms);
  ASSERT_TRUE(chunked.has_value());
  EXPECT_GT(*chunked, 0.1);
  EXPECT_NEAR(*chunked, scaled_error(x, r), 1e-6 * *chunked);
  EXPECT_NEAR(*chunked_rms(r), rms, 1e-9);
}

TEST(ScaledError, DifferentShapesAreNotComparable) {
  EXPECT_EQ(scaled_error(at::zeros({4, 1}), at::zeros({4})), kInf);
  EXPECT_EQ(scaled_error(at::zeros({1}), at::zeros({4})), kInf);  // no broadcasting
}

TEST(MaxAbsDifference, FusedPassAgreesWithTheExpression) {
  for (const at::ScalarType type : {at::kFloat, at::kDouble, at::kHalf}) {
    const at::Tensor r = at::randn({300, 200}).to(type);
    const at::Tensor x = (r.to(at::kFloat) + 1e-2 * at::randn({300, 200})).to(type);
    const double expected = (x.to(at::kDouble) - r.to(at::kDouble)).abs().max().item<double>();
    EXPECT_EQ(max_abs_difference(x, r), expected) << type;
    EXPECT_EQ(max_abs_difference(x.t().contiguous().t(), r.t().contiguous().t()), expected)
        << type;  // the expression's path
    at::Tensor nan = x.clone();
    nan.index_put_({7, 7}, kNaN);
    EXPECT_TRUE(std::isnan(max_abs_difference(nan, r))) << type;
    EXPECT_TRUE(std::isnan(max_abs_difference(nan.t().contiguous().t(), r.t().contiguous().t()))) << type;
  }
  EXPECT_EQ(max_abs_difference(at::zeros({0}), at::zeros({0})), 0.0);
}

TEST(Closeness, OverOutputsEveryPairCountsAndANaNWins) {
  const at::Tensor r = at::ones({4});
  const Closeness both = closeness({r + 3e-4, r.clone()}, {r, r}, 1e-4, 1e-4);
  EXPECT_FALSE(both.allclose);
  EXPECT_NEAR(both.max_abs_difference, 3e-4, 1e-7);
  const Closeness nan = closeness({at::full({4}, kNaN), r + 1.0}, {r, r}, 1e-4, 1e-4);
  EXPECT_TRUE(std::isnan(nan.max_abs_difference));
  EXPECT_TRUE(closeness(std::vector<at::Tensor>{r.clone()}, {r}, 1e-4, 1e-4).allclose);
}

TEST(Allclose, MatchesKernelBenchTolerance) {
  const at::Tensor r = at::ones({4});
  EXPECT_TRUE(kernelbench_allclose(r + 1.5e-4, r, 1e-4, 1e-4));  // 1e-4 + 1e-4 * 1
  EXPECT_FALSE(kernelbench_allclose(r + 3e-4, r, 1e-4, 1e-4));
  EXPECT_FALSE(kernelbench_allclose(at::full({4}, kNaN), at::full({4}, kNaN), 1e-4, 1e-4));  // equal_nan=False
}

// The fused pass (contiguous float and double) answers as torch's allclose does, at the boundary
// of the tolerance too: x = r + d for d around atol + rtol * |r|.
TEST(Allclose, FusedPassAgreesWithTorch) {
  for (const at::ScalarType type : {at::kFloat, at::kDouble}) {
    const at::Tensor r = at::randn({4096}, type);
    const at::Tensor bound = 1e-4 + 1e-4 * r.abs();
    for (const double f : {0.5, 0.999999, 1.0, 1.000001, 2.0}) {
      const at::Tensor x = r + f * bound;
      for (int64_t i = 0; i < 64; ++i) {  // one element at a time at the boundary, the rest equal
        at::Tensor one = r.clone();
        one[i] = x[i];
        EXPECT_EQ(kernelbench_allclose(one, r, 1e-4, 1e-4), at::allclose(one, r, 1e-4, 1e-4))
            << type << " f=" << f << " i=" << i;
      }
      EXPECT_EQ(kernelbench_allclose(x, r, 1e-4, 1e-4), at::allclose(x, r, 1e-4, 1e-4)) << type << " f=" << f;
    }
    const at::Tensor inf = at::full({8}, kInf, type);
    EXPECT_TRUE(kernelbench_allclose(inf.clone(), inf, 1e-4, 1e-4));
    EXPECT_FALSE(kernelbench_allclose(-inf, inf, 1e-4, 1e-4));
  }
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
