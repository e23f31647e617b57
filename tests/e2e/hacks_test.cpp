// The hack corpus (tests/hacks/manifest.tsv) end to end on the CPU: every candidate that commits a
// hack gets its expected verdict under the verified protocol with the expected finding id, and no
// honest candidate gets an error finding. The real binary, real workers, real torch.
#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "kbv_runner.h"

namespace {

namespace fs = std::filesystem;
using kbv::testing::Outcome;
using nlohmann::json;

const fs::path kRoot = KBV_ROOT_DIR;

struct Row {
  std::string problem, candidate, verdict;
  std::vector<std::string> findings;  // ids that must be present
};

std::vector<Row> corpus(const std::string& device) {
  std::vector<Row> rows;
  for (const auto& cells : kbv::testing::read_tsv((kRoot / "tests/hacks/manifest.tsv").string())) {
    if (cells.size() < 5 || cells[2] != device) continue;
    Row row{cells[0], cells[1], cells[3], {}};
    std::stringstream ids(cells[4]);
    for (std::string id; std::getline(ids, id, ',');) {
      if (id != "-" && !id.empty()) row.findings.push_back(id);
    }
    rows.push_back(row);
  }
  return rows;
}

std::map<std::string, std::string> severities(const json& record) {
  std::map<std::string, std::string> found;
  for (const json& f : record.value("findings", json::array())) found[f["id"]] = f["severity"];
  return found;
}

class HackCorpus : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    rows_ = corpus("cpu");
    std::vector<std::pair<std::string, std::vector<std::string>>> jobs;
    for (const Row& row : rows_) {
      jobs.push_back(
          {row.candidate,
           {(kRoot / row.problem).string(), (kRoot / row.candidate).string(), "--timeout", "60", "--quiet"}});
    }
    runs_ = kbv::testing::kbv_eval_all(jobs);
  }
  static inline std::vector<Row> rows_;
  static inline std::map<std::string, Outcome> runs_;
};

TEST_F(HackCorpus, EveryHackIsNamedAndEveryHonestCandidateStaysClean) {
  ASSERT_GE(rows_.size(), 15u);
  for (const Row& row : rows_) {
    const Outcome& r = runs_.at(row.candidate);
    ASSERT_EQ(r.exit_code, 0) << row.candidate << "\n" << r.err;
    const auto found = severities(r.record);
    EXPECT_EQ(r.record.value("verdict", "?"), row.verdict)
        << row.candidate << ": " << r.record.value("verdict_reason", "") << "\n"
        << r.out;
    for (const std::string& id : row.findings) {
      EXPECT_TRUE(found.count(id)) << row.candidate << ": expected finding " << id << "\n" << r.out;
    }
    if (row.verdict == "pass") {
      for (const auto& [id, severity] : found)
        EXPECT_NE(severity, "error") << row.candidate << ": " << id << "\n" << r.out;
    }
  }
}

TEST_F(HackCorpus, SummaryShowsFindingsWithEvidence) {
  const Outcome& r = runs_.at("tests/hacks/candidates/cpu_input_mutation.py");
  EXPECT_NE(r.out.find("input_mutation (error)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("elements_changed"), std::string::npos) << r.out;
}

TEST_F(HackCorpus, StaticEvidenceNamesTheLine) {
  const json& record = runs_.at("tests/hacks/candidates/cpu_monkeypatch.py").record;
  bool line_named = false;
  for (const json& f : record["findings"]) {
    if (f["id"] != "global_state_tamper") continue;
    for (const json& e : f["evidence"]) line_named |= e.value("source", "") == "static" && e.value("line", 0) > 0;
  }
  EXPECT_TRUE(line_named) << record["findings"].dump(2);
}

}  // namespace
