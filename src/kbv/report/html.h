// report.html: the report's tables and plots in one page that stands alone: inline CSS and SVG,
// no external resource and no script. `exclude_uncured` as for markdown_report.
#pragma once

#include <string>
#include <vector>

#include "kbv/report/aggregate.h"

namespace kbv::report {

std::string html_report(const std::string& store, const std::vector<RunSummary>& runs, bool exclude_uncured);

}  // namespace kbv::report
