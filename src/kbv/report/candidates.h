// `kbv report --candidates`: every record as a row a user reads without SQL (problem, candidate,
// protocol, verdict, speedup with its CI, peak memory ratio, the verdict's reason, its findings),
// filtered by run, verdict, protocol and device, as a text table or JSON.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kbv/report/results.h"

namespace kbv::report {

// Empty fields match everything.
struct CandidateQuery {
  std::string run, verdict, protocol, device;
};

struct CandidateRow {
  std::string run;
  const Outcome* outcome;  // into the RunResults the rows were taken from
};

// The records that match `query`, run by run in the store's order.
std::vector<CandidateRow> candidate_rows(const std::vector<RunResults>& runs, const CandidateQuery& query);

// A record's columns as every writer prints them (this table, the report's Markdown and HTML):
// problem, candidate, protocol, device, verdict, speedup [95% CI], peak, findings, reason.
std::vector<std::string> candidate_header();
std::vector<std::string> candidate_cells(const Outcome& outcome);

// One line per row under a header; the reason and the findings last, cut to keep a line readable.
std::string candidates_table(const std::vector<CandidateRow>& rows);

// [{"run", "problem", "level", "candidate", "sample", "protocol", "device", "verdict", "reason",
//   "speedup", "speedup_ci", "peak_ratio", "raises_peak", "findings": [{"id", "severity"}]}]
nlohmann::json candidates_json(const std::vector<CandidateRow>& rows);

}  // namespace kbv::report
