// `kbv report`: reads a results store and writes report.md, summary.json and report.html.
#pragma once

#include <string>

#include "kbv/report/candidates.h"

namespace kbv::report {

struct ReportOptions {
  std::string db;       // the results store of kbv run; never created here
  std::string out_dir;  // created if needed; the three files in it are replaced
  // Leave out of every number the candidates on problems whose audit found a defect the verified
  // protocol does not cure (docs/report.md, "Problem audit").
  bool exclude_uncured = false;
  // Set: nothing is written; the records matching `query` are printed (a table, or JSON with `json`).
  bool candidates = false;
  CandidateQuery query = {};
  bool json = false;
};

// Writes the three files, prints their paths on stdout and returns 0 (with `candidates`, prints
// the rows instead). A missing or unreadable store, or an output folder that cannot be written,
// prints the reason on stderr and returns 1.
int run_report(const ReportOptions& options);

}  // namespace kbv::report
