#include "kbv_runner.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <mutex>
#include <sstream>

namespace kbv::testing {
namespace {

namespace fs = std::filesystem;

std::string slurp(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

Outcome kbv_eval(const std::vector<std::string>& args, const std::string& tag) {
  static std::mutex mutex;
  static int counter = 0;
  int id;
  {
    std::lock_guard lock(mutex);
    id = counter++;
  }
  const fs::path dir = fs::temp_directory_path() / ("kbv_e2e_" + std::to_string(getpid()));
  fs::create_directories(dir);
  const fs::path out = dir / (std::to_string(id) + ".out"), err = dir / (std::to_string(id) + ".err"),
                 record = dir / (std::to_string(id) + ".json");
  std::string command = std::string(KBV_BINARY) + " eval";
  for (const std::string& a : args) command += " '" + a + "'";
  command += " --json '" + record.string() + "' >'" + out.string() + "' 2>'" + err.string() + "'";
  Outcome run;
  const int status = std::system(command.c_str());
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  run.out = slurp(out);
  run.err = slurp(err);
  if (fs::exists(record)) run.record = nlohmann::json::parse(slurp(record));
  if (run.exit_code != 0) std::fprintf(stderr, "[%s] exit %d\n%s\n", tag.c_str(), run.exit_code, run.err.c_str());
  return run;
}

std::map<std::string, Outcome> kbv_eval_all(const std::vector<std::pair<std::string, std::vector<std::string>>>& jobs,
                                            int parallel) {
  std::map<std::string, Outcome> outcomes;
  std::mutex mutex;
  size_t next = 0;
  auto worker = [&] {
    for (;;) {
      size_t mine;
      {
        std::lock_guard lock(mutex);
        if (next == jobs.size()) return;
        mine = next++;
      }
      Outcome run = kbv_eval(jobs[mine].second, jobs[mine].first);
      std::lock_guard lock(mutex);
      outcomes[jobs[mine].first] = std::move(run);
    }
  };
  std::vector<std::future<void>> running;
  for (int i = 0; i < parallel; ++i) running.push_back(std::async(std::launch::async, worker));
  for (auto& f : running) f.get();
  return outcomes;
}

std::vector<std::vector<std::string>> read_tsv(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::vector<std::string>> rows;
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    std::vector<std::string> cells;
    std::stringstream fields(line);
    for (std::string cell; std::getline(fields, cell, '\t');) cells.push_back(cell);
    rows.push_back(std::move(cells));
  }
  return rows;
}

}  // namespace kbv::testing
