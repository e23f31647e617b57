// `kbv compile`'s builds, through real workers: in the background (as `kbv run` builds on the GPU,
// while timing runs) they run at SCHED_IDLE, and otherwise at the normal policy.
#include "kbv/eval/compile.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <string>

#include "support/remove_tree.h"

namespace kbv::eval {
namespace {

// The builds' cache, this process's own, removed after the suite.
std::filesystem::path scratch() {
  return std::filesystem::temp_directory_path() / ("kbv_compile_test_" + std::to_string(getpid()));
}

class Compile : public ::testing::Test {
 protected:
  static void TearDownTestSuite() { kbv::testing::remove_tree(scratch()); }
};

// The policy the candidate's import saw: it raises with its name.
std::string policy_of_build(bool background) {
  CompileRequest request;
  request.candidates = {std::string(KBV_TEST_DATA_DIR) + "/candidate_reports_scheduling.py"};
  request.background = background;
  request.timeout_seconds = 120;
  request.cache_dir = scratch().string();
  request.launch = {.executable = KBV_BINARY, .python = KBV_PYTHON};
  const std::vector<CompileResult> results = compile_candidates(request);
  EXPECT_EQ(results.at(0).outcome, "runtime_error") << results.at(0).message;
  return results.at(0).message;
}

TEST_F(Compile, BuildsInTheBackgroundRunAtTheIdlePriority) {
  const std::string message = policy_of_build(true);
  EXPECT_NE(message.find("scheduling policy SCHED_IDLE"), std::string::npos) << message;
}

TEST_F(Compile, OtherBuildsKeepTheNormalPriority) {
  const std::string message = policy_of_build(false);
  EXPECT_NE(message.find("scheduling policy SCHED_OTHER"), std::string::npos) << message;
}

}  // namespace
}  // namespace kbv::eval
