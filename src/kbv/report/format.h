// How the report prints numbers and text: the Markdown and HTML pages share these, summary.json
// keeps the raw values (shares as fractions in [0, 1]).
#pragma once

#include <string>

namespace kbv::report {

std::string threshold_label(double p);            // 0.5 -> "0.5", 1 -> "1"
std::string percent(double share);                // 0.625 -> "62.5%"
std::string percent_points(double gap);           // 0.125 -> "+12.5 pp"
std::string times(double ratio);                  // 1.2345 -> "1.23x"
std::string signed_fixed(double x, int digits);   // 0.25, 2 -> "+0.25"
std::string fixed(double x, int digits);          // 12.345, 1 -> "12.3"
std::string escape_xml(const std::string& text);  // for HTML and SVG: & < > " escaped

}  // namespace kbv::report
