// The two presets (PROTOCOL.md, "Presets"): what each fixes that a record's numbers depend on, and
// the protocol's JSON as records store it.
#include "kbv/protocol/protocol.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

namespace kbv::protocol {
namespace {

TEST(Presets, VerifiedHidesItsSeedsChecksFamiliesAndTimesUnderTf32) {
  const Protocol p = preset("verified");
  EXPECT_EQ(p.name, "verified");
  EXPECT_TRUE(p.secret_seeds);
  EXPECT_EQ(p.comparison, Comparison::scaled);
  EXPECT_EQ(p.families.size(), 5u);
  EXPECT_FALSE(p.reference_tf32.cublas);  // the reference: full fp32
  EXPECT_TRUE(p.baseline_tf32.cublas && p.baseline_tf32.cudnn);
  EXPECT_TRUE(p.candidate_tf32.cublas && p.candidate_tf32.cudnn);  // the same flags as the baseline
  EXPECT_TRUE(p.timing.use_median);
  EXPECT_TRUE(p.timing.device_sync);
  EXPECT_TRUE(p.timing.refresh_inputs);
  EXPECT_TRUE(p.timing.check_timed_outputs);
  EXPECT_TRUE(p.detection.enabled);
}

TEST(Presets, KernelbenchIsKernelBenchsOwnLoop) {
  const Protocol p = preset("kernelbench");
  EXPECT_FALSE(p.secret_seeds);
  EXPECT_EQ(p.fixed_seed, 42u);
  EXPECT_EQ(p.comparison, Comparison::allclose);
  EXPECT_EQ(p.families.size(), 1u);
  EXPECT_EQ(p.draws_per_family, 5);
  EXPECT_FALSE(p.baseline_tf32.cublas);  // PyTorch's defaults: cuBLAS TF32 off, cuDNN on
  EXPECT_TRUE(p.baseline_tf32.cudnn);
  EXPECT_EQ(p.timing.fixed_samples, 100);
  EXPECT_FALSE(p.timing.use_median);
  EXPECT_FALSE(p.timing.device_sync);
  EXPECT_FALSE(p.timing.refresh_inputs);
  EXPECT_FALSE(p.timing.check_timed_outputs);
  EXPECT_FALSE(p.detection.enabled);
}

TEST(Presets, AnUnknownNameSaysWhichAreKnown) {
  try {
    preset("fast");
    FAIL() << "preset(\"fast\") returned";
  } catch (const std::invalid_argument& unknown) {
    EXPECT_EQ(std::string(unknown.what()), "unknown protocol 'fast' (known: verified, kernelbench)");
  }
}

TEST(Presets, RecordsStoreEveryKnob) {
  const nlohmann::json verified = to_json(preset("verified"));
  EXPECT_EQ(verified["name"], "verified");
  EXPECT_EQ(verified["families"], nlohmann::json({"standard", "normal", "shifted", "heavy", "sparse"}));
  EXPECT_EQ(verified["fallback_families"], nlohmann::json({"rescaled", "powered"}));
  EXPECT_EQ(verified["timing"]["pool_sets"], 2);
  EXPECT_EQ(verified["detection"]["untimed_floor_seconds"], 0.02);
  EXPECT_EQ(verified["detection"]["untimed_fraction"], 0.05);
  EXPECT_EQ(verified["detection"]["untimed_device_floor_seconds"], 1e-4);
  EXPECT_EQ(verified["detection"]["untimed_device_fraction"], 0.01);
  EXPECT_NE(to_json(preset("kernelbench")), verified);
}

}  // namespace
}  // namespace kbv::protocol
