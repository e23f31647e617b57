// kbv audit's judgement (audit/audit_judge.h) on facts shaped as the worker's audit reply gives
// them: each benchmark defect named where the standard inputs show it, cured where a judged hidden
// family does not, and a sound problem left alone. tests/audit's e2e test runs the same judgement
// on real problems through the binary.
#include "kbv/audit/audit_judge.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace kbv::audit {
namespace {

using nlohmann::json;

const protocol::Protocol kVerified = protocol::verified();
const protocol::Protocol kKernelbench = protocol::kernelbench();
constexpr double kMemoryShare = 0.25;

// One draw's facts of a sound elementwise problem with one input and one output (tolerance 1e-4).
json sound() {
  return {{"outputs", {{{"finite", true}, {"max_abs", 3.0}, {"zeros_error", 1.0}}}},
          {"baseline_error", 1e-6},
          {"affine", {{{"input", 0}, {"output", 0}, {"scale", 1.0}, {"offset", 0.0}, {"error", 0.5}}}},
          {"other_draw_error", 1.2},
          {"replaced", {{{"input", 0}, {"input_change", 1.0}, {"error", 0.9}}}},
          {"sensitivity", {{"input_change", 0.01}, {"output_change", 0.01}}},
          {"bytes", 1 << 20},
          {"device_bytes", 1LL << 34}};
}

std::vector<FamilyFacts> families(const json& standard, const json& hidden = sound()) {
  return {{"standard", standard}, {"normal", hidden}, {"shifted", hidden}, {"heavy", hidden}};
}

std::vector<AuditFinding> judge(const std::vector<FamilyFacts>& f) {
  return judge_audit(f, kVerified, kKernelbench, kMemoryShare);
}

const AuditFinding* named(const std::vector<AuditFinding>& findings, const std::string& id) {
  for (const AuditFinding& f : findings) {
    if (f.id == id) return &f;
  }
  return nullptr;
}

TEST(AuditJudge, ASoundProblemHasNoFinding) { EXPECT_TRUE(judge(families(sound())).empty()); }

TEST(AuditJudge, AnIdentityOnTheStandardInputsIsCuredWhereAHiddenFamilyBreaksIt) {
  json standard = sound();
  standard["affine"][0]["error"] = 0.0;  // ReLU on [0, 1): the input itself
  const auto findings = judge(families(standard));
  const AuditFinding* identity = named(findings, "identity_under_inputs");
  ASSERT_TRUE(identity);
  EXPECT_TRUE(identity->cured);
  EXPECT_EQ(identity->evidence["fails_under"], json({"normal", "shifted", "heavy"}));
  // Where every family keeps it, the operation is affine: no defect.
  EXPECT_FALSE(named(judge(families(standard, standard)), "identity_under_inputs"));
}

TEST(AuditJudge, TinyOutputsThatZerosPassAreNamedWithEachProtocolsAnswer) {
  json standard = sound();
  standard["outputs"][0]["max_abs"] = 5e-5;  // within KernelBench's atol
  const auto findings = judge(families(standard));
  const AuditFinding* zeros = named(findings, "near_zero_output");
  ASSERT_TRUE(zeros);
  EXPECT_TRUE(zeros->evidence["passes_kernelbench"].get<bool>());
  EXPECT_FALSE(zeros->evidence["passes_verified_standard"].get<bool>());
  EXPECT_TRUE(zeros->cured);
}

TEST(AuditJudge, AConstantOutputIsOpenWhenNoFamilyMovesIt) {
  json constant = sound();
  constant["other_draw_error"] = 0.0;
  constant["replaced"][0]["error"] = 0.0;
  const auto findings = judge(families(constant, constant));
  const AuditFinding* found = named(findings, "constant_output");
  ASSERT_TRUE(found);
  EXPECT_FALSE(found->cured);
  EXPECT_FALSE(named(findings, "unused_input"));  // implied by a constant output, not named again
  // Saturated on the standard inputs only (tanh on [0, 1)): the other families move it.
  const auto saturated_findings = judge(families(constant));
  const AuditFinding* saturated = named(saturated_findings, "constant_output");
  ASSERT_TRUE(saturated);
  EXPECT_TRUE(saturated->cured);
}

TEST(AuditJudge, AnInputThatChangesNothingIsUnused) {
  json standard = sound();
  standard["replaced"].push_back({{"input", 1}, {"input_change", 1.0}, {"error", 0.0}});
  json hidden = standard;
  const auto unread = judge(families(standard, hidden));
  const AuditFinding* open = named(unread, "unused_input");
  ASSERT_TRUE(open);
  EXPECT_FALSE(open->cured);
  EXPECT_EQ(open->evidence["inputs"][0]["input"], 1);
  hidden["replaced"][1]["error"] = 0.4;  // read under the hidden families
  const auto read = judge(families(standard, hidden));
  const AuditFinding* cured = named(read, "unused_input");
  ASSERT_TRUE(cured);
  EXPECT_TRUE(cured->cured);
}

TEST(AuditJudge, OutputsThatBarelyFollowTheInputsAreLowSensitivity) {
  json standard = sound();
  standard["sensitivity"]["output_change"] = 1e-5;  // x + 1000 nudged by 1%
  const auto findings = judge(families(standard));
  const AuditFinding* low = named(findings, "low_sensitivity");
  ASSERT_TRUE(low);
  EXPECT_TRUE(low->cured);
  EXPECT_NEAR(low->evidence["output_change_per_input_change"].get<double>(), 1e-3, 1e-12);
}

TEST(AuditJudge, ARandomReferenceIsNamedAloneAndRoundingApart) {
  json random = sound();
  random["repeat_error"] = 0.3;  // dropout: its calls differ like its baseline does
  random["affine"][0]["error"] = 0.0;
  const auto findings = judge(families(random));
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].id, "stochastic_reference");
  json rounding = sound();
  rounding["repeat_error"] = 1e-5;  // a quarter of the 1e-4 tolerance at most: float atomics
  const auto rounded = judge(families(rounding));
  ASSERT_EQ(rounded.size(), 1u);
  EXPECT_EQ(rounded[0].id, "rounding_reference");
  EXPECT_TRUE(rounded[0].cured);
}

