#include "kbv/eval/sandbox_plan.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
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
      "'" + python +
      "' -c 'import json, sys; "
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
    if (path.is_string() && !path.get<std::string>().empty() && path.get<std::string>()[0] == '/')
      result.push_back(path);
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

// Whether `path` is `folder` or lies inside it.
bool inside(const fs::path& path, const fs::path& folder) {
  return std::mismatch(folder.begin(), folder.end(), path.begin(), path.end()).first == folder.end();
}

// The system's software, shown whole: programs, libraries, the toolchain, CUDA, the drivers'
// libraries and the system's configuration. Not /home, /root, /srv, /mnt, /var, /run or any other
// folder of the caller's: of those only the files named are shown.
constexpr const char* kSystemFolders[] = {"/usr",    "/bin", "/sbin", "/lib",  "/lib32", "/lib64",
                                          "/libx32", "/etc", "/opt",  "/snap", "/nix"};

bool in_system_folder(const fs::path& path) {
  return std::any_of(std::begin(kSystemFolders), std::end(kSystemFolders),
                     [&](const char* system) { return inside(path, system); });
}

// The absolute entries of a search path in the environment (PATH, LD_LIBRARY_PATH).
std::vector<std::string> search_path(const char* name) {
  std::vector<std::string> entries;
  std::istringstream path(std::getenv(name) ? std::getenv(name) : "");
  for (std::string entry; std::getline(path, entry, ':');) {
    if (!entry.empty() && entry[0] == '/') entries.push_back(entry);
  }
  return entries;
}

}  // namespace

sandbox::Spec plan_sandbox(const WorkerLaunch& launch, const std::string& cache_dir,
                           const std::vector<std::string>& files) {
  std::set<std::string> readable;
  for (const char* system : kSystemFolders) {
    if (fs::exists(system)) readable.insert(system);
  }
  for (const std::string& path : python_paths(launch)) add_both(readable, path);
  add_both(readable, fs::path(launch.python).parent_path().string());
  for (const char* shared : {"toolchain", "pch", "pycache"})
    add_both(readable, (fs::path(cache_dir) / shared).string());
  for (const std::string& file : files) add_both(readable, file);
  // What the environment names outside the system's folders (programs, libraries, the compiler).
  std::vector<std::string> named = search_path("PATH");
  for (const std::string& entry : search_path("LD_LIBRARY_PATH")) named.push_back(entry);
  for (const auto& [name, value] : launch.environment) {
    if (name == "CXX" && fs::path(value).is_absolute()) named.push_back(fs::path(value).parent_path().string());
  }
  for (const std::string& entry : named) {
    if (const fs::path real = canonical_or_given(entry); !in_system_folder(real)) readable.insert(real.string());
  }

  sandbox::Spec spec;
  spec.hidden = {canonical_or_given(cache_dir)};
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
