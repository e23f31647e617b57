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
table.candidates th { cursor: pointer; }
table.candidates th[aria-sort=ascending]::after { content: " \25B2"; }
table.candidates th[aria-sort=descending]::after { content: " \25BC"; }
table.candidates td:nth-child(2), table.candidates td:last-child { text-align: left; }
table.candidates td:last-child { white-space: normal; min-width: 24em; }
input.filter { width: 32em; }
)css";

// The candidates' tables, for a reader without a server: a click on a column's head sorts the rows
// by it (again: the other way; numbers as numbers, a '-' lowest), the box above keeps the rows that
// hold every word typed in it. The address may name a view: #sort=-speedup&filter=hack+verified.
constexpr const char* kScript = R"js(
for (const table of document.querySelectorAll('table.candidates')) {
  const section = table.closest('section');
  const box = section.querySelector('input.filter'), shown = section.querySelector('.shown');
  const heads = Array.from(table.rows[0].cells), rows = Array.from(table.rows).slice(1);
  const key = (row, i) => {
    const text = row.cells[i].textContent, number = parseFloat(text);
    return Number.isNaN(number) ? text : number;
  };
  const sortBy = (i, descending) => {
    const numeric = rows.every(row => typeof key(row, i) === 'number' || row.cells[i].textContent === '-');
    const asNumber = value => (typeof value === 'number' ? value : -Infinity);
    rows.sort((a, b) => {
      const x = key(a, i), y = key(b, i);
      const order = numeric ? asNumber(x) - asNumber(y) || 0 : String(x).localeCompare(String(y));
      return descending ? -order : order;
    });
    for (const row of rows) row.parentNode.appendChild(row);
    heads.forEach((head, k) => (k === i ? head.setAttribute('aria-sort', descending ? 'descending' : 'ascending')
                                        : head.removeAttribute('aria-sort')));
  };
  const filter = () => {
    const words = box.value.toLowerCase().split(/\s+/).filter(word => word);
    let count = 0;
    for (const row of rows) {
      row.hidden = !words.every(word => row.textContent.toLowerCase().includes(word));
      count += row.hidden ? 0 : 1;
    }
    shown.textContent = count + ' of ' + rows.length + ' rows';
  };
  heads.forEach((head, i) => head.addEventListener('click', () => sortBy(i, head.getAttribute('aria-sort') !== 'descending')));
  box.addEventListener('input', filter);
  const view = new URLSearchParams(location.hash.slice(1));
  const sort = view.get('sort');
  if (sort) {
    const name = sort.replace(/^-/, '').toLowerCase();
    const i = heads.findIndex(head => head.textContent.toLowerCase().startsWith(name));
    if (i >= 0) sortBy(i, sort.startsWith('-'));
  }
  box.value = view.get('filter') || '';
  filter();
}
)js";

void write_table(std::ostream& out, const Table& t) {
  const bool interactive = t.id == "candidates" && !t.rows.empty();
  if (interactive) out << "<section>\n";
  out << "<h3>" << escape_xml(t.title) << "</h3>\n<p class=\"note\">" << escape_xml(t.note) << "</p>\n";
  if (t.rows.empty()) {
    out << "<p class=\"empty\">" << escape_xml(t.empty) << "</p>\n";
    return;
  }
  if (interactive) {
    out << "<p><input class=\"filter\" type=\"search\" aria-label=\"filter the rows\" "
           "placeholder=\"Filter: words every row shown holds (a verdict, a protocol, a problem, a finding)\"> "
           "<span class=\"shown note\"></span>; a click on a column's head sorts by it.</p>\n";
  }
  out << "<div class=\"wide\"><table" << (interactive ? " class=\"candidates\"" : "") << ">\n<tr>";
  for (const std::string& h : t.header) out << "<th>" << escape_xml(h) << "</th>";
  out << "</tr>\n";
  for (const auto& row : t.rows) {
    out << "<tr>";
    for (const std::string& c : row) out << "<td>" << escape_xml(c) << "</td>";
    out << "</tr>\n";
  }
  out << "</table></div>\n";
  if (interactive) out << "</section>\n";
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
  out << "<script>" << kScript << "</script>\n</body>\n</html>\n";
  return out.str();
}

}  // namespace kbv::report