TEST(AuditJudge, FamiliesTheReferenceCannotTakeAreOutOfDomain) {
  json nan = sound();
  nan["outputs"][0]["finite"] = false;  // log of negative inputs
  const std::vector<FamilyFacts> f = {{"standard", sound()}, {"normal", nan}, {"shifted", nan}, {"heavy", sound()}};
  EXPECT_EQ(judged_hidden_families(f), 1);
  const auto findings = judge(f);
  const AuditFinding* out = named(findings, "out_of_domain_families");
  ASSERT_TRUE(out);
  EXPECT_EQ(out->evidence["families"].size(), 2u);
  EXPECT_EQ(out->evidence["judged_hidden_families"], 1);
  EXPECT_TRUE(out->evidence.contains("verified"));  // fewer than two judged: unverifiable
}

TEST(AuditJudge, InputsAndOutputsBeyondTheShareOfTheDeviceAreHuge) {
  json standard = sound();
  standard["bytes"] = 6LL << 30;
  standard["device_bytes"] = 16LL << 30;
  const auto findings = judge(families(standard));
  const AuditFinding* huge = named(findings, "huge_memory");
  ASSERT_TRUE(huge);
  EXPECT_NEAR(huge->evidence["share"].get<double>(), 0.375, 1e-12);
}

TEST(AuditJudge, NothingIsJudgedWhereTheStandardInputsFail) {
  json broken = sound();
  broken["outputs"][0]["finite"] = false;
  EXPECT_TRUE(judge(families(broken)).empty());
  EXPECT_TRUE(judge({}).empty());
}

}  // namespace
}  // namespace kbv::audit
