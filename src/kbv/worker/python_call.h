// A call into Python from a worker's step, its exception turned into a Failure of the step's kind
// (ipc/failure.h), with what the step was doing before Python's own words.
#pragma once

#include <string>

#include <pybind11/pybind11.h>

#include "kbv/ipc/failure.h"

namespace kbv::worker {

template <typename F>
auto guarded(ipc::FailureKind kind, const std::string& what, F&& call) {
  try {
    return call();
  } catch (pybind11::error_already_set& error) {
    throw ipc::Failure(kind, what + ":\n" + error.what());
  }
}

}  // namespace kbv::worker
