// The runtime watch over a candidate in its own process (PROTOCOL.md, "Findings"; monitor.py holds
// the Python half). It notes what the candidate did that it must not: builds that failed and were
// swallowed, the problem's own code run, torch's global state or the harness (or a signal handler,
// a gc callback, torch's op recording, a route into the dispatcher) changed, inputs changed, outputs sharing storage
// with inputs, in memory not from the device's allocator or with code hooked to their release, threads left running.
// Each fact becomes a finding with its evidence; the parent merges them with its own judgements.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>
#include <pybind11/pybind11.h>
#include <nlohmann/json.hpp>

#include "kbv/worker/dispatch_routes.h"
#include "kbv/worker/step_kernels.h"

namespace kbv::worker {

class CandidateWatch {
 public:
  CandidateWatch(std::string problem_path, std::string candidate_path);

  // Imports the candidate through harness.load_candidate, under watch; returns its (module, error).
  pybind11::tuple import_candidate();
  // Runs `build` (ModelNew's construction) noting calls into the problem's code.
  pybind11::object construct(const pybind11::object& build, const pybind11::tuple& args);
  // Compares torch's global state and the harness's callables with the snapshot taken before import,
  // the routes into the dispatcher included (check_routes).
  void check_state(const std::string& when);
  // Compares the main thread's routes into the dispatcher with those before the import and puts
  // its key sets back (worker/dispatch_routes.h), and judges the aten operators kbv's steps ran with
  // kernels other than those before the import (worker/step_kernels.h): after each call, and before
  // each of kbv's draws.
  void check_routes(const std::string& when);
  // From now on (the import and the construction checked) kbv's steps are watched for kernels of
  // the candidate's; the model's calls run within model_call().
  void watch_steps();
  StepKernels::ModelCall model_call() const {
    return StepKernels::ModelCall(step_kernels_ ? &*step_kernels_ : nullptr);
  }

  // Around one checked call: `inputs` are the call's tensors, `before` their clones when the
  // content is to be compared (none: storage checks only), `flags` the TF32 flags set for it.
  void after_call(const std::vector<at::Tensor>& inputs, const std::optional<std::vector<at::Tensor>>& before,
                  const std::vector<at::Tensor>& outputs, const nlohmann::json& flags, const std::string& when);

  // Notes Python threads the candidate started that are still alive, and native threads started
  // since `native_before` (monitor.native_threads(); None: none compared) that outlived the call.
  void check_threads(const pybind11::object& native_before, const std::string& when);
  // The names of the native threads alive now that were not before the import: torch's pools
  // started by the candidate's calls, an OpenMP team of its own, or a thread of its own.
  nlohmann::json threads_started_since_import() const;

  void add(const std::string& id, const std::string& severity, nlohmann::json evidence);
  const std::vector<nlohmann::json>& findings() const { return findings_; }

  const std::string& problem_path() const { return problem_path_; }
  const std::string& candidate_path() const { return candidate_path_; }

 private:
  std::string problem_path_, candidate_path_;
  pybind11::object before_import_;           // monitor.snapshot() before the candidate ran at all
  std::optional<DispatchRoutes> routes_;     // the main thread's, before the import
  std::optional<StepKernels> step_kernels_;  // the aten operators' registrations, before the import
  // Each signal's handler before the import: a handler of the candidate's runs its code whenever
  // the signal comes (a fault handler filling protected output pages when kbv reads them, a timer
  // signal doing work between timed calls).
  std::vector<std::uintptr_t> handlers_before_;
  std::vector<nlohmann::json> findings_;
  bool foreign_noted_ = false;
};

// The address of each signal's handler (SIG_DFL and SIG_IGN included), by signal number.
std::vector<std::uintptr_t> signal_handlers();

// A Python dict or list (of plain values) as JSON.
nlohmann::json to_json(const pybind11::handle& value);

// `call()` inside the Python context manager `context`: __exit__ runs whether or not it throws.
template <typename F>
auto within(const pybind11::object& context, F&& call) {
  context.attr("__enter__")();
  try {
    auto result = call();
    context.attr("__exit__")(pybind11::none(), pybind11::none(), pybind11::none());
    return result;
  } catch (...) {
    context.attr("__exit__")(pybind11::none(), pybind11::none(), pybind11::none());
    throw;
  }
}

}  // namespace kbv::worker
