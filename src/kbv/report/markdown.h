// report.md: the report's tables in Markdown, one section per run. `exclude_uncured` says whether
// `runs` were aggregated without the candidates on problems with an uncured defect (said at the top).
#pragma once

#include <string>
#include <vector>

#include "kbv/report/aggregate.h"

namespace kbv::report {

std::string markdown_report(const std::string& store, const std::vector<RunSummary>& runs, bool exclude_uncured);

}  // namespace kbv::report
