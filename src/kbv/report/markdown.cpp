#include "kbv/report/markdown.h"

#include <sstream>

#include "kbv/report/tables.h"

namespace kbv::report {
namespace {

// A cell holds paths and reasons verbatim: a '|' would end the cell, a newline the row.
std::string cell(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '|') {
      out += "\\|";
    } else if (c == '\n') {
      out += ' ';
    } else {
      out += c;
    }
  }
  return out;
}

void write_row(std::ostream& out, const std::vector<std::string>& cells) {
  out << '|';
  for (const std::string& c : cells) out << ' ' << cell(c) << " |";
  out << '\n';
}

void write_table(std::ostream& out, const Table& t) {
  out << "### " << t.title << "\n\n" << t.note << "\n\n";
  if (t.rows.empty()) {
    out << "_" << t.empty << "_\n\n";
    return;
  }
  write_row(out, t.header);
  out << '|';
  for (std::size_t i = 0; i < t.header.size(); ++i) out << " --- |";
  out << '\n';
  for (const auto& row : t.rows) write_row(out, row);
  out << '\n';
}

}  // namespace

std::string markdown_report(const std::string& store, const std::vector<RunSummary>& runs, bool exclude_uncured) {
  std::ostringstream out;
  out << "# kbv report\n\nStore: `" << store << "`. How each number is computed: docs/report.md.\n\n";
  if (const std::string note = uncured_note(runs, exclude_uncured); !note.empty()) out << "**" << note << "**\n\n";
  if (runs.empty()) out << "_The store holds no runs._\n";
  for (const RunSummary& run : runs) {
    out << "## Run " << cell(run.name) << "\n\n" << run_overview(run) << "\n\n";
    for (const Table& t : run_tables(run)) write_table(out, t);
  }
  return out.str();
}

}  // namespace kbv::report
