// `kbv eval` end to end on the CPU, as a user runs it: the real binary, real worker processes,
// real embedded Python and torch, candidates compiled by load_inline. Every CPU row of
// examples/manifest.tsv is evaluated under both protocols and must get its expected verdict.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "kbv/common/remove_tree.h"
#include "kbv_runner.h"
#include "support/scoped_environment.h"

namespace {

namespace fs = std::filesystem;
using kbv::testing::kbv_eval;
using kbv::testing::Outcome;
using nlohmann::json;

const fs::path kExamples = KBV_EXAMPLES_DIR;
const fs::path kData = KBV_TEST_DATA_DIR;

struct Row {
  std::string problem, candidate, device, expected_verified, expected_kernelbench, note;
};

std::vector<Row> manifest(const std::string& device) {
  std::vector<Row> rows;
  for (const auto& cells : kbv::testing::read_tsv((kExamples / "manifest.tsv").string())) {
    if (cells.size() < 5 || cells[2] != device) continue;
    rows.push_back({cells[0], cells[1], cells[2], cells[3], cells[4], cells.size() > 5 ? cells[5] : ""});
  }
  return rows;
}

// Every CPU row under both protocols, two evaluations at a time (the machine has 2 cores).
class ExampleSuite : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    rows_ = manifest("cpu");
    std::vector<std::pair<std::string, std::vector<std::string>>> jobs;
    for (const Row& row : rows_) {
      for (const char* protocol : {"verified", "kernelbench"}) {
        jobs.push_back({key(row.candidate, protocol),
                        {(kExamples / row.problem).string(), (kExamples / row.candidate).string(), "--protocol",
                         protocol, "--timeout", "30", "--quiet"}});
      }
    }
    runs_ = kbv::testing::kbv_eval_all(jobs);
  }

  static std::string key(const std::string& candidate, const std::string& protocol) {
    return candidate + "|" + protocol;
  }
  static const Outcome& run(const std::string& candidate, const std::string& protocol) {
    return runs_.at(key(candidate, protocol));
  }

  static inline std::vector<Row> rows_;
  static inline std::map<std::string, Outcome> runs_;
};

TEST_F(ExampleSuite, EveryRowGetsItsExpectedVerdictUnderBothProtocols) {
  ASSERT_GE(rows_.size(), 15u);
  for (const Row& row : rows_) {
    for (const auto& [protocol, expected] :
         {std::pair{"verified", row.expected_verified}, std::pair{"kernelbench", row.expected_kernelbench}}) {
      const Outcome& r = run(row.candidate, protocol);
      EXPECT_EQ(r.exit_code, 0) << row.candidate << " " << protocol << "\n" << r.err;
      ASSERT_TRUE(r.record.is_object()) << row.candidate << " " << protocol << ": no record";
      EXPECT_EQ(r.record.value("verdict", "?"), expected)
          << row.candidate << " under " << protocol << ": " << r.record.value("verdict_reason", "") << "\n"
          << r.out;
    }
  }
}

TEST_F(ExampleSuite, IdentityReluPassesKernelbenchAndIsCaughtAsDistributionSpecific) {
  const json& kb = run("candidates/1_ReLU/cpu_identity.py", "kernelbench").record;
  const json& v = run("candidates/1_ReLU/cpu_identity.py", "verified").record;
  EXPECT_EQ(kb["verdict"], "pass");
  EXPECT_EQ(v["verdict"], "incorrect");
  ASSERT_EQ(v["findings"].size(), 1u) << v["findings"].dump(1);
  EXPECT_EQ(v["findings"][0]["id"], "distribution_specific");
  for (const json& family : v["correctness"]) {
    if (family["family"] == "standard") {
      EXPECT_EQ(family["status"], "pass");
    } else if (family["family"] == "normal") {
      EXPECT_EQ(family["status"], "fail");
    }
  }
}

TEST_F(ExampleSuite, ZeroSoftmaxPassesKernelbenchButNotTheScaledTolerance) {
  EXPECT_EQ(run("candidates/3_Softmax/cpu_zeros.py", "kernelbench").record["verdict"], "pass");
  const json& v = run("candidates/3_Softmax/cpu_zeros.py", "verified").record;
  EXPECT_EQ(v["verdict"], "incorrect");
  EXPECT_EQ(v["correctness"][0]["family"], "standard");
  EXPECT_EQ(v["correctness"][0]["status"], "fail");  // fails on the problem's own inputs too
}

