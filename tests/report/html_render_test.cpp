// report.html rendered by headless Chromium: every plot lays out at a non-zero size. The page
// itself has no script; the test adds one to a copy, which after layout writes each SVG's
// rendered size into data attributes that --dump-dom prints.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <regex>
#include <sstream>

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

}  // namespace
}  // namespace kbv::report
