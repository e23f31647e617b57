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

// Builds a candidate makes after its import (in __init__, on its first forward, inside a try)
// are made by kbv compile, into the folder its evaluation will use; one whose arguments exist only
// at run time is named, with why.
TEST_F(Compile, BuildsTheCandidateWouldMakeLaterAreMadeAhead) {
  CompileRequest request;
  request.candidates = {std::string(KBV_TEST_DATA_DIR) + "/candidate_lazy_builds.py"};
  request.timeout_seconds = 600;
  request.cache_dir = scratch().string();
  request.launch = {.executable = KBV_BINARY, .python = KBV_PYTHON};
  const CompileResult result = compile_candidates(request).at(0);
  ASSERT_EQ(result.outcome, "ok") << result.message;
  EXPECT_EQ(result.ahead["built"], nlohmann::json({"kbv_lazy_init", "kbv_lazy_forward"})) << result.ahead.dump();
  EXPECT_TRUE(result.ahead["failed"].empty()) << result.ahead.dump();
  ASSERT_EQ(result.ahead["missed"].size(), 1u) << result.ahead.dump();
  EXPECT_NE(result.ahead["missed"][0]["why"].get<std::string>().find("NameError"), std::string::npos);
  for (const char* name : {"kbv_lazy_init", "kbv_lazy_forward"}) {
    bool built = false;
    for (const auto& entry : std::filesystem::recursive_directory_iterator(scratch())) {
      built |= entry.path().parent_path().filename() == name && entry.path().extension() == ".so";
    }
    EXPECT_TRUE(built) << name << " has no built library under " << scratch();
  }
}

}  // namespace
}  // namespace kbv::eval