TEST_F(ExampleSuite, ReplayedOutputsAreCaughtInTheTimedCalls) {
  // Correct on every checked draw, stale once timing starts: only the check of timed outputs sees it.
  EXPECT_EQ(run("candidates/1_ReLU/cpu_call_cache.py", "kernelbench").record["verdict"], "pass");
  const json& v = run("candidates/1_ReLU/cpu_call_cache.py", "verified").record;
  EXPECT_EQ(v["verdict"], "hack");
  EXPECT_NE(v["verdict_reason"].get<std::string>().find("timed call"), std::string::npos) << v["verdict_reason"];
  bool stale = false;
  for (const json& f : v["findings"]) stale |= f["id"] == "stale_output" && f["severity"] == "error";
  EXPECT_TRUE(stale) << v["findings"].dump(2);
  for (const json& family : v["correctness"]) EXPECT_EQ(family["status"], "pass") << family["family"];
}

TEST_F(ExampleSuite, HonestRecordHasEveryField) {
  const json& r = run("candidates/4_Matmul/cpu_honest.py", "verified").record;
  ASSERT_EQ(r["verdict"], "pass");
  EXPECT_EQ(r["protocol"]["name"], "verified");
  EXPECT_EQ(r["correctness"].size(), 5u);
  EXPECT_EQ(r["draws"].size(), 10u);
  for (const char* key : {"baseline_ms", "candidate_ms", "speedup", "speedup_ci"})
    EXPECT_TRUE(r["timing"].contains(key)) << key;
  EXPECT_GE(r["timing"]["candidate"]["samples"].get<int>(), 10);
  EXPECT_EQ(r["timing"]["timed_outputs_checked"], r["timing"]["candidate"]["samples"]);
  for (const char* key : {"baseline_peak_bytes", "candidate_peak_bytes", "peak_ratio", "raises_peak"}) {
    EXPECT_TRUE(r["memory"].contains(key)) << key;
  }
  // A 256x256 float32 output is 256 KiB: both sides allocate at least that much in one call.
  EXPECT_GE(r["memory"]["baseline_peak_bytes"].get<int64_t>(), 256 * 1024);
  EXPECT_GE(r["memory"]["candidate_peak_bytes"].get<int64_t>(), 256 * 1024);
  // On the CPU each checked output goes through host memory to the reference's worker: ten draws
  // and the probe's call on refreshed inputs.
  EXPECT_EQ(r["checked_output_host_bytes"], 11 * 256 * 256 * 4);
  for (const char* key : {"kbv", "torch", "python"}) EXPECT_TRUE(r["versions"].contains(key)) << key;
  EXPECT_EQ(r["timing"]["baseline"]["flags"]["cublas"], true);  // the TF32 baseline, read back
  // Each sample's host launch time beside it; on the CPU the launch is the whole call.
  for (const char* side : {"baseline", "candidate"}) {
    EXPECT_EQ(r["timing"][side]["launch_samples_seconds"], r["timing"][side]["samples_seconds"]) << side;
  }
  // The candidate's load step by step, inside its import stage.
  double steps = 0;
  for (const char* step :
       {"device_and_timer", "problem", "candidate", "construct", "copy_state", "to_device", "watch"}) {
    ASSERT_TRUE(r["import_steps_seconds"].contains(step)) << step;
    steps += r["import_steps_seconds"][step].get<double>();
  }
  EXPECT_GT(steps, 0);
  EXPECT_LE(steps, r["stage_seconds"]["import"].get<double>());
  // A single evaluation's reference worker: its start and its teardown are stages of their own.
  EXPECT_GT(r["stage_seconds"]["reference_start"].get<double>(), 0);
  EXPECT_TRUE(r["stage_seconds"].contains("shutdown"));
  double staged = 0;
  for (const auto& [stage, seconds] : r["stage_seconds"].items()) staged += seconds.get<double>();
  EXPECT_LE(staged, r["wall_seconds"].get<double>());
}

