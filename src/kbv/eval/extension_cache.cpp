#include "kbv/eval/extension_cache.h"

#include <dlfcn.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
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

// The compiler wrapper as builds name it: a copy in the cache, in a folder named by the content of
// its two files. load_inline's build.ninja names the compiler by path and ninja rebuilds whatever a
// changed command made, so a wrapper named where this kbv was built (a fresh checkout, another
// build folder) rebuilt every cached extension; the same wrapper now keeps one path. The copy is
// made in a folder of its own, then renamed into place: a concurrent build sees both files or
// none. Where the cache takes no copy, the wrapper beside kbv; empty where there is none.
constexpr const char* kWrapperFiles[] = {"kbv-pch-c++", "kbv_pch.py"};

// The wrapper's two files beside kbv in `kbv_dir`, one after the other; empty where one is missing.
std::string wrapper_content(const fs::path& kbv_dir) {
  std::string content;
  for (const char* file : kWrapperFiles) {
    std::ifstream in(kbv_dir / file, std::ios::binary);
    if (!in) return {};
    content += std::string(std::istreambuf_iterator<char>(in), {}) + '\0';
  }
  return content;
}

fs::path wrapper_in_cache(const fs::path& kbv_dir, const std::string& cache_dir) {
  const std::string content = wrapper_content(kbv_dir);
  if (content.empty()) return {};
  const fs::path dir = fs::path(cache_dir) / "toolchain" / content_key(content);
  std::error_code error;
  if (fs::is_regular_file(dir / kWrapperFiles[0], error)) return dir / kWrapperFiles[0];
  static std::atomic<int> copies{0};
  const fs::path staging = dir.string() + ".tmp-" + std::to_string(getpid()) + "-" + std::to_string(copies++);
  fs::create_directories(staging, error);
  for (const char* file : kWrapperFiles) {
    if (!error) fs::copy_file(kbv_dir / file, staging / file, error);  // with the file's permissions
  }
  if (!error) fs::rename(staging, dir, error);  // fails where another copy got there first
  // Whatever is left of the staging folder; by unlink and rmdir, not std::filesystem::remove_all,
  // which resolves to libtorch's own copy here and crashes.
  for (const char* file : kWrapperFiles) ::unlink((staging / file).c_str());
  ::rmdir(staging.c_str());
  return fs::is_regular_file(dir / kWrapperFiles[0], error) ? dir / kWrapperFiles[0] : kbv_dir / kWrapperFiles[0];
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
  // The compiler wrapper builds run (its path is in their build files: another wrapper, another
  // build), by the content of this kbv's copy.
  if (environment("KBV_PCH") != "off") {
    static const std::string wrapper = [] {
      std::error_code error;
      const std::string content = wrapper_content(fs::read_symlink("/proc/self/exe", error).parent_path());
      return content.empty() ? std::string("none") : content_key(content);
    }();
    identity += "compiler wrapper = " + wrapper + "\n";
  }
  if (device == "cuda") identity += "nvcc = " + file_identity(nvcc()) + "\n";
  return identity + "torch = " + torch_library();
}

std::string build_key(const std::string& candidate_path, const std::string& device, const std::string& python) {
  std::ifstream in(candidate_path, std::ios::binary);
  std::ostringstream content;
  content << in.rdbuf() << "\n"
          << device << "\n"
          << KBV_VERSION << "\n"
          << python << "\n"
          << toolchain_identity(device);
  return content_key(content.str());
}

std::string extension_dir(const std::string& cache_dir, const std::string& candidate_path, const std::string& device,
                          const std::string& python) {
  return (fs::path(cache_dir) / "extensions" / build_key(candidate_path, device, python)).string();
}

std::string published_dir(const std::string& cache_dir, const std::string& candidate_path, const std::string& device,
                          const std::string& python) {
  return (fs::path(cache_dir) / "builds" / build_key(candidate_path, device, python)).string();
}

void add_build_environment(WorkerLaunch& launch, const std::string& cache_dir, const std::string& candidate_path,
                           const std::string& device) {
  launch.environment.emplace_back("TORCH_EXTENSIONS_DIR",
                                  extension_dir(cache_dir, candidate_path, device, launch.python));
  const std::string cxx = cxx_compiler();
  if (environment("KBV_PCH") == "off" || cxx.find(' ') != std::string::npos) return;
  const fs::path wrapper = wrapper_in_cache(fs::path(launch.executable).parent_path(), cache_dir);
  if (!wrapper.empty()) {
    launch.environment.insert(launch.environment.end(), {{"CXX", wrapper.string()},
                                                         {"KBV_REAL_CXX", cxx},
                                                         {"KBV_PCH_PYTHON", launch.python},
                                                         {"KBV_PCH_DIR", (fs::path(cache_dir) / "pch").string()}});
  }
}

}  // namespace kbv::eval
