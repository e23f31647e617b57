// `kbv worker`: the entry point of a reference or candidate worker process.
#pragma once

#include <string>

#include "kbv/worker/role.h"

namespace kbv::worker {

// Serves commands from the parent on the channel fds until told to exit; returns the exit code.
// With a `sandbox` (sandbox::to_json of a spec, as text; empty for none) the process, started in
// new namespaces, enters it first, before its interpreter starts.
int run_worker(Role role, const std::string& python_executable, const std::string& sandbox = "");

// The same loop in a process whose interpreter is already started (a worker forked by the zygote).
int serve_worker(Role role);

// The zygote's side (process/zygote.h), `kbv worker --role zygote`: starts the interpreter, then
// forks a worker for every request on kInheritedFd until the parent closes it. Returns in the
// zygote (exit code); a forked worker never returns from it.
int run_zygote(const std::string& python_executable);

}  // namespace kbv::worker
