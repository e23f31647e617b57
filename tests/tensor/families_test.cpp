// Hidden input families (PROTOCOL.md, "Correctness" 2) on real tensors.
#include <random>

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "kbv/inputs/families.h"

namespace kbv::inputs {
namespace {

using protocol::Family;

nlohmann::json params(Family family, std::uint64_t seed = 7) {
  std::mt19937_64 rng(seed);
  return draw_parameters(family, rng);
}

TEST(Families, KeepShapeDtypeAndDevice) {
  const at::Tensor like = at::rand({3, 5, 7}, at::kDouble);
  for (Family f : {Family::normal, Family::shifted, Family::heavy, Family::sparse, Family::rescaled, Family::powered}) {
    const at::Tensor x = redraw(like, f, params(f), 11);
    EXPECT_EQ(x.sizes(), like.sizes()) << protocol::name(f);
    EXPECT_EQ(x.scalar_type(), at::kDouble) << protocol::name(f);
    EXPECT_TRUE(at::isfinite(x).all().item<bool>()) << protocol::name(f);
  }
}

TEST(Families, NormalHasBothSigns) {
  // The identity "ReLU" survives [0, 1) inputs; normal inputs expose it.
  const at::Tensor x = redraw(at::rand({4096}), Family::normal, params(Family::normal), 3);
  EXPECT_GT((x < 0).sum().item<int64_t>(), 1000);
  EXPECT_GT((x > 0).sum().item<int64_t>(), 1000);
}

TEST(Families, ShiftedStaysInItsInterval) {
  const nlohmann::json p = params(Family::shifted);
  const double c = p["center"], w = p["half_width"];
  const at::Tensor x = redraw(at::rand({4096}), Family::shifted, p, 3);
  EXPECT_GE(x.min().item<double>(), c - w - 1e-5);
  EXPECT_LE(x.max().item<double>(), c + w + 1e-5);
  EXPECT_NEAR(x.mean().item<double>(), c, w / 10);
}

TEST(Families, SparseIsMostlyExactZeros) {
  const nlohmann::json p = params(Family::sparse);
  const at::Tensor x = redraw(at::rand({100000}), Family::sparse, p, 3);
  const double zero_share = (x == 0).to(at::kDouble).mean().item<double>();
  EXPECT_NEAR(zero_share, 1.0 - p["density"].get<double>(), 0.02);
  EXPECT_LE(x.abs().max().item<double>(), 1e3);
}

TEST(Families, HeavyHasOutliersFarBeyondItsScale) {
  const at::Tensor x = redraw(at::rand({100000}), Family::heavy, params(Family::heavy), 3);
  const double median_abs = x.abs().median().item<double>();
  EXPECT_GT(x.abs().max().item<double>(), 20 * median_abs);
}

TEST(Families, SameSeedSameValuesOtherSeedOtherValues) {
  const at::Tensor like = at::rand({256});
  const nlohmann::json p = params(Family::normal);
  EXPECT_TRUE(at::equal(redraw(like, Family::normal, p, 5), redraw(like, Family::normal, p, 5)));
  EXPECT_FALSE(at::equal(redraw(like, Family::normal, p, 5), redraw(like, Family::normal, p, 6)));
}

TEST(Families, ExactZerosOfTheProblemsInputsStayZero) {
  // An upper-triangular input keeps its triangle.
  const at::Tensor like = at::triu(at::rand({64, 64}) + 0.5);
  for (Family f : {Family::normal, Family::shifted, Family::heavy, Family::sparse, Family::rescaled, Family::powered}) {
    const at::Tensor x = redraw(like, f, params(f), 9);
    EXPECT_TRUE(at::equal(at::tril(x, -1), at::zeros_like(x))) << protocol::name(f);
  }
}

// The fallback families keep what a domain is made of: each entry's sign, and for powered which
// side of 1 its magnitude is on; they still move every value.
TEST(Families, TheFallbackFamiliesKeepSignsAndMoveMagnitudes) {
  const at::Tensor like = at::randn({4096}, at::kDouble);
  for (Family f : {Family::rescaled, Family::powered}) {
    for (std::uint64_t seed : {1, 2, 3}) {
      const nlohmann::json p = params(f, seed);
      const at::Tensor x = redraw(like, f, p, seed);
      EXPECT_TRUE(at::equal(x.sign(), like.sign())) << protocol::name(f);
      EXPECT_GT((x - like).abs().mean().item<double>(), 0.05 * like.abs().mean().item<double>()) << p.dump();
      if (f == Family::powered) {
        EXPECT_TRUE(at::equal(x.abs() < 1, like.abs() < 1)) << p.dump();
      }
    }
  }
  const nlohmann::json spread = params(Family::rescaled);
  const at::Tensor ratio = redraw(like, Family::rescaled, spread, 4) / like;
  EXPECT_LE(ratio.log().abs().max().item<double>(), spread["spread"].get<double>() + 1e-12);
}

TEST(Families, NonFloatingInputsAreLeftAlone) {
  const at::Tensor targets = at::randint(10, {32});
  const at::Tensor mask = at::rand({32}) > 0.5;
  EXPECT_TRUE(at::equal(redraw(targets, Family::normal, params(Family::normal), 1), targets));
  EXPECT_TRUE(at::equal(redraw(mask, Family::sparse, params(Family::sparse), 1), mask));
}

TEST(Families, Fp16InputsStayFinite) {
  const at::Tensor like = at::rand({4096}).to(at::kHalf);
  for (Family f : {Family::normal, Family::shifted, Family::heavy, Family::sparse, Family::rescaled, Family::powered}) {
    EXPECT_TRUE(at::isfinite(redraw(like, f, params(f), 2)).all().item<bool>()) << protocol::name(f);
  }
}

TEST(Families, ParametersFollowTheProtocolRanges) {
  std::mt19937_64 rng(1);
  for (int i = 0; i < 100; ++i) {
    const auto n = draw_parameters(Family::normal, rng);
    EXPECT_GE(n["std"].get<double>(), 0.5);
    EXPECT_LE(n["std"].get<double>(), 4.0);
    const auto s = draw_parameters(Family::shifted, rng);
    EXPECT_LE(std::abs(s["center"].get<double>()), 8.0);
    EXPECT_GE(s["half_width"].get<double>(), 0.25);
  }
}

}  // namespace
}  // namespace kbv::inputs
