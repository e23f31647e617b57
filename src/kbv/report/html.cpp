#include "kbv/report/html.h"

#include <sstream>

#include "kbv/report/format.h"
#include "kbv/report/plots.h"
#include "kbv/report/tables.h"

namespace kbv::report {
namespace {

constexpr const char* kStyle = R"css(
body { font-family: sans-serif; margin: 2em auto; max-width: 1200px; padding: 0 1em; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; font-size: 13px; }
th, td { border: 1px solid #ccc; padding: 3px 8px; text-align: right; white-space: nowrap; }
th { background: #f3f3f3; white-space: normal; }
.wide { overflow-x: auto; }
td:first-child, th:first-child { text-align: left; }
figure { margin: 1em 0; }
.note { color: #555; font-size: 13px; }
.empty { font-style: italic; color: #555; }
.uncured { font-weight: bold; border-left: 4px solid #c60; padding-left: 0.5em; }
)css";

void write_table(std::ostream& out, const Table& t) {
  out << "<h3>" << escape_xml(t.title) << "</h3>\n<p class=\"note\">" << escape_xml(t.note) << "</p>\n";
  if (t.rows.empty()) {
    out << "<p class=\"empty\">" << escape_xml(t.empty) << "</p>\n";
    return;
  }
  out << "<div class=\"wide\"><table>\n<tr>";
  for (const std::string& h : t.header) out << "<th>" << escape_xml(h) << "</th>";
  out << "</tr>\n";
  for (const auto& row : t.rows) {
    out << "<tr>";
    for (const std::string& c : row) out << "<td>" << escape_xml(c) << "</td>";
    out << "</tr>\n";
  }
  out << "</table></div>\n";
}

}  // namespace

std::string html_report(const std::string& store, const std::vector<RunSummary>& runs, bool exclude_uncured) {
  std::ostringstream out;
  out << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>kbv report</title>\n<style>"
      << kStyle << "</style>\n</head>\n<body>\n<h1>kbv report</h1>\n<p>Store: <code>" << escape_xml(store)
      << "</code>. How each number is computed: docs/report.md in the kbv repository.</p>\n";
  if (const std::string note = uncured_note(runs, exclude_uncured); !note.empty()) {
    out << "<p class=\"uncured\">" << escape_xml(note) << "</p>\n";
  }
  if (runs.empty()) out << "<p class=\"empty\">The store holds no runs.</p>\n";
  out << "<h2>Plots (all levels)</h2>\n";
  for (const std::string& plot : {fast_p_plot(runs), speedup_memory_plot(runs), findings_plot(runs)}) {
    out << "<figure>\n" << plot << "</figure>\n";
  }
  for (const RunSummary& run : runs) {
    out << "<h2>Run " << escape_xml(run.name) << "</h2>\n<p>" << escape_xml(run_overview(run)) << "</p>\n";
    for (const Table& t : run_tables(run)) write_table(out, t);
  }
  out << "</body>\n</html>\n";
  return out.str();
}

}  // namespace kbv::report
