#include "kbv/sandbox/spec.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <stdexcept>
#include <thread>

namespace kbv::sandbox {

int namespace_flags() { return CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS; }

Limits default_limits() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  const std::uint64_t cores = std::max(1u, std::thread::hardware_concurrency());
  Limits limits;
  limits.memory_bytes =
      pages > 0 && page > 0 ? static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page) : 0;
  limits.processes = std::max<std::uint64_t>(1024, 16 * cores);
  limits.cpu_seconds = 2 * 3600;
  limits.file_bytes = std::uint64_t{16} << 30;
  limits.scratch_bytes = std::uint64_t{4} << 30;
  limits.build_bytes = std::uint64_t{1} << 30;
  return limits;
}

namespace {

std::uint64_t parse_number(const std::string& text, bool size, const std::string& assignment) {
  std::size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  std::uint64_t scale = 1;
  if (used > 0 && size && used + 1 == text.size()) {
    switch (std::toupper(static_cast<unsigned char>(text.back()))) {
      case 'K': scale = std::uint64_t{1} << 10; break;
      case 'M': scale = std::uint64_t{1} << 20; break;
      case 'G': scale = std::uint64_t{1} << 30; break;
      case 'T': scale = std::uint64_t{1} << 40; break;
      default: used = 0;
    }
    if (used > 0) ++used;
  }
  const double scaled = value * static_cast<double>(scale);
  // Not negative, not inf or nan, and within 64 bits: the cast of anything else is undefined.
  if (used == 0 || used != text.size() || !(scaled >= 0 && scaled < 0x1p64)) {
    throw std::invalid_argument("--limit " + assignment + ": '" + text + "' is not " +
                                (size ? "a size (a number with K, M, G or T)" : "a number"));
  }
  return static_cast<std::uint64_t>(scaled);
}

}  // namespace

void set_limit(Limits& limits, const std::string& assignment) {
  const auto equals = assignment.find('=');
  if (equals == std::string::npos) throw std::invalid_argument("--limit " + assignment + ": expected NAME=VALUE");
  const std::string name = assignment.substr(0, equals), value = assignment.substr(equals + 1);
  if (name == "memory") {
    limits.memory_bytes = parse_number(value, true, assignment);
  } else if (name == "processes") {
    limits.processes = parse_number(value, false, assignment);
  } else if (name == "cpu") {
    limits.cpu_seconds = parse_number(value, false, assignment);
  } else if (name == "file") {
    limits.file_bytes = parse_number(value, true, assignment);
  } else if (name == "scratch") {
    limits.scratch_bytes = parse_number(value, true, assignment);
  } else if (name == "build") {
    limits.build_bytes = parse_number(value, true, assignment);
  } else {
    throw std::invalid_argument("--limit " + assignment + ": no limit '" + name +
                                "' (memory, processes, cpu, file, scratch, build)");
  }
}

nlohmann::json to_json(const Limits& l) {
  return {{"memory_bytes", l.memory_bytes}, {"processes", l.processes},         {"cpu_seconds", l.cpu_seconds},
          {"file_bytes", l.file_bytes},     {"scratch_bytes", l.scratch_bytes}, {"build_bytes", l.build_bytes}};
}

nlohmann::json to_json(const Spec& spec) {
  return {{"hidden", spec.hidden},
          {"readable", spec.readable},
          {"build_folder", spec.build_folder},
          {"build_folder_fd", spec.build_folder_fd},
          {"home", spec.home},
          {"limits", to_json(spec.limits)}};
}

Spec spec_from_json(const nlohmann::json& json) {
  Spec spec;
  spec.hidden = json.at("hidden").get<std::vector<std::string>>();
  spec.readable = json.at("readable").get<std::vector<std::string>>();
  spec.build_folder = json.at("build_folder").get<std::string>();
  spec.build_folder_fd = json.at("build_folder_fd").get<int>();
  spec.home = json.at("home").get<std::string>();
  const nlohmann::json& l = json.at("limits");
  spec.limits = {l.at("memory_bytes"), l.at("processes"),     l.at("cpu_seconds"),
                 l.at("file_bytes"),   l.at("scratch_bytes"), l.at("build_bytes")};
  return spec;
}

}  // namespace kbv::sandbox
