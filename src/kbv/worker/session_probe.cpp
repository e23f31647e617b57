// Session's watch over a candidate (session.h): the traced call, the probe, the findings and the
// ops its calls ran.
#include "kbv/worker/session.h"

#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <torch/csrc/utils/pybind.h>

#include "kbv/check/comparison.h"
#include "kbv/hacks/integrity.h"
#include "kbv/hacks/poison.h"
#include "kbv/python/harness.h"
#include "kbv/worker/call_inputs.h"
#include "kbv/worker/extension_symbols.h"
#include "kbv/worker/python_call.h"

namespace py = pybind11;

namespace kbv::worker {

namespace {

// The candidate's extension builds (TORCH_EXTENSIONS_DIR, set by the parent), or None.
py::object extensions_dir() {
  const char* directory = std::getenv("TORCH_EXTENSIONS_DIR");
  return directory ? py::object(py::str(directory)) : py::none();
}

// harness.forward(model, inputs) as a Python callable of no arguments.
py::object bound_forward(const py::object& model, const py::list& inputs) {
  return py::module_::import("functools").attr("partial")(python::harness().attr("forward"), model, inputs);
}

// Whether one of `defined` (an extension's functions, demangled) is the kernel the trace names
// (cut at 200 characters, as monitor.py cuts it).
bool defines_kernel(const std::set<std::string>& defined, const std::string& name) {
  if (name.size() < 200) return defined.count(name) > 0;
  const auto it = defined.lower_bound(name);
  return it != defined.end() && it->starts_with(name);
}

}  // namespace

nlohmann::json Session::trace(const nlohmann::json& spec, const std::string& mode) {
  const py::list inputs = draw(spec);
  apply_flags(mode);
  try {
    const py::tuple traced =
        python::monitor().attr("trace_call")(bound_forward(model_, inputs), device_.str(), py::none(), py::none());
    return to_json(traced[1]);
  } catch (py::error_already_set& error) {
    return {{"trace_error", error.what()}};  // the evaluation goes on without the reference's ops
  }
}

nlohmann::json Session::traced_forward(const py::list& inputs, const std::string& mode) {
  apply_flags(mode);
  if (ops_) ops_->start();
  py::tuple traced;
  try {
    const StepKernels::ModelCall model_call = watch_->model_call();
    traced = guarded(ipc::FailureKind::runtime_error, "ModelNew.forward raised under the profiler", [&] {
      return python::monitor().attr("trace_call")(bound_forward(model_, inputs), device_.str(), extensions_dir(),
                                                  watch_->problem_path());
    });
  } catch (const ipc::Failure&) {
    if (ops_) ops_->stop();
    throw;
  }
  if (ops_) traced_ops_ = ops_->stop();
  const Forward result = collect(traced[0]);
  watch_->after_call(tensors_of(inputs), std::nullopt, result.outputs, nullptr, "traced call");
  nlohmann::json facts = to_json(traced[1]);
  if (!facts.at("problem_calls").empty()) {
    watch_->add("reference_reuse", "error", {{"when", "traced call"}, {"problem_code_run", facts["problem_calls"]}});
  }
  return facts;
}

nlohmann::json Session::probe(const nlohmann::json& spec, const nlohmann::json& refresh,
                              std::vector<at::Tensor>* refreshed_outputs) {
  if (!watch_) throw ipc::Failure(ipc::FailureKind::internal, "probe: the candidate is not watched (detection is off)");
  py::module_& monitor = python::monitor();
  const std::string mode = "candidate";
  const py::list inputs = draw(spec);
  // Each call starts from the same input content, so a candidate that changes its inputs is named
  // for that (input_mutation) and not, through its next output, for something else.
  std::vector<at::Tensor> pristine = hacks::snapshot(tensors_of(inputs));
  const auto restore_inputs = [&] {
    const std::vector<at::Tensor> current = tensors_of(inputs);
    for (size_t i = 0; i < current.size(); ++i) current[i].copy_(pristine[i]);
  };

  // 1. A plain call, and the threads it leaves running.
  py::object native_before = monitor.attr("native_threads")();
  Forward first = forward(mode, inputs, "probe: first call");
  measure::synchronize(device_);
  watch_->check_threads(native_before, "after a call");
  if (first.bad_output) return {{"skipped", *first.bad_output}};
  std::vector<at::Tensor> clean = hacks::snapshot(first.outputs);
  nlohmann::json probe;

  // 2. The same inputs again (the first outputs still held), watching exceptions the candidate's
  // own code raises and swallows, and calls into the problem's code.
  py::object watch =
      monitor.attr("CallWatch")(watch_->problem_path(), watch_->candidate_path(), extensions_dir(), false, true);
  restore_inputs();
  {
    const Forward second = within(watch, [&] { return forward(mode, inputs, "probe: repeated call"); });
    probe["repeat_error"] = check::scaled_error(second.outputs, clean);
    probe["output_reuse"] = !hacks::overlaps(second.outputs, first.outputs).empty();
  }
  first = Forward{};  // both calls' outputs freed before the poisoned call
  const nlohmann::json raised = to_json(watch.attr("raised")), problem_calls = to_json(watch.attr("problem_calls"));
  if (!raised.empty()) watch_->add("exception_fallback", "error", {{"when", "forward"}, {"raised_and_caught", raised}});
  if (!problem_calls.empty())
    watch_->add("reference_reuse", "error", {{"when", "forward"}, {"problem_code_run", problem_calls}});

  // 3. Memory poisoned before the call: values it never wrote read as NaN.
  restore_inputs();
  {
    const hacks::Poison poison(clean);
    const Forward third = forward(mode, inputs, "probe: call on poisoned memory");
    std::int64_t elements = 0;
    for (const at::Tensor& t : clean) elements += t.numel();
    probe["poisoned"] = {{"nan_introduced", hacks::nan_introduced(clean, third.outputs)},
                         {"elements", elements},
                         {"error", check::scaled_error(third.outputs, clean)}};
  }

  // 4. Under the profiler: whose work ran, on which streams.
  restore_inputs();
  try {
    probe["trace"] = traced_forward(inputs, mode);
  } catch (const ipc::Failure& failure) {
    probe["trace_error"] = failure.what();
  }

  // 4b. What its compiled code calls below the dispatcher, which the trace cannot see. On the GPU,
  // a kernel launched outside any aten op is the candidate's only when its compiled code defines
  // it: the rest were launched by those library calls. A kernel replayed from a CUDA graph (no
  // Triton kernel) is held to the same test always: a graph captures library kernels as well.
  const char* folder = std::getenv("TORCH_EXTENSIONS_DIR");
  const ExtensionSymbols symbols = folder ? extension_symbols(folder) : ExtensionSymbols{};
  if (!symbols.recording_switches.empty()) {
    watch_->add("global_state_tamper", "error",
                {{"when", "probe"},
                 {"changes", {{{"what", "op recording"}, {"name", "its extension imports a switch of it"}}}},
                 {"imports", symbols.recording_switches}});
  }
  if (!symbols.library_calls.empty()) probe["library_calls"] = symbols.library_calls;
  if (probe.contains("trace") && probe["trace"].contains("kernels")) {
    for (nlohmann::json& kernel : probe["trace"]["kernels"]) {
      const bool replayed = kernel.value("graph", false) && !kernel.value("triton", false);
      if (!kernel["own"].get<bool>() || (symbols.library_calls.empty() && !replayed) ||
          defines_kernel(symbols.defined, kernel["name"].get<std::string>())) {
        continue;
      }
      kernel["own"] = false;
      kernel["launched_in"] = replayed ? "a CUDA graph replay; its code defines no such kernel"
                                       : "a library call of the candidate's extension";
    }
  }

  // 5. The same buffers with another draw's content: the parent judges the output against that
  // draw's reference (a result cached by address, or replayed, does not follow).
  // The copies the earlier steps kept are freed first: a GiB-sized problem needs the room.
  if (!refresh.is_null()) {
    pristine.clear();
    clean.clear();
    {
      const py::list fresh = draw(refresh);
      const std::vector<at::Tensor> targets = tensors_of(inputs), sources = tensors_of(fresh);
      for (size_t i = 0; i < targets.size() && i < sources.size(); ++i) targets[i].copy_(sources[i]);
    }
    const Forward refreshed = forward(mode, inputs, "probe: call on refreshed inputs");
    if (refreshed.bad_output) {
      probe["refreshed_bad_output"] = *refreshed.bad_output;
    } else {
      *refreshed_outputs = refreshed.outputs;
    }
  }
  return probe;
}

nlohmann::json Session::findings() {
  if (!watch_) return nlohmann::json::array();
  measure::synchronize(device_);
  watch_->check_state("end of the evaluation");
  // Native threads that work where no call is under way are the CPU ledger's to find; an idle one
  // (an OpenMP team of the candidate's own) is honest.
  watch_->check_threads(py::none(), "end of the evaluation");
  if (ops_ && !ops_->intact()) {
    watch_->add(
        "global_state_tamper", "error",
        {{"when", "end of the evaluation"},
         {"changes",
          {{{"what", "op recording"}, {"name", "torch's RecordFunction switched off or kbv's callback removed"}}}}});
  }
  return watch_->findings();
}

nlohmann::json Session::observed_ops() const {
  if (!ops_ || !traced_ops_ || timed_ops_.empty()) return nlohmann::json::object();
  return {{"timed", timed_ops_}, {"traced", *traced_ops_}};
}

}  // namespace kbv::worker
