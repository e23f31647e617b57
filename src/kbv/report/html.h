// report.html: the report's tables and plots in one page that stands alone: inline CSS, SVG and
// one inline script (the candidates' tables sort and filter), no external resource.
// `exclude_uncured` as for markdown_report.
#pragma once

#include <string>
#include <vector>

#include "kbv/report/aggregate.h"

namespace kbv::report {

std::string html_report(const std::string& store, const std::vector<RunSummary>& runs, bool exclude_uncured);

}  // namespace kbv::report
