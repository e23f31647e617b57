// What a worker command can fail with, named by the verdict or error kind it maps to.
#pragma once

#include <stdexcept>
#include <string>

namespace kbv::worker {

// kind: compile_error, runtime_error, crash, incorrect (output not tensors) for the candidate;
// problem_error (the problem file is broken), no_device, internal for the evaluator itself.
struct Failure : std::runtime_error {
  Failure(std::string kind_, const std::string& message) : std::runtime_error(message), kind(std::move(kind_)) {}
  std::string kind;
};

}  // namespace kbv::worker