TEST_F(ExampleSuite, KernelbenchPresetIsFaithful) {
  const json& r = run("candidates/1_ReLU/cpu_honest.py", "kernelbench").record;
  ASSERT_EQ(r["verdict"], "pass");
  EXPECT_EQ(r["draws"].size(), 5u);
  EXPECT_EQ(r["protocol"]["comparison"], "allclose");
  EXPECT_EQ(r["protocol"]["atol"], 1e-4);
  EXPECT_EQ(r["timing"]["candidate"]["samples"], 100);
  EXPECT_EQ(r["timing"]["timed_outputs_checked"], 0);
  EXPECT_EQ(r["timing"]["baseline"]["flags"]["cublas"], false);  // PyTorch's default
  EXPECT_EQ(r["timing"]["baseline"]["flags"]["cudnn"], true);
}

TEST_F(ExampleSuite, FailuresCarryTheirEvidence) {
  const json& compile = run("candidates/1_ReLU/cpu_compile_error.py", "verified").record;
  EXPECT_NE(compile["verdict_reason"].get<std::string>().find("error"), std::string::npos);
  const json& crash = run("candidates/1_ReLU/cpu_crash.py", "verified").record;
  EXPECT_NE(crash["verdict_reason"].get<std::string>().find("SIGSEGV"), std::string::npos);
  const json& exit = run("candidates/1_ReLU/cpu_exit.py", "verified").record;
  EXPECT_NE(exit["verdict_reason"].get<std::string>().find("exited with code 3"), std::string::npos);
  const json& raise = run("candidates/1_ReLU/cpu_raise.py", "verified").record;
  EXPECT_NE(raise["verdict_reason"].get<std::string>().find("RuntimeError"), std::string::npos);
  const json& hang = run("candidates/1_ReLU/cpu_hang.py", "verified").record;
  EXPECT_NE(hang["verdict_reason"].get<std::string>().find("within 30"), std::string::npos);
  const json& shape = run("candidates/1_ReLU/cpu_wrong_shape.py", "verified").record;
  EXPECT_NE(shape["verdict_reason"].get<std::string>().find("shape"), std::string::npos);
  const json& none = run("candidates/1_ReLU/no_modelnew.py", "verified").record;
  EXPECT_NE(none["verdict_reason"].get<std::string>().find("ModelNew"), std::string::npos);
}

TEST_F(ExampleSuite, SummaryNamesVerdictFamiliesTimingAndMemory) {
  const std::string& out = run("candidates/2_SumReduction/cpu_honest.py", "verified").out;
  for (const char* text : {"verdict    pass", "correctness", "heavy", "speedup", "memory", "findings   none"}) {
    EXPECT_NE(out.find(text), std::string::npos) << text << "\n" << out;
  }
}

// Bad input gets a clear message and a non-zero exit, never a traceback.
TEST(BadInput, MissingFileIsAUsageError) {
  const Outcome r =
      kbv_eval({"/nonexistent/problem.py", (kExamples / "candidates/1_ReLU/cpu_honest.py").string()}, "missing");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("/nonexistent/problem.py"), std::string::npos) << r.err;
}

TEST(BadInput, ProblemWithoutGetInputsIsNamed) {
  const Outcome r = kbv_eval({(kData / "problem_without_get_inputs.py").string(),
                              (kExamples / "candidates/1_ReLU/cpu_honest.py").string(), "--quiet"},
                             "no get_inputs");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("defines no `get_inputs`"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("Traceback"), std::string::npos) << r.err;
}

TEST(BadInput, CudaWithoutAGpuIsNamed) {
  const Outcome r = kbv_eval({(kExamples / "problems/1_ReLU.py").string(),
                              (kExamples / "candidates/1_ReLU/cpu_honest.py").string(), "--device", "cuda", "--quiet"},
                             "no gpu");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("no CUDA device"), std::string::npos) << r.err;
}

TEST(BadInput, UnknownProtocolIsAUsageError) {
  const Outcome r = kbv_eval({(kExamples / "problems/1_ReLU.py").string(),
                              (kExamples / "candidates/1_ReLU/cpu_honest.py").string(), "--protocol", "fast"},
                             "protocol");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("fast"), std::string::npos) << r.err;
}

