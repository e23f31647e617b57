// Finding a run's work on disk: KernelBench's problem tree and sample names, manifests, and every
// file that cannot be used listed with its reason.
#include "kbv/run/discovery.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

namespace {

namespace fs = std::filesystem;
using kbv::run::discover_samples;
using kbv::run::read_manifest;

class Discovery : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("kbv_discovery_" + std::to_string(getpid()));
    fs::remove_all(root_);
    write("KernelBench/level1/1_Square_matrix_multiplication_.py", "class Model: pass\n");
    write("KernelBench/level1/19_ReLU.py", "class Model: pass\n");
    write("KernelBench/level2/19_Conv_ReLU.py", "class Model: pass\n");
    write("KernelBench/level1/__init__.py", "");
    write("runs/gpt/level_1_problem_19_sample_0_kernel.py", "class ModelNew: pass\n");
    write("runs/gpt/level_1_problem_19_sample_1_kernel.py", "class ModelNew: pass\n");
    write("runs/gpt/level_2_problem_19_sample_0_kernel.py", "class ModelNew: pass\n");
    write("runs/gpt/level_1_problem_1_sample_0_kernel.py", "class ModelNew: pass\n");
    write("runs/gpt/level_1_problem_77_sample_0_kernel.py", "class ModelNew: pass\n");
    write("runs/gpt/scratch.py", "");
    write("runs/gpt/eval_results.json", "{}");
  }
  void TearDown() override { fs::remove_all(root_); }

  void write(const std::string& relative, const std::string& text) {
    const fs::path path = root_ / relative;
    fs::create_directories(path.parent_path());
    std::ofstream(path) << text;
  }
  std::string at(const std::string& relative) const { return (root_ / relative).string(); }

  fs::path root_;
};

TEST_F(Discovery, SamplesMatchTheirProblemByLevelAndId) {
  const auto found = discover_samples(at("KernelBench"), at("runs/gpt"), "gpt");
  ASSERT_EQ(found.jobs.size(), 4u);
  // Ordered by level, problem id, sample.
  EXPECT_EQ(found.jobs[0].problem.name, "Square_matrix_multiplication_");
  EXPECT_EQ(found.jobs[1].problem.name, "ReLU");
  EXPECT_EQ(found.jobs[1].candidate.sample, 0);
  EXPECT_EQ(found.jobs[2].candidate.sample, 1);
  EXPECT_EQ(found.jobs[3].problem.name, "Conv_ReLU");  // same id 19, level 2
  EXPECT_EQ(found.jobs[3].problem.level, 2);
  for (const auto& job : found.jobs) EXPECT_EQ(job.run_name, "gpt");

  ASSERT_EQ(found.unmatched.size(), 2u);  // the .json is no candidate and is not listed
  std::map<std::string, std::string> reasons;
  for (const auto& u : found.unmatched) reasons[fs::path(u.path).filename().string()] = u.reason;
  EXPECT_NE(reasons["level_1_problem_77_sample_0_kernel.py"].find("no problem 77 of level 1"), std::string::npos);
  EXPECT_NE(reasons["scratch.py"].find("not named"), std::string::npos);
}

TEST_F(Discovery, OneLevelsFolderServesAsTheProblems) {
  const auto found = discover_samples(at("KernelBench/level2"), at("runs/gpt"), "gpt");
  ASSERT_EQ(found.jobs.size(), 1u);
  EXPECT_EQ(found.jobs[0].problem.name, "Conv_ReLU");
}

TEST_F(Discovery, OneProblemFileServesAsTheProblems) {
  const auto found = discover_samples(at("KernelBench/level1/19_ReLU.py"), at("runs/gpt"), "gpt");
  ASSERT_EQ(found.jobs.size(), 2u);  // the two samples of level 1 problem 19
  EXPECT_EQ(found.jobs[0].problem.name, "ReLU");
  EXPECT_EQ(found.unmatched.size(), 4u);  // the other three samples and scratch.py, each with its reason
}

