// What a worker command can fail with, named by the verdict or error it maps to in the parent.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace kbv::ipc {

enum class FailureKind {
  compile_error,    // the candidate's kernels did not build
  runtime_error,    // the candidate's code raised
  crash,            // a CUDA fault in the candidate's process: its context is gone
  incorrect,        // the candidate's output is not tensors
  problem_error,    // the problem file is broken
  reference_error,  // the reference's forward raised
  no_device,        // --device cuda where no CUDA device is visible
  internal,         // kbv's own step failed
};

// The name a reply carries ("compile_error", ...).
std::string_view name(FailureKind kind);
// The kind a reply names; throws std::invalid_argument for a name no worker sends.
FailureKind failure_kind(std::string_view name);

struct Failure : std::runtime_error {
  Failure(FailureKind kind_, const std::string& message) : std::runtime_error(message), kind(kind_) {}
  FailureKind kind;
};

}  // namespace kbv::ipc
