// A chart drawn as a stand-alone SVG element: a titled plot area with two labelled axes (linear
// or log10), marks placed in data coordinates, reference lines, a legend under the axes and a
// centred note for a chart with nothing to show. Written by hand so report.html needs no library
// and no script; the element has a fixed width and height, so it renders at that size anywhere.
#pragma once

#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace kbv::report {

struct Axis {
  std::string label;
  double low = 0, high = 1;  // data range; both > 0 on a log axis
  bool log = false;
  // Position and label of each tick; none: chosen from the range (an empty list draws no tick).
  std::optional<std::vector<std::pair<double, std::string>>> ticks{};
};

enum class Stroke { solid, dashed, dotted };

struct LegendEntry {
  std::string label, color;
  Stroke stroke = Stroke::solid;
  bool filled = true;  // marker drawn filled (or as an outline)
};

class SvgChart {
 public:
  // `left_margin` makes room for long tick labels on the y axis (category names).
  SvgChart(std::string title, Axis x, Axis y, int plot_height = 300, int left_margin = 64);

  void line(const std::vector<std::pair<double, double>>& points, const std::string& color, Stroke stroke);
  void marker(double x, double y, const std::string& color, bool filled);
  // A horizontal bar from x0 to x1, centred on y, `height` pixels tall.
  void bar(double x0, double x1, double y, double height, const std::string& color, double opacity);
  void vertical_rule(double x);  // reference lines, e.g. speedup 1
  void horizontal_rule(double y);
  void note(const std::string& text);  // centred in the plot area
  void legend(LegendEntry entry);

  std::string svg() const;

 private:
  double px(double x) const;
  double py(double y) const;
  std::string axes() const;

  std::string title_;
  Axis x_, y_;
  int plot_height_, left_;
  std::vector<LegendEntry> legend_;
  std::ostringstream marks_;
};

// Distinct colours for series (one per run), cycled.
const std::string& series_color(std::size_t index);

}  // namespace kbv::report
