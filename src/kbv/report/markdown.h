// report.md: the report's tables in Markdown, one section per run.
#pragma once

#include <string>
#include <vector>

#include "kbv/report/aggregate.h"

namespace kbv::report {

std::string markdown_report(const std::string& store, const std::vector<RunSummary>& runs);

}  // namespace kbv::report
