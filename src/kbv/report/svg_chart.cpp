#include "kbv/report/svg_chart.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>

#include "kbv/report/format.h"

namespace kbv::report {
namespace {

constexpr int kWidth = 720;
constexpr int kRight = 24;
constexpr int kTop = 40;     // the title
constexpr int kBottom = 52;  // tick labels and the x axis label
constexpr int kLegendLine = 18;

std::string num(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f", v);
  return text;
}

std::string tick_label(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", v);
  return text;
}

const char* dash(Stroke stroke) {
  switch (stroke) {
    case Stroke::dashed: return " stroke-dasharray=\"7 4\"";
    case Stroke::dotted: return " stroke-dasharray=\"2 3\"";
    case Stroke::solid: break;
  }
  return "";
}

// About five ticks at 1, 2 or 5 times a power of ten.
std::vector<double> linear_ticks(double low, double high) {
  const double raw = (high - low) / 5.0;
  if (!(raw > 0)) return {low};
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  double step = magnitude;
  for (double m : {2.0, 5.0, 10.0}) {
    if (step < raw) step = m * magnitude;
  }
  std::vector<double> ticks;
  for (double t = std::ceil(low / step) * step; t <= high + step * 1e-9; t += step)
    ticks.push_back(std::abs(t) < step * 1e-9 ? 0.0 : t);
  return ticks;
}

// Powers of ten; over a range of two decades or less, also 2x and 5x them so some tick shows.
std::vector<double> log_ticks(double low, double high) {
  const bool fine = std::log10(high / low) <= 2.0;
  std::vector<double> ticks;
  for (int e = static_cast<int>(std::floor(std::log10(low))); e <= static_cast<int>(std::ceil(std::log10(high))); ++e) {
    for (double m : {1.0, 2.0, 5.0}) {
      const double t = m * std::pow(10.0, e);
      if ((m == 1.0 || fine) && t >= low * (1 - 1e-9) && t <= high * (1 + 1e-9)) ticks.push_back(t);
    }
  }
  return ticks;
}

std::vector<std::pair<double, std::string>> ticks_of(const Axis& axis) {
  if (axis.ticks) return *axis.ticks;
  std::vector<std::pair<double, std::string>> ticks;
  for (double t : axis.log ? log_ticks(axis.low, axis.high) : linear_ticks(axis.low, axis.high))
    ticks.emplace_back(t, tick_label(t));
  return ticks;
}

// Position of v along the axis as a fraction in [0, 1]; values outside the range sit on its edge.
double fraction(const Axis& axis, double v) {
  double t = 0.5;
  if (axis.log) {
    if (v > 0 && axis.high > axis.low) t = std::log(v / axis.low) / std::log(axis.high / axis.low);
    if (!(v > 0)) t = 0.0;
  } else if (axis.high > axis.low) {
    t = (v - axis.low) / (axis.high - axis.low);
  }
  return std::clamp(std::isnan(t) ? 0.5 : t, 0.0, 1.0);
}

}  // namespace

const std::string& series_color(std::size_t index) {
  // Tableau 10: distinct in print and for the common colour-vision deficiencies.
  static const std::array<std::string, 8> kColors{"#4e79a7", "#e15759", "#59a14f", "#f28e2b",
                                                  "#b07aa1", "#76b7b2", "#9c755f", "#edc948"};
  return kColors[index % kColors.size()];
}

SvgChart::SvgChart(std::string title, Axis x, Axis y, int plot_height, int left_margin)
    : title_(std::move(title)), x_(std::move(x)), y_(std::move(y)), plot_height_(plot_height), left_(left_margin) {}

double SvgChart::px(double x) const { return left_ + fraction(x_, x) * (kWidth - kRight - left_); }
double SvgChart::py(double y) const { return kTop + (1.0 - fraction(y_, y)) * plot_height_; }

void SvgChart::line(const std::vector<std::pair<double, double>>& points, const std::string& color, Stroke stroke) {
  marks_ << "<polyline fill=\"none\" stroke=\"" << color << "\" stroke-width=\"2\"" << dash(stroke) << " points=\"";
  for (const auto& [x, y] : points) marks_ << num(px(x)) << ',' << num(py(y)) << ' ';
  marks_ << "\"/>\n";
}

void SvgChart::marker(double x, double y, const std::string& color, bool filled) {
  marks_ << "<circle cx=\"" << num(px(x)) << "\" cy=\"" << num(py(y)) << "\" r=\"4\" stroke=\"" << color
         << "\" stroke-width=\"1.5\" fill=\"" << (filled ? color : "none") << "\" fill-opacity=\"0.75\"/>\n";
}

void SvgChart::bar(double x0, double x1, double y, double height, const std::string& color, double opacity) {
  const double left = px(x0);
  marks_ << "<rect x=\"" << num(left) << "\" y=\"" << num(py(y) - height / 2) << "\" width=\"" << num(px(x1) - left)
         << "\" height=\"" << num(height) << "\" fill=\"" << color << "\" fill-opacity=\"" << opacity << "\"/>\n";
}

void SvgChart::vertical_rule(double x) {
  marks_ << "<line x1=\"" << num(px(x)) << "\" x2=\"" << num(px(x)) << "\" y1=\"" << kTop << "\" y2=\""
         << kTop + plot_height_ << "\" stroke=\"#888\" stroke-dasharray=\"3 3\"/>\n";
}

void SvgChart::horizontal_rule(double y) {
  marks_ << "<line x1=\"" << left_ << "\" x2=\"" << kWidth - kRight << "\" y1=\"" << num(py(y)) << "\" y2=\""
         << num(py(y)) << "\" stroke=\"#888\" stroke-dasharray=\"3 3\"/>\n";
}

void SvgChart::note(const std::string& text) {
  marks_ << "<text x=\"" << (left_ + kWidth - kRight) / 2 << "\" y=\"" << kTop + plot_height_ / 2
         << "\" text-anchor=\"middle\" font-size=\"15\" fill=\"#555\">" << escape_xml(text) << "</text>\n";
}

void SvgChart::legend(LegendEntry entry) { legend_.push_back(std::move(entry)); }

std::string SvgChart::axes() const {
  std::ostringstream out;
  const int right = kWidth - kRight, bottom = kTop + plot_height_;
  out << "<rect x=\"" << left_ << "\" y=\"" << kTop << "\" width=\"" << right - left_ << "\" height=\"" << plot_height_
      << "\" fill=\"none\" stroke=\"#333\"/>\n";
  for (const auto& [v, label] : ticks_of(x_)) {
    const std::string x = num(px(v));
    out << "<line x1=\"" << x << "\" x2=\"" << x << "\" y1=\"" << bottom << "\" y2=\"" << bottom + 5
        << "\" stroke=\"#333\"/>"
        << "<text x=\"" << x << "\" y=\"" << bottom + 18 << "\" text-anchor=\"middle\">" << escape_xml(label)
        << "</text>\n";
  }
  for (const auto& [v, label] : ticks_of(y_)) {
    const std::string y = num(py(v));
    out << "<line x1=\"" << left_ - 5 << "\" x2=\"" << left_ << "\" y1=\"" << y << "\" y2=\"" << y
        << "\" stroke=\"#333\"/>"
        << "<text x=\"" << left_ - 8 << "\" y=\"" << y << "\" dy=\"0.32em\" text-anchor=\"end\">" << escape_xml(label)
        << "</text>\n";
  }
  out << "<text x=\"" << (left_ + right) / 2 << "\" y=\"" << bottom + 40 << "\" text-anchor=\"middle\">"
      << escape_xml(x_.label) << "</text>\n";
  out << "<text transform=\"translate(14 " << kTop + plot_height_ / 2 << ") rotate(-90)\" text-anchor=\"middle\">"
      << escape_xml(y_.label) << "</text>\n";
  return out.str();
}

std::string SvgChart::svg() const {
  const int height = kTop + plot_height_ + kBottom + static_cast<int>(legend_.size()) * kLegendLine + 8;
  std::ostringstream out;
  out << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << kWidth << "\" height=\"" << height
      << "\" viewBox=\"0 0 " << kWidth << ' ' << height << "\" role=\"img\" aria-label=\"" << escape_xml(title_)
      << "\" font-family=\"sans-serif\" font-size=\"12\">\n<title>" << escape_xml(title_) << "</title>\n"
      << "<rect width=\"100%\" height=\"100%\" fill=\"#fff\"/>\n<text x=\"" << kWidth / 2
      << "\" y=\"24\" text-anchor=\"middle\" font-size=\"15\" font-weight=\"bold\">" << escape_xml(title_)
      << "</text>\n"
      << axes() << marks_.str();
  int y = kTop + plot_height_ + kBottom + kLegendLine / 2;
  for (const LegendEntry& e : legend_) {
    out << "<line x1=\"" << left_ << "\" x2=\"" << left_ + 28 << "\" y1=\"" << y << "\" y2=\"" << y << "\" stroke=\""
        << e.color << "\" stroke-width=\"2\"" << dash(e.stroke) << "/><circle cx=\"" << left_ + 14 << "\" cy=\"" << y
        << "\" r=\"4\" stroke=\"" << e.color << "\" fill=\"" << (e.filled ? e.color : "#fff") << "\"/><text x=\""
        << left_ + 36 << "\" y=\"" << y << "\" dy=\"0.32em\">" << escape_xml(e.label) << "</text>\n";
    y += kLegendLine;
  }
  out << "</svg>\n";
  return out.str();
}

}  // namespace kbv::report
