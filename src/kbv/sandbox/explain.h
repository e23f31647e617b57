// Words for a verdict's reason where the sandbox had a hand in how a candidate's worker ended: a
// limit it reached (named, with its value and the option that sets it) or a system call the
// filter refused. Read from outside the worker (its exit status and CPU time) where it can be;
// from the error the worker reported where not.
#pragma once

#include <string>

#include "kbv/sandbox/spec.h"

namespace kbv::sandbox {

// For a worker that died: killed by SIGSYS (the filter), SIGXFSZ (the file-size limit), SIGXCPU or
// SIGKILL at the CPU-time limit. Empty when none of these.
std::string explain_exit(bool signaled, int code, double cpu_seconds, const Limits& limits);

// For a build that filled its build folder (build_folder.h) of `bytes`.
std::string explain_full_build_folder(std::uint64_t bytes);

// For a worker whose sandbox's cgroup (cgroup.h) saw the kernel kill a process at its memory limit.
std::string explain_cgroup_memory(const Limits& limits);
// The sandbox's processes together passed the CPU-time limit, read from its cgroup (kbv ended it).
std::string explain_cgroup_cpu(const Limits& limits);

// For an error the worker reported: out of memory (host, or the GPU's where torch's report of it
// fails on NVML), unable to start a process or thread, a file too large (where SIGXFSZ is
// ignored), no space left in the scratch. Empty when none of these.
std::string explain_error(const std::string& message, const Limits& limits);

// Whether an error says memory ran out, the host's or the GPU's (torch's words for either, or its
// report of the GPU's failing on NVML).
bool out_of_memory(const std::string& message);

}  // namespace kbv::sandbox