TEST_F(Discovery, ProblemsOfAnyNameButPackagesAndPrivateModules) {
  write("mine/relu.py", "class Model: pass\n");
  write("mine/3_Softmax.py", "class Model: pass\n");
  write("mine/_helpers.py", "");
  write("mine/__init__.py", "");
  write("mine/notes.txt", "");
  auto problems = kbv::run::find_problems(at("mine"));
  std::sort(problems.begin(), problems.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  ASSERT_EQ(problems.size(), 2u);
  EXPECT_EQ(problems[0].name, "Softmax");
  EXPECT_EQ(problems[0].number, 3);
  EXPECT_EQ(problems[1].name, "relu");
  EXPECT_FALSE(problems[1].number);
  EXPECT_FALSE(problems[1].level);
  ASSERT_EQ(kbv::run::find_problems(at("mine/relu.py")).size(), 1u);
  EXPECT_THROW(kbv::run::find_problems(at("mine/notes.txt")), std::runtime_error);
  EXPECT_THROW(kbv::run::find_problems(at("mine/missing.py")), std::runtime_error);
}

TEST_F(Discovery, ManifestRowsResolveFromTheManifestsFolder) {
  write("m.csv",
        "problem,candidate,run,sample\n"
        "KernelBench/level1/19_ReLU.py,runs/gpt/level_1_problem_19_sample_0_kernel.py,,3\n"
        "\"KernelBench/level1/19_ReLU.py\",runs/gpt/missing.py,other,\n"
        "KernelBench/level9/1_Gone.py,runs/gpt/scratch.py,,\n");
  const auto found = read_manifest(at("m.csv"), "manifest");
  ASSERT_EQ(found.jobs.size(), 1u);
  EXPECT_EQ(found.jobs[0].run_name, "manifest");
  EXPECT_EQ(found.jobs[0].candidate.sample, 3);
  EXPECT_EQ(found.jobs[0].problem.level, 1);
  ASSERT_EQ(found.unmatched.size(), 2u);
  EXPECT_EQ(found.unmatched[0].run_name, "other");
  EXPECT_NE(found.unmatched[0].reason.find("cannot read"), std::string::npos);
  EXPECT_NE(found.unmatched[1].reason.find("no problem file"), std::string::npos);
  EXPECT_NE(found.unmatched[1].reason.find("m.csv:4"), std::string::npos);  // names the row
}

TEST_F(Discovery, JsonLinesAndADeviceColumn) {
  write("m.jsonl",
        "{\"problem\": \"KernelBench/level1/19_ReLU.py\", \"candidate\": "
        "\"runs/gpt/level_1_problem_19_sample_1_kernel.py\", "
        "\"run\": \"claude\", \"device\": \"cuda\"}\n");
  const auto found = read_manifest(at("m.jsonl"), "manifest");
  ASSERT_EQ(found.jobs.size(), 1u);
  EXPECT_EQ(found.jobs[0].run_name, "claude");
  EXPECT_EQ(found.jobs[0].device, "cuda");
}

// A file has one record per protocol and device: a second row for it in the same run and device is
// listed, not evaluated again; another device's row is its own.
TEST_F(Discovery, ACandidateListedTwiceIsListedAsSuch) {
  write("m.csv",
        "problem,candidate,device\n"
        "KernelBench/level1/19_ReLU.py,runs/gpt/level_1_problem_19_sample_0_kernel.py,cuda\n"
        "KernelBench/level1/19_ReLU.py,runs/gpt/level_1_problem_19_sample_0_kernel.py,cpu\n"
        "KernelBench/level1/19_ReLU.py,runs/gpt/level_1_problem_19_sample_0_kernel.py,cuda\n");
  const auto found = read_manifest(at("m.csv"), "manifest");
  ASSERT_EQ(found.jobs.size(), 2u);
  ASSERT_EQ(found.unmatched.size(), 1u);
  EXPECT_NE(found.unmatched[0].reason.find("listed again (" + at("m.csv") + ":4; first at " + at("m.csv") + ":2)"),
            std::string::npos)
      << found.unmatched[0].reason;
}

TEST_F(Discovery, UnusableManifestsAndFoldersAreErrors) {
  write("bad.csv", "path,file\na,b\n");
  EXPECT_THROW(read_manifest(at("bad.csv"), "r"), std::runtime_error);
  EXPECT_THROW(read_manifest(at("none.csv"), "r"), std::runtime_error);
  EXPECT_THROW(discover_samples(at("KernelBench"), at("nowhere"), "r"), std::runtime_error);
}

}  // namespace
