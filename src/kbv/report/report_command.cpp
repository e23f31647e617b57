#include "kbv/report/report_command.h"

#include <filesystem>
#include <fstream>
#include <iostream>
#include <stdexcept>

#include "kbv/report/aggregate.h"
#include "kbv/report/html.h"
#include "kbv/report/markdown.h"
#include "kbv/report/results.h"
#include "kbv/report/summary_json.h"

namespace kbv::report {
namespace {

namespace fs = std::filesystem;

void write_file(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

int print_candidates(const ReportOptions& options) {
  try {
    const std::vector<RunResults> runs = read_results(fs::absolute(options.db).string());
    const std::vector<CandidateRow> rows = candidate_rows(runs, options.query);
    std::cout << (options.json ? candidates_json(rows).dump(2) + "\n" : candidates_table(rows));
    return 0;
  } catch (const std::exception& error) {
    std::cerr << "kbv report: " << error.what() << '\n';
    return 1;
  }
}

}  // namespace

int run_report(const ReportOptions& options) {
  if (options.candidates) return print_candidates(options);
  if (options.db.empty() || options.out_dir.empty()) {
    std::cerr << "kbv report: both a store (--db) and an output folder (--out) are needed\n";
    return 1;
  }
  try {
    const std::string store = fs::absolute(options.db).string();
    const std::vector<RunSummary> runs = aggregate(read_results(store), options.exclude_uncured);
    const fs::path out_dir(options.out_dir);
    fs::create_directories(out_dir);
    const fs::path markdown = out_dir / "report.md", summary = out_dir / "summary.json", html = out_dir / "report.html";
    write_file(markdown, markdown_report(store, runs, options.exclude_uncured));
    write_file(summary, summary_json(store, runs, options.exclude_uncured).dump(2) + "\n");
    write_file(html, html_report(store, runs, options.exclude_uncured));
    for (const fs::path& written : {markdown, summary, html}) std::cout << "wrote " << written.string() << '\n';
    return 0;
  } catch (const std::exception& error) {  // filesystem_error included: an unusable output folder
    std::cerr << "kbv report: " << error.what() << '\n';
    return 1;
  }
}

}  // namespace kbv::report
