// run_report on a real store: the three files, their tables and keys, and bad input.
#include "kbv/report/report_command.h"

#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <sstream>

#include <nlohmann/json.hpp>

#include "kbv/store/store.h"
#include "sample_store.h"

namespace kbv::report {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string read(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The sample store reported once into <dir>/out.
const fs::path& sample_report() {
  static const fs::path out = [] {
    const fs::path dir = fixtures::fresh_dir("writers");
    const fs::path store = fixtures::write_sample_store(dir);
    ::testing::internal::CaptureStdout();
    EXPECT_EQ(run_report({store.string(), (dir / "out" / "nested").string()}), 0);
    const std::string said = ::testing::internal::GetCapturedStdout();
    for (const char* name : {"report.md", "summary.json", "report.html"}) {
      EXPECT_NE(said.find((dir / "out" / "nested" / name).string()), std::string::npos) << said;
    }
    return dir / "out" / "nested";
  }();
  return out;
}

TEST(Writers, SummaryJsonHoldsTheAggregatesUnderStableKeys) {
  const json summary = json::parse(read(sample_report() / "summary.json"));
  EXPECT_EQ(summary["kbv_report_version"], 1);
  EXPECT_EQ(summary["fast_p_thresholds"], json({0.0, 0.5, 0.8, 1.0, 1.5, 2.0}));
  EXPECT_EQ(summary["geomean_ci"]["resamples"], 2000);
  ASSERT_EQ(summary["runs"].size(), 3u);
  const json& a = summary["runs"][0];
  EXPECT_EQ(a["name"], "model-a");
  const json& all_verified = a["groups"][0];
  EXPECT_EQ(all_verified["level"], "all");
  EXPECT_EQ(all_verified["protocol"], "verified");
  EXPECT_EQ(all_verified["device"], "cuda");
  // Values from aggregate_test: 3 of 6 pass, fast_1 = 1/6, geomean 1 over 3 passing.
  EXPECT_EQ(all_verified["passed"], 3);
  EXPECT_DOUBLE_EQ(all_verified["pass_rate"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(all_verified["fast_p"]["1"].get<double>(), 1.0 / 6);
  EXPECT_DOUBLE_EQ(all_verified["fast_p"]["0.5"].get<double>(), 2.0 / 6);
  EXPECT_NEAR(all_verified["geomean_speedup"]["value"].get<double>(), 1.0, 1e-12);
  EXPECT_EQ(all_verified["geomean_speedup"]["passing"], 3);
  EXPECT_EQ(all_verified["geomean_speedup"]["ci"].size(), 2u);
  EXPECT_EQ(all_verified["verdicts"]["hack"], 1);
  EXPECT_EQ(all_verified["memory"]["raises_peak"], 1);
  EXPECT_DOUBLE_EQ(all_verified["memory"]["median_peak_ratio"].get<double>(), 1.0);
  EXPECT_EQ(all_verified["findings"]["timing_anomaly"]["error"], 1);
  EXPECT_EQ(all_verified["findings"]["library_fallback"]["warning"], 2);
  // Level 2 verified: no passing candidate, so null where a value does not exist.
  EXPECT_EQ(a["groups"][4]["level"], "2");
  EXPECT_TRUE(a["groups"][4]["geomean_speedup"].is_null());
  EXPECT_TRUE(a["groups"][4]["memory"]["median_peak_ratio"].is_null());
  // verified vs kernelbench, all levels: +0.4 pass rate, +0.6 fast_1, two kernelbench-only passes.
  const json& gap = a["protocol_gaps"][0];
  EXPECT_EQ(gap["candidates"], 5);
  EXPECT_NEAR(gap["gap"]["pass_rate"].get<double>(), 0.4, 1e-12);
  EXPECT_NEAR(gap["gap"]["fast_1"].get<double>(), 0.6, 1e-12);
  EXPECT_EQ(gap["passes_only_kernelbench"], 2);
  EXPECT_EQ(summary["runs"][1]["unmatched"][0]["path"], "/s/b/notes | draft.txt");
  EXPECT_TRUE(summary["runs"][1]["groups"].empty());
  EXPECT_EQ(summary["runs"][1]["failures"][0]["message"], "reference worker died");
  // The audit (values from aggregate_test): nothing excluded; c3 and c4 on Softmax, uncured.
  EXPECT_EQ(summary["exclude_uncured"], false);
  EXPECT_EQ(summary["excluded_candidates"], 0);
  EXPECT_EQ(all_verified["on_uncured_problems"], json({{"candidates", 2}, {"passed", 1}}));
  const json& audit = a["problem_audit"];
  EXPECT_EQ(audit["clean"], 1);
  EXPECT_EQ(audit["not_audited"], 0);
  EXPECT_EQ(audit["uncured_candidates"], 2);
  ASSERT_EQ(audit["problems"].size(), 2u);
  EXPECT_EQ(audit["problems"][1], json({{"level", "1"},
                                        {"problem", "2_Softmax"},
                                        {"device", "cuda"},
                                        {"findings",
                                         {{{"id", "near_zero_output"}, {"cured_by_verified", true}},
                                          {{"id", "constant_output"}, {"cured_by_verified", false}}}},
                                        {"error", nullptr},
                                        {"candidates", 2}}));
  EXPECT_EQ(summary["runs"][2]["problem_audit"]["not_audited"], 1);
  // The lanes: model-a written by a kbv run on two GPUs and a kbv serve, model-b by none.
  const json& sessions = a["sessions"];
  ASSERT_EQ(sessions.size(), 2u);
  EXPECT_EQ(sessions[0]["command"], "run");
  EXPECT_NEAR(sessions[0]["lanes"][1]["busy_share"].get<double>(), 0.5, 1e-12);
  EXPECT_EQ(sessions[1]["command"], "serve");
  EXPECT_NEAR(sessions[1]["lanes"][0]["busy_share"].get<double>(), 0.2, 1e-12);
  EXPECT_TRUE(summary["runs"][1]["sessions"].empty());
  EXPECT_EQ(summary["runs"][2]["sessions"].size(), 1u);
  // Every record, as kbv report --candidates --json prints it: model-a has 6 verified and 5
  // kernelbench records.
  ASSERT_EQ(a["candidates"].size(), 11u);
  int hacks = 0;
  for (const json& row : a["candidates"]) {
    if (row["verdict"] != "hack") continue;
    ++hacks;
    EXPECT_EQ(row["protocol"], "verified");
    EXPECT_EQ(row["findings"][0]["id"], "timing_anomaly");
  }
  EXPECT_EQ(hacks, 1);
  EXPECT_TRUE(summary["runs"][1]["candidates"].empty());
}

TEST(Writers, MarkdownHasTheTables) {
  const std::string md = read(sample_report() / "report.md");
  for (const char* expected :
       {"## Run model-a", "## Run model-b", "## Run model-c", "### Verdicts", "### Speed", "### Memory", "### Findings",
        "### verified vs kernelbench", "### Unmatched files", "### Failed evaluations",
        "| /s/b/level_1_problem_1_sample_0_kernel.py | verified | cuda | reference worker died |",
        "| level | protocol | device | fast_0 | fast_0.5 | fast_0.8 | fast_1 | fast_1.5 | fast_2 | geomean speedup | "
        "95% CI |",
        // all levels, verified: 50%, 33.3%, 33.3%, 16.7%, 16.7%, 0%; geomean 1 over 3, CI 0.5 - 2.
        "| all | verified | cuda | 50.0% | 33.3% | 33.3% | 16.7% | 16.7% | 0.0% | 1.00x over 3 passing | 0.50x - 2.00x "
        "|",
        "| 2 | verified | cuda | 0.0% | 0.0% | 0.0% | 0.0% | 0.0% | 0.0% | no passing candidates | - |",
        "| timing_anomaly | verified | cuda | 1 | 0 |",
        // gap row, all levels: 60% vs 100% (+40 pp), fast_1 20% vs 80% (+60 pp), geomean +0.77.
        "| all | cuda | 5 | 60.0% | 100.0% | +40.0 pp | 20.0% | 80.0% | +60.0 pp | 1.00x over 3 passing | 1.77x over 5 "
        "passing | +0.77 | 2 | 0 |",
        "| /s/b/notes \\| draft.txt | no problem matches its name |",  // the pipe escaped
        "_no records_",
        // The audit: said at the top, per run, per problem and per group.
        "**2 candidates are on problems with a defect the verified protocol does not cure",
        "0 failed evaluations. 2 candidates on problems with an uncured defect, counted in every number.",
        "### Problem audit", "Audited clean: 1; not audited: 0.", "Audited clean: 0; not audited: 1.",
        "| level | problem | device | findings | candidates |",
        "| 1 | 1_ReLU | cuda | identity_under_inputs (cured: yes) | 2 |",
        "| 1 | 2_Softmax | cuda | near_zero_output (cured: yes), constant_output (cured: NO) | 2 |",
        "_no audit findings_", "| level | protocol | device | candidates | problems | on uncured problems | pass |",
        "| all | verified | cuda | 6 | 3 | 2 | 3 | 1 | 1 | 0 | 1 | 0 | 0 | 0 | 0 | 50.0% | 2 |",
        "| all | kernelbench | cuda | 5 | 3 | 2 | 5 |", "| 1.00x over 3 passing | 0.50x - 2.00x | 1 |",
        // Each lane's device busy share, and a run no invocation of which kept its lanes.
        "### Device busy share", "| when | command | device | lane | evaluations | busy share | device s | wall s |",
        "| run | cuda | 0 | 10 | 80.0% | 80.0 | 100.0 |", "| run | cuda | 1 | 5 | 50.0% | 45.0 | 90.0 |",
        "| serve | cuda | 0 | 2 | 20.0% | 10.0 | 50.0 |", "_none kept: no kbv run or kbv serve",
        // Every record, one row each, the reason whole.
        "### Candidates",
        "| problem | candidate | protocol | device | verdict | speedup [95% CI] | peak | findings | reason |",
        "| level1/2_Softmax | /s/a/level_1_problem_2_sample_1_kernel.py | verified | cuda | hack | 10.00x [9.00, "
        "11.00] "
        "| 1.00x | timing_anomaly,library_fallback(w) | timing_anomaly |",
        "| level2/1_Conv | /s/a/level_2_problem_1_sample_1_kernel.py | verified | cuda | compile_error | - | - | - | - "
        "|"}) {
    EXPECT_NE(md.find(expected), std::string::npos) << "missing: " << expected;
  }
}

TEST(Writers, ExcludingUncuredSaysSoAndChangesEveryNumber) {
  const fs::path dir = fixtures::fresh_dir("excluded");
  ReportOptions options{fixtures::write_sample_store(dir).string(), (dir / "out").string()};
  options.exclude_uncured = true;
  ::testing::internal::CaptureStdout();
  ASSERT_EQ(run_report(options), 0);
  ::testing::internal::GetCapturedStdout();
  // Values from aggregate_test: without c3 and c4, verified passes 2 of 4 (2.0 and 0.5).
  const std::string md = read(dir / "out" / "report.md");
  for (const char* expected :
       {"**Candidates on problems with a defect the verified protocol does not cure are left out of every "
        "number: 2 candidates excluded",
        "6 candidate files, 0 unmatched, 7 records, 0 failed evaluations. 2 candidates on problems with an uncured "
        "defect, left out of every number.",
        "| 1 | 2_Softmax | cuda | near_zero_output (cured: yes), constant_output (cured: NO) | 2 |",
        "| all | verified | cuda | 4 | 2 | 0 | 2 | 1 | 0 | 0 | 1 | 0 | 0 | 0 | 0 | 50.0% | 1 |",
        "| all | verified | cuda | 50.0% | 25.0% | 25.0% | 25.0% | 25.0% | 0.0% | 1.00x over 2 passing | 0.50x - 2.00x "
        "| 0 |",
        "| all | cuda | 3 | 66.7% | 100.0% | +33.3 pp | 33.3% | 66.7% | +33.3 pp |"}) {
    EXPECT_NE(md.find(expected), std::string::npos) << "missing: " << expected;
  }
  EXPECT_EQ(md.find("timing_anomaly"), std::string::npos);  // c4's finding is left out too
  const std::string html = read(dir / "out" / "report.html");
  EXPECT_NE(
      html.find("<p class=\"uncured\">Candidates on problems with a defect the verified protocol does not cure are "
                "left out of every number: 2 candidates excluded"),
      std::string::npos);
  const json summary = json::parse(read(dir / "out" / "summary.json"));
  EXPECT_EQ(summary["exclude_uncured"], true);
  EXPECT_EQ(summary["excluded_candidates"], 2);
  EXPECT_EQ(summary["runs"][0]["excluded_candidates"], 2);
  EXPECT_EQ(summary["runs"][2]["excluded_candidates"], 0);
  const json& all_verified = summary["runs"][0]["groups"][0];
  EXPECT_EQ(all_verified["candidates"], 4);
  EXPECT_DOUBLE_EQ(all_verified["fast_p"]["1"].get<double>(), 0.25);
  EXPECT_EQ(all_verified["on_uncured_problems"]["candidates"], 0);
  EXPECT_EQ(summary["runs"][0]["protocol_gaps"][0]["passes_only_kernelbench"], 1);
}

TEST(Writers, HtmlStandsAloneWithThreePlots) {
  const std::string html = read(sample_report() / "report.html");
  std::size_t svgs = 0;
  for (auto at = html.find("<svg "); at != std::string::npos; at = html.find("<svg ", at + 1)) ++svgs;
  EXPECT_EQ(svgs, 3u);
  for (const char* plot :
       {"fast_p against the threshold p", "Speedup against peak memory", "<title>Findings</title>"}) {
    EXPECT_NE(html.find(plot), std::string::npos) << plot;
  }
  // One inline script (the candidates' table), no external resource: the only URL is the SVG namespace.
  EXPECT_EQ(html.find("<script"), html.rfind("<script"));
  EXPECT_NE(html.find("<script>"), std::string::npos);
  EXPECT_EQ(html.find("src="), std::string::npos);
  EXPECT_EQ(html.find("href="), std::string::npos);
  EXPECT_EQ(html.find("https://"), std::string::npos);
  std::string rest = html;
  for (auto at = rest.find("http://www.w3.org/2000/svg"); at != std::string::npos;
       at = rest.find("http://www.w3.org/2000/svg")) {
    rest.erase(at, 26);
  }
  EXPECT_EQ(rest.find("http://"), std::string::npos);
  EXPECT_NE(html.find("<td>1.00x over 3 passing</td>"), std::string::npos);
  EXPECT_NE(html.find("/s/b/notes | draft.txt"), std::string::npos);
}

TEST(Writers, AStoreWithNothingPassingSaysSo) {
  const fs::path dir = fixtures::fresh_dir("failing");
  ASSERT_EQ(run_report({fixtures::write_failing_store(dir).string(), (dir / "out").string()}), 0);
  const std::string html = read(dir / "out" / "report.html");
  EXPECT_NE(html.find(">no passing candidates</text>"), std::string::npos);  // the fast_p plot
  EXPECT_NE(html.find(">no passing candidates with measured peak memory</text>"), std::string::npos);
  EXPECT_NE(html.find(">no findings</text>"), std::string::npos);
  // No division by zero reached the page: no NaN or infinity printed as a number or coordinate.
  EXPECT_FALSE(std::regex_search(html, std::regex("[^a-z](-?nan|-?inf)[^a-z]")));
  const json summary = json::parse(read(dir / "out" / "summary.json"));
  EXPECT_TRUE(summary["runs"][0]["groups"][0]["geomean_speedup"].is_null());
  EXPECT_TRUE(summary["runs"][0]["protocol_gaps"].empty());  // no candidate has both records
  // Its problem could not be audited: listed with the reason, never counted as clean.
  EXPECT_NE(read(dir / "out" / "report.md")
                .find("| 1 | 3_Sum | cuda | could not be audited: reference raised: shape mismatch | 2 |"),
            std::string::npos);
  EXPECT_EQ(summary["runs"][0]["problem_audit"]["problems"][0]["error"], "reference raised: shape mismatch");
  EXPECT_EQ(summary["runs"][0]["problem_audit"]["clean"], 0);
}

TEST(Writers, AStoreFromBeforeAuditsHasNothingAudited) {
  const fs::path dir = fixtures::fresh_dir("no_audits");
  const fs::path store = fixtures::write_failing_store(dir);
  kbv::store::Store(store.string()).database().exec("DROP TABLE audits");  // as written before audits existed
  ::testing::internal::CaptureStdout();
  ASSERT_EQ(run_report({store.string(), (dir / "out").string()}), 0);
  ::testing::internal::GetCapturedStdout();
  const json audit = json::parse(read(dir / "out" / "summary.json"))["runs"][0]["problem_audit"];
  EXPECT_TRUE(audit["problems"].empty());
  EXPECT_EQ(audit["not_audited"], 1);
}

TEST(Writers, AnEmptyStoreGivesAnEmptyReport) {
  const fs::path dir = fixtures::fresh_dir("empty");
  kbv::store::Store((dir / "empty.sqlite").string());  // the schema, no run
  ASSERT_EQ(run_report({(dir / "empty.sqlite").string(), (dir / "out").string()}), 0);
  EXPECT_NE(read(dir / "out" / "report.md").find("_The store holds no runs._"), std::string::npos);
  EXPECT_NE(read(dir / "out" / "report.html").find(">no records</text>"), std::string::npos);
  EXPECT_TRUE(json::parse(read(dir / "out" / "summary.json"))["runs"].empty());
}

TEST(Writers, BadInputFailsWithoutCreatingAStore) {
  const fs::path dir = fixtures::fresh_dir("bad");
  ::testing::internal::CaptureStderr();
  EXPECT_NE(run_report({(dir / "missing.sqlite").string(), (dir / "out").string()}), 0);
  EXPECT_NE(::testing::internal::GetCapturedStderr().find("no results store at"), std::string::npos);
  EXPECT_FALSE(fs::exists(dir / "missing.sqlite"));
  EXPECT_FALSE(fs::exists(dir / "out"));

  std::ofstream(dir / "garbage.sqlite") << "not a database, just text long enough to be read as a header page";
  ::testing::internal::CaptureStderr();
  EXPECT_NE(run_report({(dir / "garbage.sqlite").string(), (dir / "out").string()}), 0);
  EXPECT_NE(::testing::internal::GetCapturedStderr().find("cannot read the store"), std::string::npos);

  std::ofstream(dir / "a_file") << "x";  // the output folder's place is taken by a file
  ::testing::internal::CaptureStderr();
  EXPECT_NE(run_report({fixtures::write_sample_store(dir).string(), (dir / "a_file").string()}), 0);
  EXPECT_NE(::testing::internal::GetCapturedStderr().find("kbv report:"), std::string::npos);

  ::testing::internal::CaptureStderr();
  EXPECT_NE(run_report({"", (dir / "out").string()}), 0);
  EXPECT_NE(::testing::internal::GetCapturedStderr().find("--db"), std::string::npos);
}

}  // namespace
}  // namespace kbv::report
