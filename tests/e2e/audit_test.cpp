// `kbv audit` through the real binary on the defective problems written for it
// (tests/audit/problems, expected findings in tests/audit/expected.tsv: one problem per finding,
// and sound problems that must come out clean).
#include <gtest/gtest.h>
#include <unistd.h>

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "kbv_runner.h"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const fs::path kAudit = KBV_AUDIT_DIR;

struct Audit {
  int exit_code = -1;
  std::string output;
  json problems;
};

Audit audit(const fs::path& problems, const std::string& extra = "") {
  const fs::path dir = fs::temp_directory_path() / ("kbv_audit_test_" + std::to_string(getpid()));
  fs::create_directories(dir);
  const fs::path out = dir / "out.txt", record = dir / "audit.json";
  const std::string command = std::string(KBV_BINARY) + " audit --problems '" + problems.string() + "' --json '" +
                              record.string() + "' " + extra + " >'" + out.string() + "' 2>&1";
  const int status = std::system(command.c_str());
  Audit a;
  a.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream text(out);
  a.output.assign(std::istreambuf_iterator<char>(text), {});
  if (fs::exists(record)) a.problems = json::parse(std::ifstream(record));
  return a;
}

// "id:cured id:open" -> {id: cured}
std::map<std::string, bool> findings_of(const json& problem) {
  std::map<std::string, bool> found;
  for (const json& f : problem["findings"]) found[f["id"]] = f["cured_by_verified"];
  return found;
}

// Three at a time (--jobs): every finding as alone, the record in the problems' order.
TEST(Audit, EachDefectiveProblemHasItsFindingAndSoundOnesAreClean) {
  const Audit a = audit(kAudit / "problems", "--jobs 3");
  ASSERT_EQ(a.exit_code, 0) << a.output;
  for (size_t i = 1; i < a.problems.size(); ++i) EXPECT_LT(a.problems[i - 1]["number"], a.problems[i]["number"]);
  std::map<std::string, json> by_file;
  for (const json& p : a.problems) by_file[fs::path(p["problem"].get<std::string>()).filename().string()] = p;
  const auto rows = kbv::testing::read_tsv((kAudit / "expected.tsv").string());
  ASSERT_EQ(rows.size(), by_file.size());
  for (const auto& row : rows) {
    ASSERT_TRUE(by_file.count(row[0])) << row[0] << "\n" << a.output;
    std::map<std::string, bool> expected;
    std::stringstream ids(row[1]);
    for (std::string item; ids >> item;) expected[item.substr(0, item.find(':'))] = item.ends_with(":cured");
    EXPECT_EQ(findings_of(by_file[row[0]]), expected) << row[0] << ": " << by_file[row[0]]["findings"].dump(1);
  }
  EXPECT_NE(a.output.find("identity_under_inputs"), std::string::npos);
  EXPECT_NE(a.output.find("2 clean"), std::string::npos) << a.output;
}

TEST(Audit, HugeMemoryIsJudgedAgainstTheStatedShare) {
  const fs::path dir = fs::temp_directory_path() / ("kbv_audit_memory_" + std::to_string(getpid()));
  fs::create_directories(dir);
  fs::copy_file(kAudit / "problems/8_SoundMatmul.py", dir / "8_SoundMatmul.py", fs::copy_options::overwrite_existing);
  const Audit tiny = audit(dir, "--memory-share 1e-9");
  ASSERT_EQ(tiny.exit_code, 0) << tiny.output;
  ASSERT_EQ(tiny.problems.size(), 1u);
  EXPECT_EQ(findings_of(tiny.problems[0]), (std::map<std::string, bool>{{"huge_memory", false}}));
  const json& evidence = tiny.problems[0]["findings"][0]["evidence"];
  EXPECT_EQ(evidence["bytes"], 3 * 128 * 128 * 4);  // A, B and the output, float32
  fs::remove_all(dir);
}

// Audits at once share the device's memory: a problem whose reference runs out of it beside
// another's is audited again by itself. The first problem holds a lock for as long as its worker
// lives (the memory it would hold); the second, finding it held, asks torch's allocator for more
// than any host has and gets its real out-of-memory error; alone, it finds the lock free.
TEST(Audit, AProblemOutOfMemoryBesideAnotherIsAuditedAgainByItself) {
  const fs::path dir = fs::temp_directory_path() / ("kbv_audit_contention_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string lock = (dir / "held.lock").string();
  const std::string model = R"(
class Model(nn.Module):
    def forward(self, x):
        FORWARD
        return x * 2


def get_inputs():
    return [torch.rand(64, 64)]


def get_init_inputs():
    return []
)";
  const auto write = [&](const std::string& name, const std::string& head, const std::string& forward) {
    std::string text = model;
    text.replace(text.find("FORWARD"), 7, forward);
    std::ofstream(dir / name) << "import fcntl, os, time\nimport torch\nimport torch.nn as nn\nLOCK = '" << lock
                              << "'\n"
                              << head << text;
  };
  write("1_HoldsMemory.py", "held = open(LOCK, 'w')\nfcntl.flock(held, fcntl.LOCK_EX)\n", "time.sleep(0.2)");
  write("2_NeedsMemory.py", "for _ in range(300):\n    if os.path.exists(LOCK): break\n    time.sleep(0.1)\n",
        "probe = open(LOCK, 'w')\n"
        "        try:\n"
        "            fcntl.flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)\n"
        "        except BlockingIOError:\n"
        "            torch.empty(1 << 62, dtype=torch.uint8)\n"
        "        finally:\n"
        "            probe.close()");
  const Audit a = audit(dir, "--jobs 2");
  ASSERT_EQ(a.exit_code, 0) << a.output;
  ASSERT_EQ(a.problems.size(), 2u);
  EXPECT_FALSE(a.problems[0].contains("retried_alone")) << a.problems[0].dump(1);
  EXPECT_EQ(a.problems[1].value("retried_alone", false), true) << a.problems[1].dump(1);
  EXPECT_FALSE(a.problems[1].contains("error")) << a.problems[1].dump(1);
  EXPECT_NE(a.output.find("again by itself"), std::string::npos) << a.output;
  fs::remove_all(dir);
}

TEST(Audit, NoGpuStopsTheAuditAndIsNamed) {
  const Audit a = audit(kAudit / "problems", "--device cuda");
  EXPECT_EQ(a.exit_code, 1);
  EXPECT_NE(a.output.find("no CUDA device"), std::string::npos) << a.output;
}

TEST(Audit, AFolderWithoutProblemsIsNamed) {
  const fs::path empty = fs::temp_directory_path() / ("kbv_audit_empty_" + std::to_string(getpid()));
  fs::create_directories(empty);
  const Audit a = audit(empty);
  EXPECT_EQ(a.exit_code, 1);
  EXPECT_NE(a.output.find("no problem files"), std::string::npos) << a.output;
  fs::remove_all(empty);
}

}  // namespace
