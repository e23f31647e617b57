// The finding catalogue (hacks/catalogue) against everything that names a finding: PROTOCOL.md's
// table of stable ids, the Python screen and the C++ sources of the judge, the watch and the C++
// screen. An id used anywhere must be in the catalogue, and every id in it must be used and
// documented.
#include "kbv/hacks/catalogue.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <string>

namespace kbv::hacks {
namespace {

namespace fs = std::filesystem;
const fs::path kRoot = KBV_ROOT_DIR;

std::string read(const fs::path& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in) << path;
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Group 1 of every match of `pattern` in `text`.
std::set<std::string> matches(const std::string& text, const std::regex& pattern) {
  std::set<std::string> out;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), pattern); it != std::sregex_iterator(); ++it) {
    out.insert((*it)[1].str());
  }
  return out;
}

std::set<std::string> catalogue_ids() {
  std::set<std::string> ids;
  for (const FindingKind& kind : finding_catalogue()) ids.emplace(kind.id);
  return ids;
}

// The ids the C++ sources report: finding("id", ...), add("id", "error"|"warning", ...),
// {"id", "error"|"warning", ...} and the C++ screen's {"token", "id"} rules.
std::set<std::string> cxx_ids() {
  const std::regex reported(R"re((?:finding|add)\(\s*"([a-z_]+)",\s*"(?:error|warning)")re"),
      braced(R"re(\{"([a-z_]+)", "(?:error|warning)",)re"), screened(R"re(\{"[^"\n]+", "([a-z_]+)"\})re");
  std::set<std::string> ids;
  for (const auto& entry : fs::recursive_directory_iterator(kRoot / "src/kbv")) {
    if (entry.path().extension() != ".cpp") continue;
    const std::string text = read(entry.path());
    for (const std::regex* pattern : {&reported, &braced}) ids.merge(matches(text, *pattern));
    if (entry.path().filename() == "source_screen.cpp") ids.merge(matches(text, screened));
  }
  return ids;
}

TEST(FindingCatalogue, IdsAreUniqueAndEachSaysWhatItMeans) {
  EXPECT_EQ(catalogue_ids().size(), finding_catalogue().size());
  for (const FindingKind& kind : finding_catalogue()) EXPECT_FALSE(kind.what.empty()) << kind.id;
  EXPECT_EQ(finding_kind("untimed_work")->id, "untimed_work");
  EXPECT_EQ(finding_kind("no_such_finding"), nullptr);
}

TEST(FindingCatalogue, IsProtocolsTableOfStableIds) {
  const std::string protocol = read(kRoot / "docs/PROTOCOL.md");
  const auto begin = protocol.find("## Findings (stable ids)");
  ASSERT_NE(begin, std::string::npos);
  const std::string table = protocol.substr(begin, protocol.find("\n## ", begin + 1) - begin);
  EXPECT_EQ(matches(table, std::regex(R"re(\n\| `([a-z_]+)` \|)re")), catalogue_ids());
}

TEST(FindingCatalogue, HoldsEveryIdTheSourcesReportAndNoOther) {
  const std::string screen = read(kRoot / "src/kbv/python/screen.py");
  std::set<std::string> used = cxx_ids();
  used.merge(matches(screen, std::regex(R"re(self\.add\("([a-z_]+)")re")));
  const auto calls = screen.find("CALLS = {");
  ASSERT_NE(calls, std::string::npos);
  used.merge(
      matches(screen.substr(calls, screen.find("\n}", calls) - calls), std::regex(R"re(\n    "([a-z_]+)": \()re")));
  EXPECT_EQ(used, catalogue_ids());
}

}  // namespace
}  // namespace kbv::hacks