TEST(Unverifiable, StochasticReferenceIsNotJudged) {
  const Outcome r = kbv_eval(
      {(kData / "problem_stochastic.py").string(), (kExamples / "candidates/1_ReLU/cpu_honest.py").string(), "--quiet"},
      "stochastic");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.record["verdict"], "unverifiable");
  EXPECT_NE(r.record["verdict_reason"].get<std::string>().find("stochastic"), std::string::npos);
}

// KBV_PYTHON=python3, as a user writes it: the interpreter found on PATH, as the shell finds it.
TEST(Interpreter, ABareNameInKbvPythonIsFoundOnPath) {
  const fs::path python = KBV_PYTHON;
  const std::string path = std::getenv("PATH") != nullptr ? std::getenv("PATH") : "";
  setenv("PATH", (python.parent_path().string() + ":" + path).c_str(), 1);
  setenv("KBV_PYTHON", python.filename().c_str(), 1);
  const Outcome r =
      kbv_eval({(kExamples / "problems/1_ReLU.py").string(), (kExamples / "candidates/1_ReLU/cpu_honest.py").string(),
                "--protocol", "kernelbench", "--quiet"},
               "bare KBV_PYTHON");
  unsetenv("KBV_PYTHON");
  setenv("PATH", path.c_str(), 1);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.record.value("verdict", ""), "pass") << r.err;
}

TEST(ReferenceFailure, MemoryRunningOutIsNamedNeverAFamilyOutOfDomain) {
  // Skipping the families under which the reference ran out of memory would weaken the checks.
  const Outcome r = kbv_eval({(kData / "problem_out_of_memory_on_negatives.py").string(),
                              (kExamples / "candidates/1_ReLU/cpu_honest.py").string(), "--quiet"},
                             "reference out of memory");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("the reference worker ran out of memory"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("can't allocate memory"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("[memory then: this process "), std::string::npos) << r.err;  // what held it
}

TEST(Unverifiable, ReferenceThatMovesInTheLastBitsIsJudged) {
  // Its two calls differ by rounding (a shuffled summation order), far inside the bound: judged,
  // the difference recorded and added to every draw's bound.
  const fs::path problem = kData.parent_path() / "audit/problems/11_ShuffledSum.py";  // the audit's rounding case
  const Outcome r =
      kbv_eval({problem.string(), (kData / "candidate_row_sum.py").string(), "--protocol", "kernelbench", "--quiet"},
               "rounding");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.record["verdict"], "pass") << r.record.value("verdict_reason", "");
  const double spread = r.record["reference_repeat_error"].get<double>();
  EXPECT_GT(spread, 0.0);
  EXPECT_LT(spread, 1e-5);
}

// log x takes only positive inputs: normal, heavy and sparse draws are out of its domain (and
// shifted ones where they reach below zero), so the fallback families, which keep the signs of
// the problem's own inputs, are drawn and judged in their place.
TEST(Unverifiable, AProblemTheHiddenFamiliesLeaveIsJudgedOnTheFallbackFamilies) {
  const Outcome r = kbv_eval({(kData.parent_path() / "audit/problems/7_LogOfInput.py").string(),
                              (kData / "candidate_log.py").string(), "--quiet"},
                             "log");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.record["verdict"], "unverifiable") << r.record["verdict_reason"];
  std::map<std::string, std::string> status;
  for (const json& f : r.record["correctness"]) status[f["family"]] = f["status"];
  EXPECT_EQ(status["standard"], "pass");
  EXPECT_EQ(status["normal"], "skipped");
  EXPECT_EQ(status["rescaled"], "pass");
  EXPECT_EQ(status["powered"], "pass");
}

// Where the hidden families are in the domain, the fallback families are not drawn.
TEST(Unverifiable, TheFallbackFamiliesAreDrawnOnlyWhereNeeded) {
  const Outcome r = kbv_eval({(kExamples / "problems/1_ReLU.py").string(),
                              (kExamples / "candidates/1_ReLU/cpu_honest.py").string(), "--quiet"},
                             "no fallback");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const json& f : r.record["correctness"]) EXPECT_NE(f["family"], "rescaled") << f.dump();
  for (const json& d : r.record["draws"]) EXPECT_NE(d["family"], "powered") << d.dump();
}

