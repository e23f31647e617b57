// The hostile corpus (tests/sandbox/manifest.tsv) through the real binary: candidates that are
// honest but for one attack on the machine (signal kbv's processes, read their memory, write its
// cache, store and folders, reach the network, outlive the evaluation, exhaust processes, memory,
// CPU time or disk, call ptrace or unshare, forge a reply, open vsock and other socket families,
// fill, link or keep notes in its build folder). Each must end with one record and its expected
// verdict, and every effect is looked for from outside, not taken from the candidate's word:
// listeners that must stay silent, files that must not appear, processes that must be gone, the
// cache's size, a root-owned file's mode.
// Then a kbv run with hostile candidates among honest ones: every record exactly once, the store
// whole.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>
#include <nlohmann/json.hpp>

#include "kbv/sandbox/explain.h"
#include "kbv_runner.h"

namespace {

namespace fs = std::filesystem;
using kbv::testing::Outcome;
using nlohmann::json;

const fs::path kRoot = KBV_ROOT_DIR;
const fs::path kCorpus = kRoot / "tests/sandbox";
const fs::path kProblem = kRoot / "examples/problems/1_ReLU.py";
constexpr const char* kWritten = "kbv-hostile-write";

struct Row {
  std::string candidate, verdict, reason;
  std::vector<std::string> limits;
};

std::vector<Row> corpus() {
  std::vector<Row> rows;
  for (const auto& cells : kbv::testing::read_tsv((kCorpus / "manifest.tsv").string())) {
    Row row{cells.at(0), cells.at(2), cells.at(3) == "-" ? "" : cells.at(3), {}};
    if (cells.at(1) != "-") row.limits = {"--limit", cells.at(1)};
    rows.push_back(row);
  }
  return rows;
}

// A listener the candidates are told about: one that must never get a connection.
struct Listener {
  int fd = -1;
  ~Listener() {
    if (fd >= 0) close(fd);
  }
  bool connected() const {
    const int peer = accept4(fd, nullptr, nullptr, SOCK_NONBLOCK);
    if (peer >= 0) close(peer);
    return peer >= 0;
  }
};

Listener tcp_listener(int& port) {
  Listener l;
  l.fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t size = sizeof address;
  if (bind(l.fd, reinterpret_cast<sockaddr*>(&address), size) != 0 || listen(l.fd, 8) != 0 ||
      getsockname(l.fd, reinterpret_cast<sockaddr*>(&address), &size) != 0) {
    ADD_FAILURE() << "cannot listen on loopback: " << std::strerror(errno);
  }
  port = ntohs(address.sin_port);
  return l;
}

Listener abstract_listener(const std::string& name) {
  Listener l;
  l.fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  address.sun_path[0] = '\0';
  name.copy(address.sun_path + 1, sizeof address.sun_path - 2);
  const socklen_t size = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  if (bind(l.fd, reinterpret_cast<sockaddr*>(&address), size) != 0 || listen(l.fd, 8) != 0) {
    ADD_FAILURE() << "cannot listen on an abstract socket: " << std::strerror(errno);
  }
  return l;
}

// Processes whose command line names `mark` (the hostile candidates' daemons and bombs).
std::vector<std::string> processes_named(const std::string& mark) {
  std::vector<std::string> found;
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const std::string pid = entry.path().filename();
    if (pid.find_first_not_of("0123456789") != std::string::npos || pid == std::to_string(getpid())) continue;
    std::ifstream in(entry.path() / "cmdline", std::ios::binary);
    const std::string cmdline(std::istreambuf_iterator<char>(in), {});
    if (cmdline.find(mark) != std::string::npos) found.push_back(pid + ": " + cmdline);
  }
  return found;
}

// The folders the hostile candidates write into, as they are outside the sandbox (`victim` stands
// for another candidate's builds).
std::vector<fs::path> written_targets(const fs::path& cache) {
  const char* home = std::getenv("HOME");
  return {"/tmp",
          home ? fs::path(home) : fs::path("/root"),
          cache,
          cache / "extensions",
          cache / "extensions/victim",
          cache / "pch",
          cache / "pycache",
          "/dev/shm",
          "/var/tmp",
          kCorpus / "candidates",
          kProblem.parent_path()};
}

