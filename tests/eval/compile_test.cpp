// `kbv compile`'s builds, through real workers: in the background (as `kbv run` builds on the GPU,
// while timing runs) they run at SCHED_IDLE, and otherwise at the normal policy.
#include "kbv/eval/compile.h"

#include <gtest/gtest.h>

#include <string>

namespace kbv::eval {
namespace {

std::string policy_of_build(bool background) {
  CompileRequest request;
  request.candidates = {std::string(KBV_TEST_DATA_DIR) + "/candidate_reports_scheduling.py"};
  request.background = background;
  request.timeout_seconds = 120;
  request.cache_dir = ::testing::TempDir();
  request.launch = {KBV_BINARY, KBV_PYTHON, {}, nullptr};
  const std::vector<CompileResult> results = compile_candidates(request);
  EXPECT_EQ(results.at(0).outcome, "runtime_error") << results.at(0).message;
  return results.at(0).message;
}

TEST(Compile, BuildsInTheBackgroundRunAtTheIdlePriority) {
  EXPECT_NE(policy_of_build(true).find("scheduling policy SCHED_IDLE"), std::string::npos) << policy_of_build(true);
}

TEST(Compile, OtherBuildsKeepTheNormalPriority) {
  EXPECT_NE(policy_of_build(false).find("scheduling policy SCHED_OTHER"), std::string::npos) << policy_of_build(false);
}

}  // namespace
}  // namespace kbv::eval
