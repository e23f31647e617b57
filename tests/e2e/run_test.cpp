// `kbv run` and `kbv report` as a user runs them: a KernelBench-shaped tree of problems and
// generated samples (built here from the example suite), a run killed with SIGKILL in the middle,
// the same command again, and the report. Every record must be there exactly once.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>
#include <thread>

#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>
#include <nlohmann/json.hpp>

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const fs::path kExamples = KBV_EXAMPLES_DIR;

std::int64_t scalar(const fs::path& db, const std::string& query) {
  SQLite::Database store(db.string(), SQLite::OPEN_READONLY, 5000);
  SQLite::Statement s(store, query);
  s.executeStep();
  return s.getColumn(0).getInt64();
}

// Starts `kbv ARGS`, its output into `log`; returns the pid.
pid_t start(const std::vector<std::string>& args, const fs::path& log) {
  const pid_t pid = fork();
  if (pid == 0) {
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    dup2(fd, STDOUT_FILENO);
    dup2(fd, STDERR_FILENO);
    std::vector<char*> argv{const_cast<char*>(KBV_BINARY)};
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(KBV_BINARY, argv.data());
    _exit(127);
  }
  return pid;
}

int finish(pid_t pid) {
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string slurp(const fs::path& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

class RunAndReport : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("kbv_run_test_" + std::to_string(getpid()));
    fs::remove_all(dir_);
    const auto copy = [&](const fs::path& from, const std::string& to) {
      fs::create_directories((dir_ / to).parent_path());
      fs::copy_file(kExamples / from, dir_ / to);
    };
    copy("problems/1_ReLU.py", "KernelBench/level1/1_ReLU.py");
    copy("problems/2_SumReduction.py", "KernelBench/level1/2_SumReduction.py");
    copy("candidates/1_ReLU/cpu_honest.py", "runs/model-a/level_1_problem_1_sample_0_kernel.py");
    copy("candidates/1_ReLU/cpu_identity.py", "runs/model-a/level_1_problem_1_sample_1_kernel.py");
    copy("candidates/2_SumReduction/cpu_honest.py", "runs/model-a/level_1_problem_2_sample_0_kernel.py");
    copy("candidates/1_ReLU/cpu_honest.py", "runs/model-a/level_1_problem_42_sample_0_kernel.py");  // no problem 42
    std::ofstream(dir_ / "runs/model-a/notes.py") << "# not a sample\n";
    db_ = dir_ / "results.sqlite";
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(dir_);
  }

  std::vector<std::string> run_args() const {
    return {"run",
            "--problems",
            (dir_ / "KernelBench").string(),
            "--samples",
            (dir_ / "runs/model-a").string(),
            "--db",
            db_.string(),
            "--device",
            "cpu",
            "--protocols",
            "verified,kernelbench",
            "--timeout",
            "60"};
  }

  fs::path dir_, db_;
};