class Sandbox : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    scratch_ = fs::temp_directory_path() / ("kbv_sandbox_test_" + std::to_string(getpid()));
    fs::remove_all(scratch_);
    fs::create_directories(scratch_ / "cache/extensions/victim");  // another candidate's builds
    // A cache of this suite's own: nothing of the hostile corpus is built, and what appears there is
    // known exactly.
    setenv("KBV_CACHE", (scratch_ / "cache").c_str(), 1);
    mark_ = "kbv-hostile-mark-" + std::to_string(getpid());
    setenv("KBV_HOSTILE_MARK", mark_.c_str(), 1);
    int port = 0;
    tcp_ = new Listener(tcp_listener(port));
    setenv("KBV_HOSTILE_PORT", std::to_string(port).c_str(), 1);
    const std::string socket = "kbv-hostile-" + std::to_string(getpid());
    unix_ = new Listener(abstract_listener(socket));
    setenv("KBV_HOSTILE_SOCKET", socket.c_str(), 1);
    // Root's file that link_build.py points its build folder's links at.
    std::ofstream(scratch_ / "root-only") << "root's\n";
    fs::permissions(scratch_ / "root-only", fs::perms::owner_read | fs::perms::owner_write);
    setenv("KBV_HOSTILE_TARGET", (scratch_ / "root-only").c_str(), 1);
    // A secret in kbv's environment, which no candidate may see (environment.py looks for it).
    setenv("AWS_SECRET_ACCESS_KEY", secret().c_str(), 1);
  }
  static std::string secret() { return "kbv-hostile-secret-" + std::to_string(getpid()); }
  static void TearDownTestSuite() {
    unsetenv("AWS_SECRET_ACCESS_KEY");
    delete tcp_;
    delete unix_;
    fs::remove_all(scratch_);
  }

  static inline fs::path scratch_;
  static inline std::string mark_;
  static inline Listener* tcp_ = nullptr;
  static inline Listener* unix_ = nullptr;
};

// The bytes under `folder`, and every link there (none may reach kbv's cache).
std::uintmax_t bytes_under(const fs::path& folder, std::vector<std::string>& links) {
  std::uintmax_t bytes = 0;
  std::error_code error;
  for (auto it = fs::recursive_directory_iterator(folder, error); !error && it != fs::recursive_directory_iterator();
       it.increment(error)) {
    if (it->is_symlink())
      links.push_back(it->path().string());
    else if (it->is_regular_file())
      bytes += it->file_size();
  }
  return bytes;
}

void expect_no_effect_outside(const fs::path& cache, const std::string& mark, const Listener& tcp,
                              const Listener& local) {
  // The build hog's 480 MiB stayed in its build folder's tmpfs; the builds kept hold no link.
  std::vector<std::string> links;
  EXPECT_LT(bytes_under(cache, links), std::uintmax_t{32} << 20) << "kbv's cache grew past what its builds hold";
  EXPECT_EQ(links, std::vector<std::string>{});
  // No root walk followed link_build.py's links to the file it aimed at.
  const fs::path target = cache.parent_path() / "root-only";
  EXPECT_EQ(fs::status(target).permissions(), fs::perms::owner_read | fs::perms::owner_write);
  struct stat facts {};
  EXPECT_EQ(stat(target.c_str(), &facts), 0);
  EXPECT_EQ(facts.st_uid, 0u);
  EXPECT_EQ(facts.st_gid, 0u);
  EXPECT_FALSE(tcp.connected()) << "a candidate reached the loopback listener";
  EXPECT_FALSE(local.connected()) << "a candidate reached the abstract Unix socket";
  for (const fs::path& folder : written_targets(cache)) {
    EXPECT_FALSE(fs::exists(folder / kWritten)) << "a candidate wrote " << (folder / kWritten);
  }
  // The daemon's and the bomb's processes die with their sandbox, as the evaluation ends.
  EXPECT_EQ(processes_named(mark), std::vector<std::string>{});
}

// The least memory the machine had available (MemAvailable) while it lived, sampled from its
// start: what the candidates took, seen from outside their sandboxes.
class AvailableMemoryWatch {
 public:
  AvailableMemoryWatch()
      : at_start_(available()), least_(at_start_), thread_([this] {
          while (!done_) {
            least_ = std::min<std::uint64_t>(least_, available());
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
          }
        }) {}
  ~AvailableMemoryWatch() { stop(); }
  // The largest drop below the level at its start.
  std::uint64_t stop() {
    done_ = true;
    if (thread_.joinable()) thread_.join();
    return at_start_ > least_ ? at_start_ - least_ : 0;
  }

 private:
  static std::uint64_t available() {
    std::ifstream meminfo("/proc/meminfo");
    for (std::string name; meminfo >> name;) {
      std::uint64_t kib = 0;
      meminfo >> kib;
      if (name == "MemAvailable:") return kib << 10;
      meminfo.ignore(64, '\n');
    }
    return 0;
  }
  std::uint64_t at_start_;
  std::atomic<std::uint64_t> least_;
  std::atomic<bool> done_ = false;
  std::thread thread_;
};

