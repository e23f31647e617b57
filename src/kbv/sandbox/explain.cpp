#include "kbv/sandbox/explain.h"

#include <csignal>
#include <cstdio>
#include <regex>

namespace kbv::sandbox {
namespace {

// Out of memory in torch's words, the host's or the GPU's ("CUDA out of memory").
const std::regex& memory_words() {
  static const std::regex words(
      R"(MemoryError|can't allocate memory|Cannot allocate memory|std::bad_alloc|out of memory)");
  return words;
}

// Out of device memory, torch's caching allocator asks NVML which processes hold it, for its
// message; where NVML is out of reach (the sandbox, some containers) the message becomes an assert
// on NVML.
const std::regex& nvml_report() {
  static const std::regex words(R"(NVML_SUCCESS == .*nvml\w*\(.*CUDACachingAllocator)");
  return words;
}

std::string gib(std::uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3g GiB", static_cast<double>(bytes) / static_cast<double>(1ull << 30));
  return text;
}

}  // namespace

std::string explain_exit(bool signaled, int code, double cpu_seconds, const Limits& limits) {
  if (!signaled) return "";
  if (code == SIGSYS) return "the sandbox refused a system call that no kernel needs (docs/SECURITY.md lists them)";
  if (code == SIGXFSZ && limits.file_bytes > 0)
    return "a file reached the sandbox's file-size limit of " + gib(limits.file_bytes) + " (--limit file=)";
  if ((code == SIGXCPU || code == SIGKILL) && limits.cpu_seconds > 0 &&
      cpu_seconds + 1 >= static_cast<double>(limits.cpu_seconds)) {
    return "the process reached the sandbox's CPU-time limit of " + std::to_string(limits.cpu_seconds) +
           " s (--limit cpu=)";
  }
  return "";
}

std::string explain_full_build_folder(std::uint64_t bytes) {
  return "the build filled its build folder, " + gib(bytes) + " (--limit build=); nothing of it is kept";
}

std::string explain_cgroup_memory(const Limits& limits) {
  return "the sandbox reached its memory limit of " + gib(limits.memory_bytes) +
         " for all its processes and memory together (--limit memory=): the kernel killed it";
}

std::string explain_cgroup_cpu(const Limits& limits) {
  return "the sandbox reached its CPU-time limit of " + std::to_string(limits.cpu_seconds) +
         " s for all its processes together (--limit cpu=): kbv ended it";
}

std::string explain_error(const std::string& message, const Limits& limits) {
  static const std::regex processes(R"(Resource temporarily unavailable|can't start new thread|BlockingIOError)");
  static const std::regex space(R"(No space left on device)");
  static const std::regex file(R"(File too large)");
  if (std::regex_search(message, nvml_report())) {
    return "the GPU is out of memory (torch's report of it asks NVML, which the sandbox does not reach)";
  }
  if (limits.memory_bytes > 0 && std::regex_search(message, memory_words())) {
    return "the sandbox's memory limit is " + gib(limits.memory_bytes) + " per process (--limit memory=)";
  }
  if (limits.processes > 0 && std::regex_search(message, processes)) {
    return "the sandbox's limit is " + std::to_string(limits.processes) + " processes and threads (--limit processes=)";
  }
  if (limits.file_bytes > 0 && std::regex_search(message, file)) {
    return "a file reached the sandbox's file-size limit of " + gib(limits.file_bytes) + " (--limit file=)";
  }
  if (limits.scratch_bytes > 0 && std::regex_search(message, space)) {
    return "the sandbox's scratch (/tmp, $HOME, /dev/shm) holds " + gib(limits.scratch_bytes) + " (--limit scratch=)";
  }
  return "";
}

bool out_of_memory(const std::string& message) {
  return std::regex_search(message, nvml_report()) || std::regex_search(message, memory_words());
}

}  // namespace kbv::sandbox
