// The control group of one sandbox (docs/SECURITY.md, "The limits"): its memory (private, shared,
// memfds, the scratch's and the build folder's tmpfs, the page cache it causes) and its tasks,
// counted for all of its processes together, so that the kernel stops the sandbox at its limit and
// not the machine. cgroup v2 where this process's cgroup can hand the memory and pids controllers
// to a child, else v1's memory and pids hierarchies; where neither can be had, none (the record
// says so, and the per-process limits stand alone).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kbv/sandbox/spec.h"

namespace kbv::sandbox {

class Cgroup {
 public:
  // A new cgroup under this process's own, limited to `limits.memory_bytes` and
  // `limits.processes`; null with `why_not` set where none can be made.
  static std::unique_ptr<Cgroup> create(const Limits& limits, std::string& why_not);
  ~Cgroup();  // removes it: call once its processes are gone
  Cgroup(const Cgroup&) = delete;
  Cgroup& operator=(const Cgroup&) = delete;

  // Moves process `pid`, all its threads, in; what it starts later is born there.
  void add(pid_t pid) const;
  // How many of its processes the kernel killed at its memory limit.
  std::uint64_t oom_kills() const;
  // The CPU time all its processes have used, dead threads and processes included; none on v1
  // without the cpuacct hierarchy.
  std::optional<double> cpu_seconds() const;
  // "v2" or "v1".
  const char* version() const { return v2_ ? "v2" : "v1"; }

 private:
  Cgroup(std::vector<std::string> dirs, bool v2, std::string cpu_dir)
      : dirs_(std::move(dirs)), v2_(v2), cpu_dir_(std::move(cpu_dir)) {}
  std::vector<std::string> dirs_;  // v2: one; v1: its memory and pids cgroups, and its cpuacct one if made
  bool v2_;
  std::string cpu_dir_;  // where its CPU time is read ("" where it is not)
};

}  // namespace kbv::sandbox
