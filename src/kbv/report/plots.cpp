#include "kbv/report/plots.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "kbv/report/svg_chart.h"

namespace kbv::report {
namespace {

// One all-levels group of one run, as a plotted series: colour by run, stroke by protocol.
struct Series {
  const Group* group;
  std::string label, color;
  Stroke stroke;
  bool filled;
};

std::vector<Series> all_level_series(const std::vector<RunSummary>& runs) {
  std::set<std::string> devices;
  for (const RunSummary& run : runs) {
    for (const Group& g : run.groups) devices.insert(g.device);
  }
  std::vector<Series> series;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    for (const Group& g : runs[i].groups) {
      if (g.level != kAllLevels) continue;
      std::string label = runs[i].name + ", " + g.protocol + (devices.size() > 1 ? ", " + g.device : "");
      const Stroke stroke = g.protocol == "verified"      ? Stroke::solid
                            : g.protocol == "kernelbench" ? Stroke::dashed
                                                          : Stroke::dotted;
      series.push_back({&g, std::move(label), series_color(i), stroke, g.protocol == "verified"});
    }
  }
  return series;
}

void add_legend(SvgChart& chart, const Series& s) { chart.legend({s.label, s.color, s.stroke, s.filled}); }

// fast_p(p) is a step function of p falling just after each passing speedup (speedup > p).
std::vector<std::pair<double, double>> fast_p_steps(const Stats& stats) {
  std::vector<std::pair<double, double>> points{{0.0, fast_p(stats, 0.0)}};
  double current = fast_p(stats, std::nextafter(0.0, 1.0));  // differs from fast_0 only for passes without a time
  points.emplace_back(0.0, current);
  for (double s : stats.pass_speedups) {
    if (s <= 0.0 || s >= kCurveMaxP) continue;
    points.emplace_back(s, current);
    current = fast_p(stats, s);
    points.emplace_back(s, current);
  }
  points.emplace_back(kCurveMaxP, current);
  return points;
}

// Integer ticks for counts: about five, starting at 0; returns the axis end.
double count_axis(int max_count, std::vector<std::pair<double, std::string>>& ticks) {
  const int step = std::max(1, (max_count + 4) / 5);
  const int end = std::max(step, (max_count + step - 1) / step * step);
  for (int t = 0; t <= end; t += step) ticks.emplace_back(t, std::to_string(t));
  return end;
}

}  // namespace

std::string fast_p_plot(const std::vector<RunSummary>& runs) {
  const Axis x{.label = "speedup threshold p (candidates count when they pass with speedup > p)", .high = kCurveMaxP};
  Axis y{.label = "fast_p: share of all candidates"};
  y.ticks.emplace();
  for (int share : {0, 25, 50, 75, 100}) y.ticks->emplace_back(share / 100.0, std::to_string(share) + "%");
  SvgChart chart("fast_p against the threshold p", x, y);
  chart.vertical_rule(1.0);
  const std::vector<Series> series = all_level_series(runs);
  bool any_pass = false;
  for (const Series& s : series) {
    chart.line(fast_p_steps(s.group->stats), s.color, s.stroke);
    add_legend(chart, s);
    any_pass = any_pass || s.group->stats.passed > 0;
  }
  if (series.empty()) {
    chart.note("no records");
  } else if (!any_pass) {
    chart.note("no passing candidates");
  }
  return chart.svg();
}

std::string speedup_memory_plot(const std::vector<RunSummary>& runs) {
  const std::vector<Series> series = all_level_series(runs);
  // Both axes span the points and 1 (the reference lines), with a margin in log space.
  double x_low = 1, x_high = 1, y_low = 1, y_high = 1;
  bool any = false;
  for (const Series& s : series) {
    for (const auto& [speedup, ratio] : s.group->stats.speedup_vs_peak) {
      if (!(speedup > 0 && ratio > 0 && std::isfinite(speedup) && std::isfinite(ratio))) continue;
      any = true;
      x_low = std::min(x_low, speedup), x_high = std::max(x_high, speedup);
      y_low = std::min(y_low, ratio), y_high = std::max(y_high, ratio);
    }
  }
  const double pad = any ? 1.5 : 10.0;
  SvgChart chart(
      "Speedup against peak memory (passing candidates)",
      {.label = "speedup (baseline time / candidate time, log)", .low = x_low / pad, .high = x_high * pad, .log = true},
      {.label = "peak memory ratio (candidate / baseline, log)",
       .low = y_low / pad,
       .high = y_high * pad,
       .log = true});
  if (any) {  // reference lines only make sense beside points
    chart.vertical_rule(1.0);
    chart.horizontal_rule(1.0);
  }
  for (const Series& s : series) {
    const auto& points = s.group->stats.speedup_vs_peak;
    for (const auto& [speedup, ratio] : points) {
      if (speedup > 0 && ratio > 0 && std::isfinite(speedup) && std::isfinite(ratio))
        chart.marker(speedup, ratio, s.color, s.filled);
    }
    if (!points.empty()) add_legend(chart, s);
  }
  if (!any) chart.note("no passing candidates with measured peak memory");
  return chart.svg();
}

std::string findings_plot(const std::vector<RunSummary>& runs) {
  std::vector<Series> series;
  std::set<std::string> ids;
  for (const Series& s : all_level_series(runs)) {
    if (s.group->stats.findings.empty()) continue;
    for (const auto& [id, count] : s.group->stats.findings) ids.insert(id);
    series.push_back(s);
  }
  int max_count = 0;
  std::size_t longest = 0;
  for (const Series& s : series) {
    for (const auto& [id, count] : s.group->stats.findings)
      max_count = std::max(max_count, count.error + count.warning);
  }
  const auto rows = static_cast<double>(ids.size());
  Axis y{.label = "finding", .high = std::max(rows, 1.0)};
  y.ticks.emplace();  // one per finding id, none without findings
  std::size_t row = 0;
  for (const std::string& id : ids) {  // first id at the top
    y.ticks->emplace_back(rows - static_cast<double>(row++) - 0.5, id);
    longest = std::max(longest, id.size());
  }
  Axis x{.label = "candidates with the finding (solid: error, pale: warning)"};
  x.ticks.emplace();
  x.high = count_axis(max_count, *x.ticks);
  const double band = std::max(28.0, 14.0 * static_cast<double>(series.size()));  // pixels per finding
  const int plot_height = ids.empty() ? 120 : static_cast<int>(band * rows);
  SvgChart chart("Findings", x, y, plot_height, std::max(64, static_cast<int>(longest) * 7 + 20));

  const double bar_share = 0.8 / std::max<double>(1.0, static_cast<double>(series.size()));  // of a band
  for (std::size_t j = 0; j < series.size(); ++j) {
    const Series& s = series[j];
    const double offset = (static_cast<double>(series.size() - 1) / 2.0 - static_cast<double>(j)) * bar_share;
    row = 0;
    for (const std::string& id : ids) {
      const double center = rows - static_cast<double>(row++) - 0.5 + offset;
      const auto count = s.group->stats.findings.find(id);
      if (count == s.group->stats.findings.end()) continue;
      const double error = count->second.error, warning = count->second.warning;
      if (error > 0) chart.bar(0.0, error, center, band * bar_share, s.color, 1.0);
      if (warning > 0) chart.bar(error, error + warning, center, band * bar_share, s.color, 0.4);
    }
    add_legend(chart, s);
  }
  if (ids.empty()) chart.note("no findings");
  return chart.svg();
}

}  // namespace kbv::report