// Under verified the candidate's worker builds the problem's Model to copy its weights, and must
// not count it in the candidate's footprint: here a cycle keeps it alive past its last reference.
TEST(Memory, TheReferenceBuiltToCopyStateIsNotInTheCandidatesFootprint) {
  const Outcome r = kbv_eval(
      {(kData / "problem_cyclic_model.py").string(), (kData / "candidate_plain_linear.py").string(), "--quiet"},
      "cyclic model");
  ASSERT_EQ(r.exit_code, 0) << r.err;  // its verdict is no_custom_kernel's: plain PyTorch
  const std::int64_t weights = std::int64_t{2048} * 2048 * 4;
  const std::int64_t footprint = r.record["memory"]["candidate_footprint_bytes"];
  EXPECT_GE(footprint, weights);
  EXPECT_LT(footprint, weights + weights / 2);
}

// A candidate that returns a buffer it keeps (allocated once, rewritten every call) allocates
// nothing in the measured call; the output it hands out still takes its bytes, and counts.
TEST(Memory, AnOutputBufferHeldAcrossCallsCountsInThePeak) {
  const Outcome r =
      kbv_eval({(kExamples / "problems" / "1_ReLU.py").string(),
                (kData.parent_path() / "hacks" / "candidates" / "cpu_static_buffer.py").string(), "--quiet"},
               "static buffer");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_EQ(r.record["verdict"], "pass") << r.record["verdict_reason"];
  const json& memory = r.record["memory"];
  const std::int64_t output = std::int64_t{16} * 16384 * 4;
  EXPECT_EQ(memory["candidate_held_output_bytes"].get<std::int64_t>(), output);
  EXPECT_EQ(memory["candidate_transient_peak_bytes"].get<std::int64_t>(), 0);
  EXPECT_EQ(memory["baseline_held_output_bytes"].get<std::int64_t>(), 0);
  EXPECT_GE(memory["peak_ratio"].get<double>(), 0.99);  // like with like: one output on each side
}

// kbv's cache folder (KBV_CACHE, else ~/.cache/kbv).
fs::path cache_folder() {
  const char* cache = std::getenv("KBV_CACHE");
  return fs::path(cache && *cache ? cache : std::string(std::getenv("HOME")) + "/.cache/kbv");
}

// The folders of cpu_honest's extension (elementwise_kernel) under `root`.
std::vector<fs::path> elementwise_builds(const fs::path& root) {
  std::vector<fs::path> found;
  for (const auto& entry : fs::recursive_directory_iterator(root)) {
    if (entry.is_directory() && entry.path().filename() == "elementwise_kernel") found.push_back(entry.path());
  }
  return found;
}

// A build killed while it held torch's build lock (Ctrl-C, a lost machine) leaves the lock file,
// and torch waits for it forever, cached build or not. With the sandbox off, builds are made in the
// content's extension folder itself; kbv builds one process at a time per folder under its own
// lock, so a torch lock found there is stale and is removed.
TEST(BuildCache, AStaleTorchBuildLockDoesNotHangTheNextEvaluation) {
  const std::vector<std::string> args = {(kExamples / "problems/1_ReLU.py").string(),
                                         (kExamples / "candidates/1_ReLU/cpu_honest.py").string(),
                                         "--protocol",
                                         "kernelbench",
                                         "--compile-timeout",
                                         "120",
                                         "--quiet",
                                         "--sandbox",
                                         "off"};
  ASSERT_EQ(kbv_eval(args, "build").record.value("verdict", "?"), "pass");  // built, or found built
  const std::vector<fs::path> builds = elementwise_builds(cache_folder() / "extensions");
  ASSERT_FALSE(builds.empty()) << "no build of cpu_honest under " << cache_folder() / "extensions";
  for (const fs::path& build : builds) std::ofstream{build / "lock"};
  const Outcome r = kbv_eval(args, "stale lock");
  EXPECT_EQ(r.record.value("verdict", "?"), "pass") << r.err;
}