TEST_F(RunAndReport, KilledRunResumesWithEveryRecordOnceAndReports) {
  const fs::path log = dir_ / "run.log";
  // First attempt: killed (SIGKILL, no chance to clean up) once two records are in.
  const pid_t first = start(run_args(), log);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(10);
  while (std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    if (fs::exists(db_) && scalar(db_, "SELECT COUNT(*) FROM sqlite_master WHERE name = 'records'") == 1 &&
        scalar(db_, "SELECT COUNT(*) FROM records") >= 2) {
      break;
    }
  }
  ASSERT_EQ(::kill(first, SIGKILL), 0);
  finish(first);
  const std::int64_t before = scalar(db_, "SELECT COUNT(*) FROM records");
  ASSERT_GE(before, 2) << slurp(log);
  ASSERT_LT(before, 6) << "the run finished before it could be interrupted\n" << slurp(log);

  // The same command again finishes the work and redoes none of it.
  ASSERT_EQ(finish(start(run_args(), log)), 0) << slurp(log);
  const std::string output = slurp(log);
  EXPECT_NE(output.find(std::to_string(before) + " already in the store"), std::string::npos) << output;
  EXPECT_NE(output.find("unmatched: " + (dir_ / "runs/model-a/notes.py").string()), std::string::npos) << output;
  // One lane on the CPU: the share of its wall its records spent in device stages, between 0 and 100%.
  const std::regex busy(
      R"(busy share by lane \(device stages' seconds / lane wall\): cpu (\d+)% \(([\d.]+) of ([\d.]+) s\))");
  std::smatch share;
  ASSERT_TRUE(std::regex_search(output, share, busy)) << output;
  EXPECT_GT(std::stod(share[2]), 0.0);
  EXPECT_LE(std::stod(share[2]), std::stod(share[3]));

  // 3 matched candidates x 2 protocols, each exactly once.
  EXPECT_EQ(scalar(db_, "SELECT COUNT(*) FROM records"), 6);
  EXPECT_EQ(scalar(db_, "SELECT COUNT(*) FROM (SELECT DISTINCT candidate_id, protocol, device FROM records)"), 6);
  EXPECT_EQ(scalar(db_, "SELECT COUNT(*) FROM candidates"), 3);
  EXPECT_EQ(scalar(db_, "SELECT COUNT(*) FROM unmatched"), 2);
  EXPECT_EQ(scalar(db_, "SELECT COUNT(*) FROM failures"), 0);
  // The lanes' use is kept by the invocation that finished (the killed one wrote none).
  EXPECT_EQ(scalar(db_, "SELECT COUNT(*) FROM sessions WHERE command = 'run' AND lanes LIKE '[{\"device_seconds\"%'"),
            1);
  // Each problem audited once: ReLU is the identity on its own inputs, which verified cures.
  EXPECT_EQ(scalar(db_, "SELECT COUNT(*) FROM audits"), 2);
  EXPECT_EQ(scalar(db_,
                   "SELECT COUNT(*) FROM audits a JOIN problems p ON p.id = a.problem_id WHERE p.name = 'ReLU' "
                   "AND a.findings LIKE '%identity_under_inputs%' AND a.uncured = ''"),
            1);
  // One baseline per problem and protocol in each invocation: ReLU's two samples under one
  // protocol, evaluated in the same invocation, cite the same baseline.
  EXPECT_EQ(scalar(db_,
                   "SELECT COUNT(*) FROM records r JOIN candidates c ON c.id = r.candidate_id "
                   "JOIN problems p ON p.id = c.problem_id WHERE p.name = 'ReLU' AND r.baseline_id IS NULL"),
            0);
  EXPECT_LE(scalar(db_, "SELECT COUNT(*) FROM baselines"), 8);
  EXPECT_EQ(scalar(db_, "SELECT COUNT(*) FROM records WHERE protocol = 'kernelbench' AND verdict = 'pass'"), 3);
  // ReLU's first sample under kernelbench (both pass there) started the second's worker and
  // waited for it before its own timing.
  EXPECT_GE(
      scalar(db_, "SELECT COUNT(*) FROM records WHERE protocol = 'kernelbench' AND record LIKE '%\"next_worker\"%'"),
      1);
  // Across groups too: SumReduction's groups hold one sample each, and the last evaluation before
  // each (but the lane's last) started its worker and its reference side and waited for them.
  EXPECT_GE(scalar(db_,
                   "SELECT COUNT(*) FROM records r JOIN candidates c ON c.id = r.candidate_id JOIN problems p "
                   "ON p.id = c.problem_id WHERE p.name = 'SumReduction' AND r.record LIKE '%\"next_worker\"%'"),
            1);
  // The second sample of a group reaped the first's worker before its own timing. Of ReLU's two
  // groups (2 samples each, one lane), the kill can split only the one in progress.
  EXPECT_GE(scalar(db_, "SELECT COUNT(*) FROM records WHERE record LIKE '%\"previous_worker\"%'"), 1);
  EXPECT_EQ(scalar(db_, "SELECT COUNT(*) FROM records WHERE protocol = 'verified' AND verdict = 'pass'"), 2);
  EXPECT_EQ(scalar(db_,
                   "SELECT COUNT(*) FROM records WHERE protocol = 'verified' AND verdict = 'incorrect' "
                   "AND findings LIKE '%distribution_specific:error%'"),
            1);

  // The report of that store.
  const fs::path out = dir_ / "report";
  ASSERT_EQ(finish(start({"report", "--db", db_.string(), "--out", out.string()}, dir_ / "report.log")), 0)
      << slurp(dir_ / "report.log");
  for (const char* file : {"report.html", "report.md", "summary.json"}) EXPECT_TRUE(fs::exists(out / file)) << file;
  const std::string markdown = slurp(out / "report.md");
  EXPECT_NE(markdown.find("model-a"), std::string::npos);
  EXPECT_NE(markdown.find("distribution_specific"), std::string::npos);
  EXPECT_NE(markdown.find("level_1_problem_42_sample_0_kernel.py"), std::string::npos);  // unmatched, listed
  EXPECT_NE(markdown.find("Problem audit"), std::string::npos);
  EXPECT_NE(markdown.find("| run | cpu | cpu |"), std::string::npos) << "the CPU lane's busy share";
  EXPECT_NO_THROW(json::parse(slurp(out / "summary.json")));
  // ReLU's defect is cured, SumReduction is clean: excluding uncured problems leaves everything.
  ASSERT_EQ(finish(start({"report", "--db", db_.string(), "--out", (dir_ / "excluded").string(), "--exclude-uncured"},
                         dir_ / "report.log")),
            0);
  EXPECT_EQ(json::parse(slurp(dir_ / "excluded/summary.json"))["excluded_candidates"], 0);
}

TEST_F(RunAndReport, BadInputIsAUsageErrorOrNamed) {
  const fs::path log = dir_ / "bad.log";
  EXPECT_EQ(finish(start({"run", "--db", db_.string()}, log)), 2);
  EXPECT_NE(slurp(log).find("--manifest"), std::string::npos) << slurp(log);
  EXPECT_EQ(finish(start({"run", "--samples", "/nonexistent", "--problems", dir_.string()}, log)), 2);
  EXPECT_EQ(finish(start({"run", "--manifest", (dir_ / "runs/model-a/notes.py").string(), "--db", db_.string()}, log)),
            1);
  EXPECT_NE(slurp(log).find("header names no"), std::string::npos) << slurp(log);
  std::ofstream(dir_ / "notes.txt") << "not a problem\n";
  EXPECT_EQ(
      finish(start(
          {"run", "--problems", (dir_ / "notes.txt").string(), "--samples", dir_.string(), "--db", db_.string()}, log)),
      1);
  EXPECT_NE(slurp(log).find("kbv: error: --problems: not a Python file"), std::string::npos) << slurp(log);
  // No GPU here: the first lane finds none and the run stops, naming it, without failing every candidate.
  std::vector<std::string> cuda = run_args();
  *std::find(cuda.begin(), cuda.end(), "cpu") = "cuda";
  fs::remove(log);
  EXPECT_EQ(finish(start(cuda, log)), 1);
  EXPECT_NE(slurp(log).find("no CUDA device"), std::string::npos) << slurp(log);
  EXPECT_EQ(scalar(db_, "SELECT COUNT(*) FROM failures"), 0);
  EXPECT_NE(finish(start({"report", "--db", (dir_ / "none.sqlite").string()}, log)), 0);
  EXPECT_FALSE(fs::exists(dir_ / "none.sqlite"));  // a report never creates a store
}

}  // namespace
