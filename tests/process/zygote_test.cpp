// The zygote of the real kbv binary (Python and torch imported once) forking real reference
// workers: each is this process's child (waited, killed, reaped like a started one), gets its own
// environment, and serves the worker protocol.
#include "kbv/process/zygote.h"

#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <deque>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <string>
#include <thread>

#include <unistd.h>

#include <algorithm>
#include <cstdint>

#include "kbv/ipc/commands.h"
#include "kbv/protocol/protocol.h"
#include "support/scoped_environment.h"

namespace kbv::process {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

std::shared_ptr<Zygote> shared_zygote() {
  static std::shared_ptr<Zygote> zygote = Zygote::start(KBV_BINARY, KBV_PYTHON);
  return zygote;
}

nlohmann::json request(WorkerProcess& worker, const nlohmann::json& command) {
  worker.send(command, {}, std::chrono::steady_clock::now() + 60s);
  Received received = worker.receive(std::chrono::steady_clock::now() + 60s);
  EXPECT_EQ(received.status, Received::Status::message) << received.error << "\n" << worker.log_tail();
  return received.message.header;
}

nlohmann::json load_problem(WorkerProcess& worker, const fs::path& problem) {
  return request(worker, ipc::commands::message(ipc::commands::Load{
                             problem.string(), "", "cpu", protocol::to_json(protocol::preset("verified")), nullptr}));
}

// A problem file in `dir` whose import first runs `prelude` (Python that writes what the worker
// sees to $KBV_TEST_OUT, for the test to read), then defines a Model that adds one.
fs::path write_problem(const fs::path& dir, const std::string& name, const std::string& prelude) {
  fs::create_directories(dir);
  const fs::path problem = dir / name;
  std::ofstream(problem) << prelude << R"(
class Model(torch.nn.Module):
    def forward(self, x):
        return x + 1

def get_inputs():
    return [torch.rand(4)]

def get_init_inputs():
    return []
)";
  return problem;
}

// What the worker sees of itself: its parent, an environment variable through Python and
// through C, and the pid of the process.
fs::path write_probe_problem(const fs::path& dir) {
  return write_problem(dir, "probe_problem.py", R"(import ctypes, os, torch
libc = ctypes.CDLL(None)
libc.getenv.restype = ctypes.c_char_p
with open(os.environ["KBV_TEST_OUT"], "w") as out:
    out.write(f"{os.getppid()} {os.getpid()} {os.environ['KBV_TEST_VALUE']} {libc.getenv(b'KBV_TEST_VALUE').decode()}")
)");
}

fs::path scratch(const std::string& name) {
  return fs::temp_directory_path() / ("kbv_zygote_test_" + std::to_string(getpid())) / name;
}

TEST(Zygote, ForkedWorkerIsOurChildWithItsOwnEnvironmentAndServes) {
  const fs::path dir = scratch("serve");
  const fs::path problem = write_probe_problem(dir);
  const fs::path out = dir / "seen.txt";
  WorkerProcess worker =
      shared_zygote()->spawn("reference", {{"KBV_TEST_OUT", out.string()}, {"KBV_TEST_VALUE", "lane-7"}});
  const nlohmann::json loaded = load_problem(worker, problem);
  ASSERT_EQ(loaded.value("status", ""), "ok") << loaded.dump();
  std::ifstream seen(out);
  long parent = 0, self = 0;
  std::string python_value, c_value;
  seen >> parent >> self >> python_value >> c_value;
  EXPECT_EQ(parent, getpid()) << "the worker was not re-parented to this process";
  EXPECT_EQ(self, worker.pid());
  EXPECT_EQ(python_value, "lane-7");
  EXPECT_EQ(c_value, "lane-7");
  EXPECT_EQ(request(worker, ipc::commands::message(ipc::commands::Exit{})).value("status", ""), "ok");
  const ExitStatus status = worker.wait();
  EXPECT_FALSE(status.signaled);
  EXPECT_EQ(status.code, 0);
  fs::remove_all(dir.parent_path());
}

// What a worker forked by a zygote started under `environment` (set in this process for the start,
// then restored) sees when its problem is imported: whether torch.utils.cpp_extension was imported
// before the fork, sys.dont_write_bytecode, sys.pycache_prefix, torch's NVML switch.
std::string forked_python_facts(const fs::path& dir, const std::map<std::string, std::string>& environment) {
  const fs::path problem = write_problem(dir, "facts_problem.py", R"(import os, sys
preloaded = "torch.utils.cpp_extension" in sys.modules
import torch
with open(os.environ["KBV_TEST_OUT"], "w") as out:
    out.write(f"{preloaded} {sys.dont_write_bytecode} {sys.pycache_prefix} {os.environ.get('PYTORCH_NVML_BASED_CUDA_CHECK', '-')}")
)");
  std::shared_ptr<Zygote> zygote;
  {
    std::deque<kbv::testing::ScopedEnvironment> scoped;
    for (const auto& [name, value] : environment) scoped.emplace_back(name.c_str(), value);
    zygote = Zygote::start(KBV_BINARY, KBV_PYTHON);
  }
  const fs::path out = dir / "facts.txt";
  WorkerProcess worker = zygote->spawn("reference", {{"KBV_TEST_OUT", out.string()}});
  const nlohmann::json loaded = load_problem(worker, problem);
  EXPECT_EQ(loaded.value("status", ""), "ok") << loaded.dump();
  request(worker, ipc::commands::message(ipc::commands::Exit{}));
  worker.wait();
  std::ifstream seen(out);
  return std::string(std::istreambuf_iterator<char>(seen), {});
}