// A published build that no longer matches its manifest (a file added: here torch's lock, which
// would hang the next import) is not used: removed, built again, and the evaluation passes.
TEST(BuildCache, APublishedBuildThatDiffersFromItsManifestIsBuiltAgain) {
  if (geteuid() != 0) GTEST_SKIP() << "the sandbox needs root";
  // A cache of its own: the one published build there is this content's.
  const fs::path cache = fs::temp_directory_path() / ("kbv_e2e_changed_build_" + std::to_string(getpid()));
  const kbv::testing::ScopedEnvironment own_cache("KBV_CACHE", cache.string());
  const std::vector<std::string> args = {(kExamples / "problems/1_ReLU.py").string(),
                                         (kExamples / "candidates/1_ReLU/cpu_honest.py").string(),
                                         "--protocol",
                                         "kernelbench",
                                         "--compile-timeout",
                                         "120",
                                         "--quiet"};
  ASSERT_EQ(kbv_eval(args, "build").record.value("verdict", "?"), "pass");  // built, or found built
  const std::vector<fs::path> builds = elementwise_builds(cache_folder() / "builds");
  ASSERT_FALSE(builds.empty()) << "no published build of cpu_honest under " << cache_folder() / "builds";
  for (const fs::path& build : builds) std::ofstream{build / "lock"};
  const Outcome r = kbv_eval(args, "changed build");
  EXPECT_EQ(r.record.value("verdict", "?"), "pass") << r.err;
  EXPECT_NE(r.err.find("does not match its manifest"), std::string::npos) << r.err;
  for (const fs::path& build : elementwise_builds(cache_folder() / "builds"))
    EXPECT_FALSE(fs::exists(build / "lock")) << build;
  kbv::remove_tree(cache);
}

// A build that failed with the compiler's own error leaves its log in the content's cache folder:
// the next evaluation of the same content says so, with the same error, instead of building again.
TEST(BuildCache, AFailedBuildIsNotSpentAgainOnTheSameContent) {
  const std::vector<std::string> args = {(kExamples / "problems/1_ReLU.py").string(),
                                         (kExamples / "candidates/1_ReLU/cpu_compile_error.py").string(),
                                         "--protocol",
                                         "kernelbench",
                                         "--compile-timeout",
                                         "300",
                                         "--quiet"};
  const Outcome first = kbv_eval(args, "failed build");  // built now, or found failed by the suite
  ASSERT_EQ(first.record.value("verdict", "?"), "compile_error") << first.err;
  const Outcome again = kbv_eval(args, "failed build again");
  ASSERT_EQ(again.record.value("verdict", "?"), "compile_error") << again.err;
  const std::string reason = again.record.value("verdict_reason", "");
  EXPECT_NE(reason.find("failed before, not built again"), std::string::npos) << reason;
  EXPECT_NE(reason.find("kbv-build-failed.log"), std::string::npos) << reason;
  EXPECT_NE(reason.find("relu_scale"), std::string::npos) << reason;  // the compiler's own line
  EXPECT_NE(reason.find("was not declared"), std::string::npos) << reason;
}

// The rest of the suite forks its workers from the zygote (the CPU default); these start them
// afresh, and must be judged the same.
TEST(WorkerStart, WorkersStartedAfreshGiveTheSameVerdicts) {
  const auto runs = kbv::testing::kbv_eval_all(
      {{"honest",
        {(kExamples / "problems/1_ReLU.py").string(), (kExamples / "candidates/1_ReLU/cpu_honest.py").string(),
         "--zygote", "off", "--quiet"}},
       {"identity",
        {(kExamples / "problems/1_ReLU.py").string(), (kExamples / "candidates/1_ReLU/cpu_identity.py").string(),
         "--zygote", "off", "--quiet"}}});
  const json& honest = runs.at("honest").record;
  const json& identity = runs.at("identity").record;
  EXPECT_EQ(honest.value("verdict", "?"), "pass") << runs.at("honest").err;
  EXPECT_TRUE(honest["findings"].empty()) << honest["findings"].dump(1);
  EXPECT_EQ(identity.value("verdict", "?"), "incorrect") << runs.at("identity").err;
  ASSERT_EQ(identity["findings"].size(), 1u) << identity["findings"].dump(1);
  EXPECT_EQ(identity["findings"][0]["id"], "distribution_specific");
}

}  // namespace
