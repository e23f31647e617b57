// The three plots of report.html, each a stand-alone SVG element over every run's all-levels
// groups: fast_p against the threshold p, speedup against peak-memory ratio, and findings.
#pragma once

#include <string>
#include <vector>

#include "kbv/report/aggregate.h"

namespace kbv::report {

inline constexpr double kCurveMaxP = 3.0;  // the fast_p curve's x range is [0, kCurveMaxP]

// One curve per run, protocol and device: verified solid, kernelbench dashed.
std::string fast_p_plot(const std::vector<RunSummary>& runs);
// Passing candidates with both peaks measured, log axes; verified filled, kernelbench hollow.
std::string speedup_memory_plot(const std::vector<RunSummary>& runs);
// Candidates per finding id and series; errors solid, warnings pale.
std::string findings_plot(const std::vector<RunSummary>& runs);

}  // namespace kbv::report