TEST_F(Sandbox, EveryHostileCandidateIsContainedWithOneRecordAndItsVerdict) {
  AvailableMemoryWatch memory;
  const std::vector<Row> rows = corpus();
  ASSERT_GE(rows.size(), 12u);
  std::vector<std::pair<std::string, std::vector<std::string>>> jobs;
  for (const Row& row : rows) {
    std::vector<std::string> args = {kProblem.string(), (kCorpus / "candidates" / row.candidate).string(),
                                     "--protocol",      "kernelbench",
                                     "--timeout",       "60",
                                     "--quiet"};
    args.insert(args.end(), row.limits.begin(), row.limits.end());
    jobs.push_back({row.candidate, args});
  }
  const std::map<std::string, Outcome> runs = kbv::testing::kbv_eval_all(jobs);
  // shared_hog.py's 10 GiB never came: its sandbox stopped at 2 GiB (two hogs run at once, and
  // torch's processes take their share).
  EXPECT_LT(memory.stop(), std::uint64_t{6} << 30) << "the machine lost more memory than the limits allow";

  for (const Row& row : rows) {
    const Outcome& r = runs.at(row.candidate);
    ASSERT_EQ(r.exit_code, 0) << row.candidate << "\n" << r.err;
    EXPECT_EQ(r.record.value("verdict", "?"), row.verdict)
        << row.candidate << ": " << r.record.value("verdict_reason", "");
    EXPECT_NE(r.record.value("verdict_reason", "").find(row.reason), std::string::npos)
        << row.candidate << ": " << r.record.value("verdict_reason", "");
    EXPECT_EQ(r.record.at("sandbox").value("enabled", false), true) << row.candidate;
    EXPECT_FALSE(r.record.at("sandbox").value("cgroup", nlohmann::json()).is_null())
        << row.candidate << ": " << r.record.at("sandbox").dump();
  }
  // Entering took its time in the worker: a few milliseconds, not 0 (the worker reported it).
  const double setup = runs.at("signal_everyone.py").record.at("sandbox").value("setup_seconds", 0.0);
  EXPECT_GT(setup, 0.0);
  EXPECT_LT(setup, 5.0);
  // What /proc showed the reader: its own process, never kbv's command line (which names the folder
  // of the records, kbv_e2e_*).
  const std::string log = runs.at("read_others.py").record.at("logs").value("candidate", "");
  EXPECT_NE(log.find("processes seen: 1"), std::string::npos) << log;
  EXPECT_NE(log.find("user: kbv-sandbox"), std::string::npos) << log;
  EXPECT_EQ(log.find("kbv_e2e_"), std::string::npos) << log;
  EXPECT_NE(runs.at("forge_reply.py").record.dump().find("forged_reply"), std::string::npos);
  // Every socket family beyond AF_UNIX, AF_INET(6) and netlink's routing refused, vsock first.
  const std::string families = runs.at("socket_families.py").record.at("logs").value("candidate", "");
  EXPECT_EQ(families.find("hostile: opened"), std::string::npos) << families;
  EXPECT_NE(families.find("hostile: vsock: EPERM"), std::string::npos) << families;
  EXPECT_NE(families.find("hostile: vsock, high bits: EPERM"), std::string::npos) << families;
  // The caller's folders (the corpus beside it, the other problems) are empty in its view.
  const std::string neighbours = runs.at("read_neighbours.py").record.at("logs").value("candidate", "");
  EXPECT_NE(neighbours.find("hostile: neighbours looked at"), std::string::npos) << neighbours;
  EXPECT_EQ(neighbours.find("hostile: read "), std::string::npos) << neighbours;
  // The operator's secret reached no candidate, and so no record.
  const std::string environment = runs.at("environment.py").record.at("logs").value("candidate", "");
  EXPECT_NE(environment.find("hostile: AWS_SECRET_ACCESS_KEY nowhere"), std::string::npos) << environment;
  for (const auto& [candidate, run] : runs) EXPECT_EQ(run.record.dump().find(secret()), std::string::npos) << candidate;
  expect_no_effect_outside(scratch_ / "cache", mark_, *tcp_, *unix_);
}

// An evaluation leaves nothing for the next of the same content: remember.py's second evaluation,
// over the same cache, finds no note from the first and passes again.
TEST_F(Sandbox, AnEvaluationLeavesNothingForTheNextOfTheSameContent) {
  const std::vector<std::string> args = {
      kProblem.string(), (kCorpus / "candidates/remember.py").string(), "--protocol", "kernelbench", "--timeout", "60",
      "--quiet"};
  for (int run = 0; run < 2; ++run) {
    const Outcome r = kbv::testing::kbv_eval(args, "remember.py, run " + std::to_string(run));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.record.value("verdict", "?"), "pass") << "run " << run << ": " << r.record.value("verdict_reason", "");
    const std::string log = r.record.at("logs").value("candidate", "");
    EXPECT_NE(log.find("note from an earlier run: False"), std::string::npos) << "run " << run << ": " << log;
  }
}

