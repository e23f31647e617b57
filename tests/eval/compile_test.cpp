// `kbv compile`'s builds, through real workers: in the background (as `kbv run` builds on the GPU,
// while timing runs) they run at SCHED_IDLE, and otherwise at the normal policy.
#include "kbv/eval/compile.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <string>

#include "kbv/common/remove_tree.h"
#include "kbv/eval/evaluation.h"
#include "kbv/protocol/protocol.h"

namespace kbv::eval {
namespace {

// The builds' cache, this process's own, removed after the suite.
std::filesystem::path scratch() {
  return std::filesystem::temp_directory_path() / ("kbv_compile_test_" + std::to_string(getpid()));
}

class Compile : public ::testing::Test {
 protected:
  static void TearDownTestSuite() { kbv::remove_tree(scratch()); }
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

// `kbv compile` of one test candidate into the suite's cache, in the foreground.
CompileResult compile_one(const std::string& name) {
  CompileRequest request;
  request.candidates = {std::string(KBV_TEST_DATA_DIR) + "/" + name};
  request.timeout_seconds = 600;
  request.cache_dir = scratch().string();
  request.launch = {.executable = KBV_BINARY, .python = KBV_PYTHON};
  return compile_candidates(request).at(0);
}

// An evaluation over the suite's cache of `candidate` against the example ReLU problem.
protocol::Record evaluate_relu(const std::string& name, const std::string& preset) {
  EvalRequest evaluation;
  evaluation.problem = std::string(KBV_EXAMPLES_DIR) + "/problems/1_ReLU.py";
  evaluation.candidate = std::string(KBV_TEST_DATA_DIR) + "/" + name;
  evaluation.protocol = protocol::preset(preset);
  evaluation.cache_dir = scratch().string();
  evaluation.launch = {.executable = KBV_BINARY, .python = KBV_PYTHON};
  return evaluate(evaluation);
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
  const CompileResult result = compile_one("candidate_lazy_builds.py");
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

// A build that fails inside a try (the candidate goes on with PyTorch) is tried once: kbv compile's
// import keeps its failure, its build ahead and the evaluation's import meet it again without
// building, and the evaluation still names the fallback.
TEST_F(Compile, ABuildThatFailedInsideATryIsNotBuiltAgain) {
  const CompileResult result = compile_one("candidate_failed_build_fallback.py");
  ASSERT_EQ(result.outcome, "ok") << result.message;
  ASSERT_EQ(result.ahead["failed"].size(), 1u) << result.ahead.dump();
  EXPECT_NE(result.ahead["failed"][0]["error"].get<std::string>().find("not built again"), std::string::npos)
      << result.ahead.dump();
  bool kept = false;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(scratch())) {
    kept |= entry.path().filename().string().starts_with("kbv-build-failed-");
  }
  EXPECT_TRUE(kept) << "no failed build kept under " << scratch();

  const protocol::Record record = evaluate_relu("candidate_failed_build_fallback.py", "verified");
  const auto fallback = std::find_if(record.findings.begin(), record.findings.end(),
                                     [](const protocol::Finding& f) { return f.id == "exception_fallback"; });
  ASSERT_NE(fallback, record.findings.end()) << "no exception_fallback; verdict " << protocol::name(record.verdict);
  EXPECT_NE(fallback->evidence.dump().find("not built again"), std::string::npos) << fallback->evidence.dump();
}

// A candidate that builds with `load` from sources it writes into a fresh temporary folder (a new
// path in every process) is built once: its evaluation after kbv compile finds the library built.
TEST_F(Compile, SourcesInATemporaryFolderAreBuiltOnce) {
  const CompileResult result = compile_one("candidate_temp_folder_sources.py");
  ASSERT_EQ(result.outcome, "ok") << result.message;
  std::filesystem::path library;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(scratch())) {
    if (entry.path().filename() == "kbv_temp_folder_sources.so") library = entry.path();
  }
  ASSERT_FALSE(library.empty()) << "no library built under " << scratch();
  const auto built_at = std::filesystem::last_write_time(library);

  const protocol::Record record = evaluate_relu("candidate_temp_folder_sources.py", "kernelbench");
  EXPECT_EQ(record.verdict, protocol::Verdict::pass) << protocol::name(record.verdict) << ": " << record.verdict_reason;
  EXPECT_TRUE(std::filesystem::last_write_time(library) == built_at) << library << " was built again";
}

}  // namespace
}  // namespace kbv::eval
