// kbv serve's reading of one evaluate request (serve/submission.h) in a folder of its own: the
// files laid out as the service evaluates them, and each malformed request refused with the
// reason the client gets (400). tests/e2e/serve_test.cpp sends requests through the binary.
#include "kbv/serve/submission.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "kbv/common/remove_tree.h"

namespace kbv::serve {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const std::string kProblem = "import torch\nclass Model(torch.nn.Module):\n    pass\n";
const std::string kCandidate = "import torch\nclass ModelNew(torch.nn.Module):\n    pass\n";

std::string read(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

class Submissions : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("kbv-submission-test-" + std::to_string(getpid()));
    kbv::remove_tree(root_.string());
    fs::create_directories(root_ / "problems" / "level1");
    std::ofstream(root_ / "problems" / "level1" / "19_ReLU.py") << kProblem;
    std::ofstream(root_ / "outside.py") << kProblem;
    intake_ = {(root_ / "files").string(), ""};
  }
  void TearDown() override { kbv::remove_tree(root_.string()); }

  // The message the request is refused with ("" if it is taken).
  std::string refusal(const json& body, const Intake& intake) {
    try {
      read_submission(body, intake, "r1");
      return "";
    } catch (const BadSubmission& bad) {
      return bad.what();
    }
  }
  std::string refusal(const json& body) { return refusal(body, intake_); }

  fs::path root_;
  Intake intake_;
};

TEST_F(Submissions, ProblemTextAndCandidateAreLaidOutAsFiles) {
  const Submission s = read_submission({{"problem_source", kProblem}, {"candidate_source", kCandidate}}, intake_, "r1");
  EXPECT_EQ(s.id, "r1");
  EXPECT_EQ(s.protocol, "verified");
  EXPECT_EQ(s.run_name, "serve");
  EXPECT_EQ(read(s.problem.path), kProblem);
  EXPECT_EQ(fs::path(s.problem.path).filename(), "problem.py");
  EXPECT_EQ(s.candidate.path, (root_ / "files" / "candidates" / "r1" / "candidate.py").string());
  EXPECT_EQ(read(s.candidate.path), kCandidate);
  EXPECT_FALSE(s.candidate.sample);
  // The same problem text again is the same file: its reference side stays warm.
  const Submission again =
      read_submission({{"problem_source", kProblem}, {"candidate_source", kCandidate}}, intake_, "r2");
  EXPECT_EQ(again.problem.path, s.problem.path);
  EXPECT_EQ(again.problem.content_key, s.problem.content_key);
  EXPECT_NE(again.candidate.path, s.candidate.path);
}

TEST_F(Submissions, ANamedProblemTextKeepsKernelBenchsLevelIdAndName) {
  const Submission s = read_submission({{"problem_source", kProblem},
                                        {"problem_name", "19_ReLU.py"},
                                        {"level", 1},
                                        {"candidate_source", kCandidate},
                                        {"protocol", "kernelbench"},
                                        {"run", "model-a"},
                                        {"sample", 3}},
                                       intake_, "r1");
  EXPECT_EQ(s.problem.level, 1);
  EXPECT_EQ(s.problem.number, 19);
  EXPECT_EQ(s.problem.name, "ReLU");
  EXPECT_EQ(s.protocol, "kernelbench");
  EXPECT_EQ(s.run_name, "model-a");
  EXPECT_EQ(s.candidate.sample, 3);
}

TEST_F(Submissions, AProblemFileIsTakenOnlyUnderTheServedRoot) {
  const std::string inside = (root_ / "problems" / "level1" / "19_ReLU.py").string();
  EXPECT_EQ(refusal({{"problem", inside}, {"candidate_source", kCandidate}}), "");
  const Intake rooted{intake_.files_dir, (root_ / "problems").string()};
  EXPECT_EQ(refusal({{"problem", inside}, {"candidate_source", kCandidate}}, rooted), "");
  EXPECT_NE(
      refusal({{"problem", (root_ / "outside.py").string()}, {"candidate_source", kCandidate}}, rooted).find("only"),
      std::string::npos);
  // Out of the root through `..` or a link: where the file really is counts.
  const std::string dotdot = (root_ / "problems" / ".." / "outside.py").string();
  EXPECT_NE(refusal({{"problem", dotdot}, {"candidate_source", kCandidate}}, rooted), "");
  fs::create_symlink(root_ / "outside.py", root_ / "problems" / "link.py");
  EXPECT_NE(refusal({{"problem", (root_ / "problems" / "link.py").string()}, {"candidate_source", kCandidate}}, rooted),
            "");
  // A served root takes no problem text.
  EXPECT_NE(refusal({{"problem_source", kProblem}, {"candidate_source", kCandidate}}, rooted).find("by path"),
            std::string::npos);
}

TEST_F(Submissions, MalformedRequestsAreRefusedWithTheirReason) {
  const json ok = {{"problem_source", kProblem}, {"candidate_source", kCandidate}};
  const auto with = [&](const std::string& field, const json& value) {
    json body = ok;
    body[field] = value;
    return body;
  };
  const auto without = [&](const std::string& field) {
    json body = ok;
    body.erase(field);
    return body;
  };
  EXPECT_NE(refusal(json::array()).find("JSON object"), std::string::npos);
  EXPECT_NE(refusal(with("priority", 1)).find("unknown field `priority`"), std::string::npos);
  EXPECT_NE(refusal(with("protocol", "fast")).find("verified or kernelbench"), std::string::npos);
  EXPECT_NE(refusal(with("protocol", 1)).find("must be a string"), std::string::npos);
  EXPECT_NE(refusal(with("run", "")).find("must not be empty"), std::string::npos);
  EXPECT_NE(refusal(without("problem_source")).find("name the problem"), std::string::npos);
  EXPECT_NE(refusal(with("problem", "/no/such.py")).find("name the problem"), std::string::npos);  // both
  EXPECT_NE(refusal({{"problem", "/no/such.py"}, {"candidate_source", kCandidate}}).find("no problem file"),
            std::string::npos);
  EXPECT_NE(refusal({{"problem", (root_ / "outside.py").string()}, {"level", 1}, {"candidate_source", kCandidate}})
                .find("go with `problem_source`"),
            std::string::npos);
  EXPECT_NE(refusal(with("problem_name", "../escape.py")).find("file name ending in .py"), std::string::npos);
  EXPECT_NE(refusal(with("problem_name", "notes.txt")).find("file name ending in .py"), std::string::npos);
  EXPECT_NE(refusal(with("level", -1)).find("`level` must be an integer"), std::string::npos);
  EXPECT_NE(refusal(with("level", "1")).find("`level` must be an integer"), std::string::npos);
  EXPECT_NE(refusal(without("candidate_source")).find("`candidate_source`"), std::string::npos);
  EXPECT_NE(refusal(with("sample", 1.5)).find("`sample` must be an integer"), std::string::npos);
  // Nothing of a refused request's candidate is left behind.
  EXPECT_FALSE(fs::exists(root_ / "files" / "candidates"));
}

}  // namespace
}  // namespace kbv::serve