TEST_F(Sandbox, KbvRunKeepsEveryRecordOnceWithHostileCandidatesAmongHonestOnes) {
  const fs::path tree = scratch_ / "run";
  const fs::path db = tree / "results.sqlite";
  fs::create_directories(tree / "KernelBench/level1");
  fs::create_directories(tree / "samples");
  fs::copy_file(kProblem, tree / "KernelBench/level1/1_ReLU.py");
  const std::vector<std::string> samples = {"read_others.py", "signal_everyone.py", "write_everywhere.py",
                                            "daemon.py",      "forge_reply.py",     "fork_bomb.py"};
  // An honest candidate first and between the hostile ones: each must still be evaluated as usual.
  std::ofstream(tree / "samples/level_1_problem_1_sample_0_kernel.py")
      << "import torch\nimport torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n"
         "    def forward(self, x):\n        return torch.relu(x)\n";
  for (size_t i = 0; i < samples.size(); ++i) {
    fs::copy_file(kCorpus / "candidates" / samples[i],
                  tree / ("samples/level_1_problem_1_sample_" + std::to_string(i + 1) + "_kernel.py"));
  }
  setenv("KBV_HOSTILE_STORE", db.c_str(), 1);
  const std::string command = std::string(KBV_BINARY) + " run --problems '" + (tree / "KernelBench").string() +
                              "' --samples '" + (tree / "samples").string() + "' --db '" + db.string() +
                              "' --device cpu --protocols kernelbench --timeout 60 --no-audit --limit processes=48 >'" +
                              (tree / "run.log").string() + "' 2>&1";
  const int status = std::system(command.c_str());
  unsetenv("KBV_HOSTILE_STORE");
  std::ifstream in(tree / "run.log");
  const std::string output(std::istreambuf_iterator<char>(in), {});
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << output;

  SQLite::Database store(db.string(), SQLite::OPEN_READONLY);
  SQLite::Statement integrity(store, "PRAGMA integrity_check");
  ASSERT_TRUE(integrity.executeStep());
  EXPECT_EQ(integrity.getColumn(0).getString(), "ok");
  std::map<std::string, std::string> verdicts;
  SQLite::Statement rows(store, "SELECT c.path, r.verdict FROM records r JOIN candidates c ON c.id = r.candidate_id");
  while (rows.executeStep()) {
    const std::string path = rows.getColumn(0).getString();
    EXPECT_EQ(verdicts.count(path), 0u) << "two records for " << path;
    verdicts[path] = rows.getColumn(1).getString();
  }
  ASSERT_EQ(verdicts.size(), samples.size() + 1) << output;
  const auto verdict_of = [&](size_t sample) {
    return verdicts[(tree / ("samples/level_1_problem_1_sample_" + std::to_string(sample) + "_kernel.py")).string()];
  };
  for (size_t sample : {0, 1, 2, 3, 4}) EXPECT_EQ(verdict_of(sample), "pass") << sample << "\n" << output;
  EXPECT_EQ(verdict_of(5), "hack") << output;
  EXPECT_EQ(verdict_of(6), "runtime_error") << output;
  expect_no_effect_outside(scratch_ / "cache", mark_, *tcp_, *unix_);
}

// Out of device memory inside the sandbox, torch's message is an assert on NVML (its report of
// the processes holding the memory asks NVML, which the sandbox hides): the reason names the GPU's
// memory. The message in the form torch gives it (an honest 6 GiB ReLU's probe on the H200,
// 2026-12-03; the line number varies with the release).
TEST(SandboxWords, TheGpusMemoryBehindTorchsNvmlAssertIsNamed) {
  const kbv::sandbox::Limits limits;
  const std::string oom =
      "RuntimeError: NVML_SUCCESS == DriverAPI::get()->nvmlInit_v2_() INTERNAL ASSERT FAILED at "
      "\"/pytorch/c10/cuda/CUDACachingAllocator.cpp\":1131, please report a bug to PyTorch.";
  EXPECT_NE(kbv::sandbox::explain_error(oom, limits).find("GPU is out of memory"), std::string::npos);
  EXPECT_EQ(kbv::sandbox::explain_error("RuntimeError: NVML_SUCCESS == r INTERNAL ASSERT FAILED at \"x.cpp\"", limits),
            "");
  EXPECT_EQ(kbv::sandbox::explain_error("RuntimeError: shape mismatch", limits), "");
}

}  // namespace
