// report.html rendered by headless Chromium: every plot lays out at a non-zero size (a script the
// test adds to a copy writes each SVG's rendered size into data attributes that --dump-dom
// prints), and the candidates' table shows the view its address names, sorted and filtered.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "kbv/report/report_command.h"
#include "sample_store.h"

namespace kbv::report {
namespace {

namespace fs = std::filesystem;

constexpr const char* kMeasure =
    "<script>addEventListener('load', () => { for (const svg of document.querySelectorAll('svg')) {"
    " const box = svg.getBoundingClientRect(); svg.dataset.renderedWidth = box.width;"
    " svg.dataset.renderedHeight = box.height; } });</script>";

// The first of chromium's Debian binaries on PATH, or "" when neither is installed.
std::string find_chromium() {
  for (const char* name : {"chromium", "chromium-headless-shell"}) {
    const std::string probe = std::string("command -v ") + name + " >/dev/null 2>&1";
    if (std::system(probe.c_str()) == 0) return name;
  }
  return "";
}

std::string dump_dom(const std::string& chromium, const fs::path& page) {
  const std::string command = chromium +
                              " --headless --no-sandbox --disable-gpu --dump-dom --virtual-time-budget=2000 'file://" +
                              page.string() + "' 2>/dev/null";
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return "";
  std::string dom;
  char buffer[4096];
  for (std::size_t n; (n = fread(buffer, 1, sizeof buffer, pipe)) > 0;) dom.append(buffer, n);
  pclose(pipe);
  return dom;
}

// Renders the report of `store` and returns each SVG's rendered (width, height).
std::vector<std::pair<double, double>> rendered_plots(const fs::path& store, const fs::path& dir) {
  const std::string chromium = find_chromium();
  if (chromium.empty()) {
    ADD_FAILURE() << "chromium is not installed: this test renders report.html in headless Chromium "
                     "(apt-get install chromium)";
    return {};
  }
  EXPECT_EQ(run_report({store.string(), dir.string()}), 0);
  std::stringstream html;
  html << std::ifstream(dir / "report.html").rdbuf();
  std::string page = html.str();
  page.insert(page.rfind("</body>"), kMeasure);
  std::ofstream(dir / "measured.html") << page;

  const std::string dom = dump_dom(chromium, dir / "measured.html");
  const std::regex sizes("<svg[^>]*data-rendered-width=\"([0-9.]+)\" data-rendered-height=\"([0-9.]+)\"");
  std::vector<std::pair<double, double>> plots;
  for (auto it = std::sregex_iterator(dom.begin(), dom.end(), sizes); it != std::sregex_iterator(); ++it) {
    plots.emplace_back(std::stod((*it)[1]), std::stod((*it)[2]));
  }
  EXPECT_EQ(plots.size(), 3u) << "chromium's DOM:\n" << dom.substr(0, 2000);
  return plots;
}

TEST(HtmlRender, EveryPlotHasARenderedSize) {
  const fs::path dir = fixtures::fresh_dir("render");
  for (const auto& [width, height] : rendered_plots(fixtures::write_sample_store(dir), dir / "out")) {
    EXPECT_GT(width, 0);
    EXPECT_GT(height, 0);
  }
}

TEST(HtmlRender, PlotsWithNothingToShowStillRender) {
  const fs::path dir = fixtures::fresh_dir("render_failing");
  for (const auto& [width, height] : rendered_plots(fixtures::write_failing_store(dir), dir / "out")) {
    EXPECT_GT(width, 0);
    EXPECT_GT(height, 0);
  }
}

// The page's address names a view (docs/report.md): model-a's verified passes, fastest first.
TEST(HtmlRender, TheCandidatesTableSortsAndFilters) {
  const std::string chromium = find_chromium();
  ASSERT_FALSE(chromium.empty()) << "chromium is not installed (apt-get install chromium)";
  const fs::path dir = fixtures::fresh_dir("render_candidates");
  ASSERT_EQ(run_report({fixtures::write_sample_store(dir).string(), (dir / "out").string()}), 0);
  const std::string dom =
      dump_dom(chromium, (dir / "out" / "report.html").string() + "#sort=-speedup&filter=pass+verified");
  const std::size_t begin = dom.find("<table class=\"candidates\">");
  ASSERT_NE(begin, std::string::npos) << dom.substr(0, 2000);
  const std::string table = dom.substr(begin, dom.find("</table>", begin) - begin);
  std::vector<double> shown;
  int hidden = 0;
  const std::regex row("<tr( hidden=\"\")?>(.*?)</tr>"), cell("<td>([^<]*)</td>");
  for (auto it = std::sregex_iterator(table.begin(), table.end(), row); it != std::sregex_iterator(); ++it) {
    const std::string cells_text = (*it)[2];
    std::vector<std::string> cells;
    for (auto c = std::sregex_iterator(cells_text.begin(), cells_text.end(), cell); c != std::sregex_iterator(); ++c) {
      cells.push_back((*c)[1]);
    }
    if (cells.empty()) continue;  // the heads
    if ((*it)[1].matched) {
      ++hidden;
      continue;
    }
    EXPECT_EQ(cells.at(2), "verified");
    EXPECT_EQ(cells.at(4), "pass");
    shown.push_back(std::stod(cells.at(5)));
  }
  EXPECT_EQ(shown, (std::vector<double>{2.0, 1.0, 0.5})) << table;
  EXPECT_EQ(hidden, 8);
  EXPECT_NE(table.find("<th aria-sort=\"descending\">speedup [95% CI]</th>"), std::string::npos) << table;
  EXPECT_NE(dom.find("3 of 11 rows"), std::string::npos);
}

}  // namespace
}  // namespace kbv::report
