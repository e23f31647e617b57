#include "kbv/report/format.h"

#include <cstdio>

namespace kbv::report {
namespace {

template <typename... Args>
std::string printed(const char* format, Args... args) {
  char text[64];
  std::snprintf(text, sizeof text, format, args...);
  return text;
}

}  // namespace

std::string threshold_label(double p) { return printed("%g", p); }
std::string percent(double share) { return printed("%.1f%%", 100.0 * share); }
std::string percent_points(double gap) { return printed("%+.1f pp", 100.0 * gap); }
std::string times(double ratio) { return printed("%.2fx", ratio); }
std::string signed_fixed(double x, int digits) { return printed("%+.*f", digits, x); }

std::string fixed(double x, int digits) { return printed("%.*f", digits, x); }

std::string escape_xml(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

}  // namespace kbv::report
