#include "kbv/eval/sandbox_plan.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace kbv::eval {
namespace {

namespace fs = std::filesystem;

// Where the interpreter finds its standard library and packages (its prefixes and sys.path), as it
// reports them: the zygote's, else asked once per interpreter and process (30-150 ms: a start of
// the interpreter, its site packages' .pth files read).
const std::vector<std::string>& python_paths(const WorkerLaunch& launch) {
  if (launch.zygote) return launch.zygote->python_paths();
  const std::string& python = launch.python;
  static std::mutex mutex;
  static std::map<std::string, std::vector<std::string>> known;
  std::lock_guard lock(mutex);
  if (auto found = known.find(python); found != known.end()) return found->second;
  const std::string command =
      "'" + python + "' -c 'import json, sys; "
      "print(json.dumps([sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix] + sys.path))' 2>/dev/null";
  std::string text;
  if (FILE* pipe = popen(command.c_str(), "r")) {
    char buffer[4096];
    for (std::size_t n; (n = fread(buffer, 1, sizeof buffer, pipe)) > 0;) text.append(buffer, n);
    pclose(pipe);
  }
  const nlohmann::json paths = nlohmann::json::parse(text, nullptr, false);
  if (!paths.is_array()) throw std::runtime_error("cannot ask " + python + " where its packages are (for the sandbox)");
  std::vector<std::string>& result = known[python];
  for (const auto& path : paths) {
    if (path.is_string() && !path.get<std::string>().empty() && path.get<std::string>()[0] == '/') result.push_back(path);
  }
  return result;
}

// `path` and, where it differs, where it resolves: a folder reached through a link is shown at both.
void add_both(std::set<std::string>& paths, const std::string& path) {
  std::error_code error;
  const fs::path absolute = fs::absolute(path, error).lexically_normal();
  if (error || absolute.empty()) return;
  paths.insert(absolute.string());
  const fs::path real = fs::canonical(absolute, error);
  if (!error) paths.insert(real.string());
}

std::string canonical_or_given(const std::string& path) {
  std::error_code error;
  const fs::path real = fs::weakly_canonical(path, error);
  return error ? path : real.string();
}

}  // namespace

sandbox::Spec plan_sandbox(const WorkerLaunch& launch, const std::string& cache_dir, const std::vector<std::string>& files) {
  std::set<std::string> readable;
  for (const std::string& path : python_paths(launch)) add_both(readable, path);
  add_both(readable, fs::path(launch.python).parent_path().string());
  for (const char* shared : {"toolchain", "pch", "pycache"}) add_both(readable, (fs::path(cache_dir) / shared).string());
  for (const std::string& file : files) add_both(readable, file);

  sandbox::Spec spec;
  spec.hidden = {canonical_or_given(cache_dir), "/run"};
  for (const std::string& path : launch.hidden) spec.hidden.push_back(canonical_or_given(path));
  spec.readable.assign(readable.begin(), readable.end());
  for (const auto& [name, value] : launch.environment) {
    if (name == "TORCH_EXTENSIONS_DIR") spec.build_folder = canonical_or_given(value);
  }
  if (const char* home = std::getenv("HOME"); home != nullptr && *home == '/') spec.home = canonical_or_given(home);
  spec.limits = launch.limits;
  return spec;
}

}  // namespace kbv::eval
