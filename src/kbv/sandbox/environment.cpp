#include "kbv/sandbox/environment.h"

#include <cstdlib>
#include <cstring>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "kbv/common/proc_stat.h"

extern char** environ;

namespace kbv::sandbox {
namespace {

constexpr std::string_view kNames[] = {"PATH",
                                       "HOME",
                                       "USER",
                                       "LOGNAME",
                                       "LANG",
                                       "LANGUAGE",
                                       "TZ",
                                       "TERM",
                                       "TMPDIR",
                                       "SHELL",
                                       "LD_LIBRARY_PATH",
                                       "VIRTUAL_ENV",
                                       "CC",
                                       "CXX",
                                       "CPP",
                                       "CFLAGS",
                                       "CXXFLAGS",
                                       "CPPFLAGS",
                                       "LDFLAGS",
                                       "MAX_JOBS",
                                       "NVCC_PREPEND_FLAGS",
                                       "NVCC_APPEND_FLAGS"};
constexpr std::string_view kPrefixes[] = {"LC_",     "PYTHON", "CUDA_", "NVIDIA_", "TORCH_", "PYTORCH_",
                                          "TRITON_", "OMP_",   "KMP_",  "GOMP_",   "MKL_",   "OPENBLAS_",
                                          "CUBLAS",  "CUDNN_", "NCCL_", "CCACHE_", "KBV_"};

// The block of environment strings the process started with, as the kernel has it.
std::pair<char*, char*> started_block() {
  const std::optional<ProcStat> stat = ProcStat::read("self");
  if (!stat) return {nullptr, nullptr};
  // proc(5): env_start and env_end are fields 50 and 51.
  return {reinterpret_cast<char*>(stat->field(50).value_or(0)), reinterpret_cast<char*>(stat->field(51).value_or(0))};
}

}  // namespace

bool passes_to_candidates(std::string_view name) {
  for (std::string_view allowed : kNames) {
    if (name == allowed) return true;
  }
  for (std::string_view prefix : kPrefixes) {
    if (name.substr(0, prefix.size()) == prefix) return true;
  }
  if (const char* passed = std::getenv("KBV_PASS_ENV")) {
    std::istringstream names(passed);
    for (std::string listed; std::getline(names, listed, ',');) {
      if (listed == name) return true;
    }
  }
  return false;
}

void keep_only_candidate_environment() {
  std::vector<std::pair<std::string, std::string>> kept;
  for (char** entry = environ; entry && *entry; ++entry) {
    const std::string_view text(*entry);
    const auto equals = text.find('=');
    if (equals != std::string_view::npos && passes_to_candidates(text.substr(0, equals))) {
      kept.emplace_back(text.substr(0, equals), text.substr(equals + 1));
    }
  }
  clearenv();
  for (const auto& [name, value] : kept) setenv(name.c_str(), value.c_str(), 1);  // copies: none points into the block
  const auto [begin, end] = started_block();
  if (begin != nullptr && end > begin) std::memset(begin, 0, static_cast<std::size_t>(end - begin));
}

}  // namespace kbv::sandbox
