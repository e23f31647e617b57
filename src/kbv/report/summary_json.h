// summary.json: every aggregate of the report, for scripts. Key names are stable; shares are
// fractions in [0, 1]; a value that does not exist (no passing candidate) is null.
// `exclude_uncured` (as for markdown_report) is recorded with the count left out.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kbv/report/aggregate.h"

namespace kbv::report {

nlohmann::json summary_json(const std::string& store, const std::vector<RunSummary>& runs, bool exclude_uncured);

}  // namespace kbv::report
