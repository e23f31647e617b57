// kbv report --candidates on the sample store: the rows a user asks for without SQL.
#include "kbv/report/candidates.h"

#include <gtest/gtest.h>

#include "kbv/report/report_command.h"
#include "kbv/report/results.h"
#include "sample_store.h"

namespace kbv::report {
namespace {

CandidateQuery where(std::string run, std::string verdict, std::string protocol, std::string device) {
  return {std::move(run), std::move(verdict), std::move(protocol), std::move(device)};
}

const std::vector<RunResults>& sample_runs() {
  static const std::vector<RunResults> runs =
      read_results(fixtures::write_sample_store(fixtures::fresh_dir("candidates")).string());
  return runs;
}

TEST(Candidates, TheVerifiedHackIsOneRowWithItsReasonAndFindings) {
  const auto rows = candidate_rows(sample_runs(), where("", "hack", "verified", ""));
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].run, "model-a");
  const nlohmann::json json = candidates_json(rows)[0];
  EXPECT_EQ(json["candidate"], "/s/a/level_1_problem_2_sample_1_kernel.py");
  EXPECT_EQ(json["problem"], "level1/2_Softmax");
  EXPECT_EQ(json["sample"], 1);
  EXPECT_EQ(json["reason"], "timing_anomaly");
  EXPECT_DOUBLE_EQ(json["speedup"].get<double>(), 10.0);
  EXPECT_DOUBLE_EQ(json["speedup_ci"][0].get<double>(), 9.0);
  EXPECT_EQ(json["findings"].size(), 2u);
  EXPECT_EQ(json["findings"][0]["id"], "timing_anomaly");
  const std::string table = candidates_table(rows);
  EXPECT_NE(table.find("timing_anomaly,library_fallback(w)"), std::string::npos) << table;
  EXPECT_NE(table.find("10.00x [9.00, 11.00]"), std::string::npos) << table;
  EXPECT_NE(table.find("1 record\n"), std::string::npos) << table;
}

TEST(Candidates, EmptyFieldsMatchEverything) {
  std::size_t records = 0;
  for (const RunResults& run : sample_runs()) records += run.outcomes.size();
  EXPECT_EQ(candidate_rows(sample_runs(), where("", "", "", "")).size(), records);
  // model-a: six verified records and five kernelbench ones.
  EXPECT_EQ(candidate_rows(sample_runs(), where("model-a", "", "", "")).size(), 11u);
  EXPECT_EQ(candidate_rows(sample_runs(), where("model-a", "", "kernelbench", "")).size(), 5u);
  EXPECT_TRUE(candidate_rows(sample_runs(), where("", "", "", "cpu")).empty());
}

TEST(Candidates, AProblemOutsideALevelAndARecordWithoutTiming) {
  const auto rows = candidate_rows(sample_runs(), where("model-c", "", "", ""));
  ASSERT_EQ(rows.size(), 1u);
  const nlohmann::json json = candidates_json(rows)[0];
  EXPECT_EQ(json["problem"], "7_Thing");
  EXPECT_TRUE(json["level"].is_null());
  EXPECT_TRUE(json["sample"].is_null());
  EXPECT_EQ(json["verdict"], "timeout");
  EXPECT_TRUE(json["speedup"].is_null());
  EXPECT_TRUE(json["speedup_ci"].is_null());
}

TEST(Candidates, AMissingStoreIsAnErrorAndNothingIsPrinted) {
  ReportOptions options;
  options.db = (fixtures::fresh_dir("candidates_missing") / "none.sqlite").string();
  options.candidates = true;
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(run_report(options), 1);
  EXPECT_EQ(::testing::internal::GetCapturedStdout(), "");
  EXPECT_NE(::testing::internal::GetCapturedStderr().find("no results store"), std::string::npos);
}

}  // namespace
}  // namespace kbv::report
