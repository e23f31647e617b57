// The results store on a real SQLite file: ids are stable across reopening, a record is kept
// exactly once per (candidate, protocol, device), and a killed writer's finished records survive.
#include "kbv/store/store.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>

#include <SQLiteCpp/Statement.h>

namespace {

namespace fs = std::filesystem;
using kbv::store::Store;
using nlohmann::json;

fs::path fresh_path(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("kbv_store_test_" + std::to_string(getpid()));
  fs::create_directories(dir);
  const fs::path path = dir / name;
  for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(path.string() + suffix);
  return path;
}

const json kRecord = {{"verdict", "pass"},
                      {"timing", {{"speedup", 1.5}, {"baseline_ms", 3.0}, {"candidate_ms", 2.0}}},
                      {"memory", {{"peak_ratio", 1.25}, {"raises_peak", true}}},
                      {"findings", {{{"id", "library_fallback"}, {"severity", "warning"}}}},
                      {"wall_seconds", 4.0}};

std::int64_t count(Store& store, const std::string& table) {
  SQLite::Statement s(store.database(), "SELECT COUNT(*) FROM " + table);
  s.executeStep();
  return s.getColumn(0).getInt64();
}

TEST(Store, IdsAreStableAcrossReopening) {
  const fs::path path = fresh_path("ids.sqlite");
  std::int64_t run, problem, candidate, environment;
  {
    Store store(path.string());
    run = store.run("model-a");
    problem = store.problem({"/p/level1/1_ReLU.py", 1, 1, "ReLU", "k1"});
    candidate = store.candidate(run, problem, {"/s/level_1_problem_1_sample_0_kernel.py", 0, "c1"});
    environment = store.environment({{"gpu", "H200"}, {"torch", "2.11.0"}});
  }
  Store store(path.string());
  EXPECT_EQ(store.run("model-a"), run);
  EXPECT_NE(store.run("model-b"), run);
  EXPECT_EQ(store.problem({"/p/level1/1_ReLU.py", 1, 1, "ReLU", "k2"}), problem);
  EXPECT_EQ(store.candidate(run, problem, {"/s/level_1_problem_1_sample_0_kernel.py", 0, "c1"}), candidate);
  EXPECT_EQ(store.environment({{"torch", "2.11.0"}, {"gpu", "H200"}}), environment);  // same facts, any order
  EXPECT_EQ(count(store, "problems"), 1);
}

TEST(Store, ARecordIsKeptOncePerCandidateProtocolAndDevice) {
  Store store(fresh_path("once.sqlite").string());
  const auto run = store.run("r");
  const auto problem = store.problem({"/p/2_X.py", std::nullopt, 2, "X", "k"});
  const auto candidate = store.candidate(run, problem, {"/c.py", std::nullopt, "c"});
  const auto environment = store.environment({{"device", "cpu"}});
  const auto baseline = store.baseline(problem, "verified", "cpu", environment, {{"seconds", 0.003}}, 1024);
  EXPECT_FALSE(store.has_record(candidate, "verified", "cpu"));
  EXPECT_TRUE(store.add_record(candidate, "verified", "cpu", baseline, environment, kRecord));
  EXPECT_TRUE(store.has_record(candidate, "verified", "cpu"));
  EXPECT_FALSE(store.add_record(candidate, "verified", "cpu", baseline, environment, kRecord));
  EXPECT_TRUE(store.add_record(candidate, "kernelbench", "cpu", std::nullopt, environment, kRecord));

  SQLite::Statement row(store.database(),
                        "SELECT verdict, speedup, peak_ratio, raises_peak, findings, baseline_id FROM records WHERE "
                        "protocol = 'verified'");
  ASSERT_TRUE(row.executeStep());
  EXPECT_EQ(row.getColumn(0).getString(), "pass");
  EXPECT_DOUBLE_EQ(row.getColumn(1).getDouble(), 1.5);
  EXPECT_DOUBLE_EQ(row.getColumn(2).getDouble(), 1.25);
  EXPECT_EQ(row.getColumn(3).getInt(), 1);
  EXPECT_EQ(row.getColumn(4).getString(), "library_fallback:warning");
  EXPECT_EQ(row.getColumn(5).getInt64(), baseline);
  EXPECT_EQ(count(store, "records"), 2);
}

TEST(Store, RecordsOfAKilledWriterSurvive) {
  const fs::path path = fresh_path("killed.sqlite");
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    Store store(path.string());
    const auto run = store.run("r");
    const auto problem = store.problem({"/p/3_Y.py", std::nullopt, 3, "Y", "k"});
    const auto environment = store.environment({{"device", "cpu"}});
    for (int i = 0;; ++i) {  // writes until killed
      const auto candidate = store.candidate(run, problem, {"/c" + std::to_string(i) + ".py", i, "c"});
      store.add_record(candidate, "verified", "cpu", std::nullopt, environment, kRecord);
    }
  }
  usleep(300 * 1000);
  ::kill(child, SIGKILL);
  int status = 0;
  waitpid(child, &status, 0);
  Store store(path.string());
  const std::int64_t records = count(store, "records");
  EXPECT_GT(records, 0);
  // Every candidate row but possibly the last has its record: each record is one transaction.
  EXPECT_LE(count(store, "candidates") - records, 1);
  SQLite::Statement integrity(store.database(), "PRAGMA integrity_check");
  ASSERT_TRUE(integrity.executeStep());
  EXPECT_EQ(integrity.getColumn(0).getString(), "ok");
}

}  // namespace
