#include "kbv/worker/candidate_watch.h"

#include <signal.h>
#include <string.h>

#include <torch/csrc/autograd/python_variable.h>

#include "kbv/hacks/integrity.h"
#include "kbv/python/harness.h"

namespace py = pybind11;

namespace kbv::worker {

nlohmann::json to_json(const py::handle& value) {
  py::object dumps = py::module_::import("json").attr("dumps");
  return nlohmann::json::parse(
      dumps(value, py::arg("default") = py::module_::import("builtins").attr("str")).cast<std::string>());
}

std::vector<std::uintptr_t> signal_handlers() {
  std::vector<std::uintptr_t> handlers(NSIG, 0);
  for (int signal = 1; signal < NSIG; ++signal) {
    struct sigaction current {};
    if (sigaction(signal, nullptr, &current) == 0) {
      handlers[signal] = (current.sa_flags & SA_SIGINFO) ? reinterpret_cast<std::uintptr_t>(current.sa_sigaction)
                                                         : reinterpret_cast<std::uintptr_t>(current.sa_handler);
    }
  }
  return handlers;
}

namespace {

std::string signal_name(int signal) {
  const char* abbreviation = sigabbrev_np(signal);
  return abbreviation ? std::string("SIG") + abbreviation : "signal " + std::to_string(signal);
}

}  // namespace

CandidateWatch::CandidateWatch(std::string problem_path, std::string candidate_path)
    : problem_path_(std::move(problem_path)), candidate_path_(std::move(candidate_path)) {}

void CandidateWatch::add(const std::string& id, const std::string& severity, nlohmann::json evidence) {
  // The first occurrence is evidence enough: the same fact seen at a later call is not repeated.
  const auto fact = [](nlohmann::json e) {
    e.erase("when");
    e.erase("source");
    return e;
  };
  for (const nlohmann::json& known : findings_) {
    if (known["id"] == id && fact(known["evidence"]) == fact(evidence)) return;
  }
  evidence["source"] = "runtime";
  findings_.push_back({{"id", id}, {"severity", severity}, {"evidence", std::move(evidence)}});
}

py::tuple CandidateWatch::import_candidate() {
  py::module_& monitor = python::monitor();
  monitor.attr("arm_tripwires")();
  before_import_ = monitor.attr("snapshot")();
  routes_.emplace();
  step_kernels_.emplace();
  handlers_before_ = signal_handlers();
  py::tuple watched = monitor.attr("import_watched")(python::harness().attr("load_candidate"), candidate_path_,
                                                     "kbv_candidate", problem_path_);
  py::tuple loaded = watched[0];
  const nlohmann::json facts = to_json(watched[1]);
  if (!facts.at("failed_builds").empty() && loaded[1].is_none()) {
    add("exception_fallback", "error",
        {{"when", "import"},
         {"why", "a kernel build raised and the import went on"},
         {"failed_builds", facts["failed_builds"]}});
  }
  if (!facts.at("problem_calls").empty()) {
    add("reference_reuse", "error", {{"when", "import"}, {"problem_code_run", facts["problem_calls"]}});
  }
  return loaded;
}

py::object CandidateWatch::construct(const py::object& build, const py::tuple& args) {
  py::object watch = python::monitor().attr("CallWatch")(problem_path_, py::none(), py::none());
  py::object built = within(watch, [&] { return build(*args); });
  const nlohmann::json calls = to_json(watch.attr("problem_calls"));
  if (!calls.empty()) add("reference_reuse", "error", {{"when", "ModelNew construction"}, {"problem_code_run", calls}});
  return built;
}

void CandidateWatch::check_state(const std::string& when) {
  py::module_& monitor = python::monitor();
  nlohmann::json changes = to_json(monitor.attr("state_changes")(before_import_, monitor.attr("snapshot")()));
  const std::vector<std::uintptr_t> handlers = signal_handlers();
  for (size_t signal = 1; signal < handlers.size() && signal < handlers_before_.size(); ++signal) {
    if (handlers[signal] != handlers_before_[signal]) {
      changes.push_back({{"what", "signal handler"}, {"name", signal_name(static_cast<int>(signal))}});
    }
  }
  if (!changes.empty()) add("global_state_tamper", "error", {{"when", when}, {"changes", changes}});
  check_routes(when);
}

void CandidateWatch::check_routes(const std::string& when) {
  if (!routes_) return;
  if (nlohmann::json changes = routes_->restore(); !changes.empty()) {
    add("global_state_tamper", "error", {{"when", when}, {"changes", std::move(changes)}});
  }
  const std::vector<StepKernels::Seen> seen = step_kernels_->take();
  if (seen.empty()) return;
  py::list listings;
  for (const StepKernels::Seen& s : seen) listings.append(py::make_tuple(s.op, s.listing));
  nlohmann::json changes = to_json(python::monitor().attr("step_kernel_changes")(before_import_, listings));
  if (!changes.empty()) add("global_state_tamper", "error", {{"when", when}, {"changes", std::move(changes)}});
}

void CandidateWatch::watch_steps() {
  if (step_kernels_) step_kernels_->arm();
}

void CandidateWatch::check_threads(const py::object& native_before, const std::string& when) {
  py::module_& monitor = python::monitor();
  const nlohmann::json python_threads = to_json(monitor.attr("new_threads")(before_import_));
  if (!python_threads.empty()) add("background_thread", "error", {{"when", when}, {"python_threads", python_threads}});
  if (native_before.is_none()) return;
  py::object native_after = monitor.attr("native_threads")();
  const nlohmann::json native = to_json(monitor.attr("thread_names")(native_after.attr("difference")(native_before)));
  if (!native.empty()) add("background_thread", "error", {{"when", when}, {"native_threads_started", native}});
}

nlohmann::json CandidateWatch::threads_started_since_import() const {
  py::module_& monitor = python::monitor();
  return to_json(monitor.attr("thread_names")(
      monitor.attr("native_threads")().attr("difference")(before_import_["native_threads"])));
}

void CandidateWatch::after_call(const std::vector<at::Tensor>& inputs,
                                const std::optional<std::vector<at::Tensor>>& before,
                                const std::vector<at::Tensor>& outputs, const nlohmann::json& flags,
                                const std::string& when) {
  check_routes(when);
  if (before) {
    for (const hacks::Mutation& m : hacks::mutations(*before, inputs)) {
      add("input_mutation", "error",
          {{"when", when}, {"input", m.index}, {"elements_changed", m.changed}, {"elements", m.elements}});
    }
  }
  for (const auto& [output, input] : hacks::overlaps(outputs, inputs)) {
    add("output_aliases_input", "error", {{"when", when}, {"output", output}, {"input", input}});
  }
  if (!foreign_noted_) {
    if (const std::vector<size_t> foreign = hacks::foreign_outputs(outputs); !foreign.empty()) {
      foreign_noted_ = true;  // once: a timed batch would repeat it on every call
      add("foreign_output", "error",
          {{"when", when},
           {"outputs", foreign},
           {"why",
            "its memory is not from the allocator kbv watches (from_blob, a mapping of its own, managed or host-mapped "
            "memory)"}});
    }
  }
  py::list wrapped;  // the outputs' own Python objects (torch keeps one per tensor)
  for (const at::Tensor& output : outputs) wrapped.append(py::reinterpret_steal<py::object>(THPVariable_Wrap(output)));
  for (nlohmann::json& hook : to_json(python::monitor().attr("release_hooks")(wrapped))) {
    hook["when"] = when;
    add("release_hook", "error", std::move(hook));
  }
  if (!flags.is_null()) {
    const nlohmann::json now = to_json(python::monitor().attr("tf32_flags")());
    if (now != flags)
      add("global_state_tamper", "error", {{"when", when}, {"tf32_set", flags}, {"tf32_after_call", now}});
  }
}

}  // namespace kbv::worker
