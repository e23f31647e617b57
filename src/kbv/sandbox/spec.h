// What the sandbox around a candidate's process holds (docs/SECURITY.md): which paths it sees and
// how, and the limits it runs under. The parent plans it (eval/sandbox_plan.h); the process that
// will run candidate code applies it (sandbox/enter.h) inside its own namespaces, before the
// candidate's first line runs. It crosses to that process as JSON: paths and numbers only.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kbv::sandbox {

// The namespaces a sandboxed process is made in (clone or unshare): its own process table, network
// (nothing but a loopback left down), mounts, System V IPC and host name.
int namespace_flags();

// Each limit applies per process of the sandbox unless it says otherwise; 0 means none.
struct Limits {
  std::uint64_t memory_bytes = 0;  // RLIMIT_DATA: private writable memory (the heap, torch's CPU tensors)
  std::uint64_t processes =
      0;  // RLIMIT_NPROC: tasks (threads count) of the sandbox's own uid, all its processes together
  std::uint64_t cpu_seconds = 0;    // RLIMIT_CPU
  std::uint64_t file_bytes = 0;     // RLIMIT_FSIZE: the largest file it may write
  std::uint64_t scratch_bytes = 0;  // the private tmpfs behind /tmp, /var/tmp, /dev/shm and $HOME, all together
  std::uint64_t build_bytes = 0;    // the candidate's build folder (build_folder.h), all its files together
};

// kbv's defaults on this machine: memory its physical RAM, 16 tasks per core (at least 1024),
// two hours of CPU time, 16 GiB files, 4 GiB of scratch, 1 GiB of builds.
Limits default_limits();

// Sets one limit from "name=value" (memory, processes, cpu, file, scratch, build; sizes take K/M/G/T
// suffixes, cpu seconds). Throws std::invalid_argument with a message for the user.
void set_limit(Limits& limits, const std::string& assignment);

struct Spec {
  // Replaced by an empty folder (or, for a file, an empty file), read-only, where a readable folder
  // holds it: the store, kbv's cache. A path not in the view is skipped.
  std::vector<std::string> hidden;
  // Shown read-only at the same path, also inside a hidden folder or the scratch; nothing else of the
  // caller's filesystem is in the view: the system's software folders, the interpreter and its
  // packages, the problem and candidate files.
  std::vector<std::string> readable;
  // The candidate's private build folder (build_folder.h), attached read-write at this path (its
  // TORCH_EXTENSIONS_DIR) from the mount descriptor `build_folder_fd` the process inherits; empty
  // for none. Nothing else is writable but the scratch.
  std::string build_folder;
  int build_folder_fd = -1;
  // $HOME: a private empty folder in the scratch (tools that write ~/.cache, ~/.triton).
  std::string home;
  Limits limits;
};

nlohmann::json to_json(const Limits& limits);
nlohmann::json to_json(const Spec& spec);
Spec spec_from_json(const nlohmann::json& json);

}  // namespace kbv::sandbox
