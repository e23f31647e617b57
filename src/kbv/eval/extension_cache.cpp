#include "kbv/eval/extension_cache.h"

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <c10/core/CPUAllocator.h>

#include "kbv/common/content_key.h"

namespace kbv::eval {
namespace {

namespace fs = std::filesystem;

std::string environment(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

// The C++ compiler torch's builds run: $CXX, else c++.
std::string cxx_compiler() {
  const std::string cxx = environment("CXX");
  return cxx.empty() ? "c++" : cxx;
}

// `command`'s executable as a shell finds it (its first word; a path is taken as it is).
fs::path find_executable(const std::string& command) {
  const std::string name = command.substr(0, command.find(' '));
  if (name.find('/') != std::string::npos) return name;
  std::istringstream path(environment("PATH"));
  std::error_code ignored;
  for (std::string dir; std::getline(path, dir, ':');) {
    const fs::path candidate = fs::path(dir.empty() ? "." : dir) / name;
    if (fs::is_regular_file(candidate, ignored)) return candidate;
  }
  return name;
}

std::string file_identity(const fs::path& file) {
  std::error_code error;
  const fs::path real = fs::canonical(file, error);
  if (error) return file.string() + " (not found)";
  const auto size = fs::file_size(real, error);
  const auto modified = fs::last_write_time(real, error).time_since_epoch().count();
  return real.string() + " " + std::to_string(size) + " " + std::to_string(modified);
}

fs::path nvcc() {
  if (const std::string forced = environment("PYTORCH_NVCC"); !forced.empty()) return find_executable(forced);
  for (const char* home : {"CUDA_HOME", "CUDA_PATH"}) {
    if (const std::string dir = environment(home); !dir.empty()) return fs::path(dir) / "bin" / "nvcc";
  }
  const fs::path on_path = find_executable("nvcc");
  return on_path.has_parent_path() ? on_path : fs::path("/usr/local/cuda/bin/nvcc");
}

std::string torch_library() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&c10::GetCPUAllocator), &info) == 0 || !info.dli_fname) return "(torch not found)";
  return file_identity(info.dli_fname);
}

}  // namespace

std::string toolchain_identity(const std::string& device) {
  const std::string cxx = cxx_compiler();
  std::string identity = cxx + " = " + file_identity(find_executable(cxx)) + "\n";
  if (device == "cuda") identity += "nvcc = " + file_identity(nvcc()) + "\n";
  return identity + "torch = " + torch_library();
}

std::string extension_dir(const std::string& cache_dir, const std::string& candidate_path, const std::string& device,
                          const std::string& python) {
  std::ifstream in(candidate_path, std::ios::binary);
  std::ostringstream content;
  content << in.rdbuf() << "\n" << device << "\n" << KBV_VERSION << "\n" << python << "\n" << toolchain_identity(device);
  return (fs::path(cache_dir) / "extensions" / content_key(content.str())).string();
}

void add_build_environment(WorkerLaunch& launch, const std::string& cache_dir, const std::string& candidate_path,
                           const std::string& device) {
  launch.environment.emplace_back("TORCH_EXTENSIONS_DIR", extension_dir(cache_dir, candidate_path, device, launch.python));
  const std::string cxx = cxx_compiler();
  const fs::path wrapper = fs::path(launch.executable).parent_path() / "kbv-pch-c++";
  std::error_code ignored;
  if (environment("KBV_PCH") != "off" && cxx.find(' ') == std::string::npos && fs::is_regular_file(wrapper, ignored)) {
    launch.environment.insert(launch.environment.end(), {{"CXX", wrapper.string()},
                                                         {"KBV_REAL_CXX", cxx},
                                                         {"KBV_PCH_DIR", (fs::path(cache_dir) / "pch").string()}});
  }
}

}  // namespace kbv::eval