// An environment that writes no bytecode (as the H200 image's does) would have every worker
// compile torch.utils.cpp_extension and its candidate from source: the zygote imports cpp_extension
// before forking, without leaving torch's NVML switch set, and bytecode goes to kbv's cache.
TEST(Zygote, PreloadsCppExtensionAndKeepsBytecodeInKbvsCache) {
  const fs::path dir = scratch("bytecode");
  const fs::path cache = dir / "cache";
  EXPECT_EQ(forked_python_facts(dir, {{"PYTHONDONTWRITEBYTECODE", "1"}, {"KBV_CACHE", cache.string()}}),
            "True False " + (cache / "pycache").string() + " -");
  // The problem's own bytecode, under the prefix that mirrors its absolute path.
  bool written = false;
  for (const auto& entry : fs::directory_iterator(cache / "pycache" / dir.relative_path()))
    written |= entry.path().filename().string().rfind("facts_problem.", 0) == 0 && entry.path().extension() == ".pyc";
  EXPECT_TRUE(written) << "no facts_problem.*.pyc under " << cache / "pycache";
  fs::remove_all(dir.parent_path());
}

// A prefix the user named is theirs, and so is their choice not to write bytecode.
TEST(Zygote, LeavesAUsersBytecodeChoicesAlone) {
  const fs::path dir = scratch("user_prefix");
  const fs::path theirs = dir / "theirs";
  EXPECT_EQ(forked_python_facts(dir, {{"PYTHONDONTWRITEBYTECODE", "1"},
                                      {"PYTHONPYCACHEPREFIX", theirs.string()},
                                      {"KBV_CACHE", (dir / "cache").string()}}),
            "True True " + theirs.string() + " -");
  EXPECT_FALSE(fs::exists(dir / "cache" / "pycache"));
  fs::remove_all(dir.parent_path());
}

// Whether the writable memory of process `pid` holds `text` anywhere.
bool memory_holds(pid_t pid, const std::string& text) {
  std::ifstream maps("/proc/" + std::to_string(pid) + "/maps");
  const std::string mem_path = "/proc/" + std::to_string(pid) + "/mem";
  std::ifstream mem(mem_path, std::ios::binary);
  for (std::string line; std::getline(maps, line);) {
    std::istringstream fields(line);
    std::string range, perms;
    fields >> range >> perms;
    if (perms.rfind("rw", 0) != 0 || line.find("[v") != std::string::npos) continue;  // [vvar], [vsyscall]
    const std::uint64_t begin = std::stoull(range.substr(0, range.find('-')), nullptr, 16);
    const std::uint64_t end = std::stoull(range.substr(range.find('-') + 1), nullptr, 16);
    std::string bytes(end - begin, '\0');
    mem.clear();
    mem.seekg(static_cast<std::streamoff>(begin));
    mem.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    bytes.resize(static_cast<std::size_t>(std::max<std::streamsize>(mem.gcount(), 0)));
    if (bytes.find(text) != std::string::npos) return true;
  }
  return false;
}

// What the zygote was sent for one worker (its environment: build folders, devices; its sandbox's
// view) is not in the memory of a later one, which a candidate there could read: the zygote reads
// no request itself and wipes each one's text after its fork.
TEST(Zygote, ALaterWorkerInheritsNothingOfAnEarlierOnesRequest) {
  const std::string marker = "kbv-earlier-request-" + std::to_string(getpid());
  // Longer than the next request, and at its end: a buffer the next one reuses keeps it.
  const std::string secret = std::string(4000, 'q') + marker;
  {
    WorkerProcess first = shared_zygote()->spawn("reference", {{"KBV_TEST_SECRET", secret}});
    EXPECT_EQ(request(first, ipc::commands::message(ipc::commands::Exit{})).value("status", ""), "ok");
    first.wait();
  }
  const std::string own = "kbv-own-request-" + std::to_string(getpid());
  WorkerProcess second = shared_zygote()->spawn("reference", {{"KBV_TEST_OWN", own}});
  request(second, {{"cmd", "ping"}});  // it serves: its environment is set
  EXPECT_TRUE(memory_holds(second.pid(), own)) << "the scan does not see the worker's own environment";
  EXPECT_FALSE(memory_holds(second.pid(), marker)) << "an earlier worker's request is in a later worker's memory";
  request(second, ipc::commands::message(ipc::commands::Exit{}));
  second.wait();
}

TEST(Zygote, KillTakesDownAForkedWorker) {
  WorkerProcess worker = shared_zygote()->spawn("candidate", {});
  worker.kill();
  const ExitStatus status = worker.wait();
  EXPECT_TRUE(status.signaled);
  EXPECT_EQ(status.code, SIGKILL);
}

TEST(Zygote, SpawnsFromManyThreadsAtOnce) {
  std::vector<std::thread> threads;
  std::vector<int> codes(6, -1);
  for (std::size_t i = 0; i < codes.size(); ++i) {
    threads.emplace_back([&, i] {
      WorkerProcess worker = shared_zygote()->spawn(i % 2 ? "candidate" : "reference", {});
      worker.send(ipc::commands::message(ipc::commands::Exit{}), {}, std::chrono::steady_clock::now() + 60s);
      worker.receive(std::chrono::steady_clock::now() + 60s);
      codes[i] = worker.wait().code;
    });
  }
  for (auto& t : threads) t.join();
  for (int code : codes) EXPECT_EQ(code, 0);
}

TEST(Zygote, ItsStartFailureIsNamedWithItsOutput) {
  try {
    Zygote::start(KBV_BINARY, "/nonexistent/python3", 60s);
    FAIL() << "a zygote without an interpreter started";
  } catch (const ZygoteFailed& failed) {
    EXPECT_NE(std::string(failed.what()).find("/nonexistent/python3"), std::string::npos) << failed.what();
  }
}

}  // namespace
}  // namespace kbv::process
