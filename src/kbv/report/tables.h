// The report's tables as plain text cells, built once and printed by both the Markdown and the
// HTML writer, so the two pages cannot disagree.
#pragma once

#include <string>
#include <vector>

#include "kbv/report/aggregate.h"

namespace kbv::report {

struct Table {
  std::string title;
  std::string note;  // one sentence on what the numbers are
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  std::string empty;    // said instead of the table when there are no rows
  std::string id = "";  // "candidates": the HTML page lets the reader sort and filter it
};

// "12 candidate files, 2 unmatched, 24 records, 1 failed evaluations.", and how many candidates
// are on problems with an uncured defect.
std::string run_overview(const RunSummary& run);

// Said at the top of the report: that candidates on problems with an uncured defect were left out
// and how many, or how many are counted; empty when there are none and nothing was left out.
std::string uncured_note(const std::vector<RunSummary>& runs, bool exclude_uncured);

// Problem audit, verdicts, speed, memory, findings, verified vs kernelbench, unmatched files,
// failed evaluations, the lanes' device busy share, then every record (the candidates).
std::vector<Table> run_tables(const RunSummary& run);

}  // namespace kbv::report
