// A candidate's worker brought up for its evaluation: in a sandbox, its content's build published
// first (by a build worker of its own, compile.h), then the worker forked into the sandbox with a
// private copy of that build, its device context made while the caller goes on.
#pragma once

#include <memory>

#include "kbv/eval/evaluation.h"
#include "kbv/eval/worker_port.h"
#include "kbv/protocol/record.h"

namespace kbv::eval {

// With `only_if_built`, nullptr where nothing is published yet (a sandboxed worker would build).
std::unique_ptr<WorkerPort> start_candidate_worker(const EvalRequest& request, bool only_if_built);

// Returns false, with the record's verdict set, where the build ends the evaluation: it took
// longer than --compile-timeout, or filled its build folder. Without a sandbox, true at once.
bool build_first(const EvalRequest& request, protocol::Record& record);

}  // namespace kbv::eval
