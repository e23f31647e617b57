#include "kbv/worker/session.h"

#include <sched.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include <ATen/ATen.h>
#include <torch/csrc/utils/pybind.h>

#include "kbv/common/syscall.h"
#include "kbv/hacks/integrity.h"
#include "kbv/inputs/families.h"
#include "kbv/python/harness.h"
#include "kbv/sandbox/enter.h"
#include "kbv/worker/call_inputs.h"
#include "kbv/worker/call_span.h"
#include "kbv/worker/kernel_warmup.h"
#include "kbv/worker/python_call.h"

namespace py = pybind11;

namespace kbv::worker {
namespace {

protocol::Tf32 flags_of(const nlohmann::json& protocol, const std::string& mode) {
  const nlohmann::json& f = protocol.at(mode + "_tf32");
  return {f.at("cublas").get<bool>(), f.at("cudnn").get<bool>()};
}

}  // namespace

ipc::FailureKind classify_candidate_error(const std::string& message) {
  // A CUDA fault (illegal address, launch failure) is sticky: the context is lost, as after a
  // segfault on the host, so it is filed with crashes.
  return message.find("CUDA error") != std::string::npos ? ipc::FailureKind::crash : ipc::FailureKind::runtime_error;
}

nlohmann::json Session::select_device(const std::string& name) {
  nlohmann::json facts = nlohmann::json::object();
  if (name == "cpu") return facts;
  if (name != "cuda") throw ipc::Failure(ipc::FailureKind::internal, "unknown device '" + name + "'");
  py::module_ cuda = py::module_::import("torch").attr("cuda");
  if (!cuda.attr("is_available")().cast<bool>()) {
    throw ipc::Failure(ipc::FailureKind::no_device,
                       "--device cuda: no CUDA device is visible here (torch.cuda.is_available() is False)");
  }
  device_ = c10::Device(c10::kCUDA, 0);
  facts["gpu"] = cuda.attr("get_device_name")(0).cast<std::string>();
  facts["cuda_driver_api"] = measure::cuda_driver_version();
  // Candidates compile for this device only (torch would otherwise build for every arch it knows).
  py::object environ = py::module_::import("os").attr("environ");
  if (!environ.contains("TORCH_CUDA_ARCH_LIST")) {
    auto capability = cuda.attr("get_device_capability")(0).cast<std::pair<int, int>>();
    environ["TORCH_CUDA_ARCH_LIST"] = std::to_string(capability.first) + "." + std::to_string(capability.second);
  }
  return facts;
}

void Session::start_device(const std::string& name, const nlohmann::json& protocol) {
  select_device(name);
  if (device_.is_cuda())
    (void)at::empty({1}, at::TensorOptions().device(device_));  // the context, with its first allocation
  if (!protocol.is_null()) warm_kernels(device_, protocol);
  measure::synchronize(device_);
}

namespace {

// The module from harness.load_candidate's (module, error), or its error as a Failure.
py::object loaded_candidate(const py::tuple& loaded) {
  if (!loaded[1].is_none()) {
    py::tuple error = loaded[1];
    throw ipc::Failure(ipc::failure_kind(error[0].cast<std::string>()), error[1].cast<std::string>());
  }
  return loaded[0];
}

}  // namespace

py::object Session::import_candidate(const std::string& path) {
  return loaded_candidate(python::harness().attr("load_candidate")(path, "kbv_candidate"));
}

nlohmann::json Session::compile(const ipc::commands::Compile& command) {
  // SCHED_IDLE runs only where a core has nothing else to run; the compilers the build starts
  // inherit it (sched(7)). Lowering one's own priority needs no privilege.
  if (command.background) {
    const sched_param none{};
    KBV_SYSCALL(sched_setscheduler(0, SCHED_IDLE, &none));
  }
  select_device(command.device);
  const std::string& path = command.candidate;
  candidate_ = import_candidate(path);
  try {
    return to_json(python::harness().attr("build_ahead")(candidate_, path));
  } catch (py::error_already_set& error) {  // the import built what it builds; say why no more
    return {{"error", error.what()}};
  }
}

nlohmann::json Session::load(const ipc::commands::Load& command) {
  py::module_& harness = python::harness();
  protocol_ = command.protocol;
  nlohmann::json facts = {{"versions", harness.attr("versions")().cast<std::map<std::string, std::string>>()}};
  if (const double entered = sandbox::setup_seconds(); entered >= 0) facts["sandbox_setup_seconds"] = entered;
  // Each step's seconds, where the load's time goes (the record's import_steps_seconds).
  auto last = std::chrono::steady_clock::now();
  const auto step = [&](const char* name) {
    const auto now = std::chrono::steady_clock::now();
    facts["steps_seconds"][name] = std::chrono::duration<double>(now - last).count();
    last = now;
  };

  facts.update(select_device(command.device));
  protocol::Timing timing;
  timing.device_sync = protocol_.at("timing").at("device_sync");
  timing.l2_flush_bytes = protocol_.at("timing").at("l2_flush_bytes");
  timing.launch_cover_seconds = protocol_.at("timing").at("launch_cover_seconds");
  timing.launch_cover_max_seconds = protocol_.at("timing").at("launch_cover_max_seconds");
  timer_ = measure::make_timer(device_, timing);
  memory_ = measure::make_memory_meter(device_);
  step("device_and_timer");

  const std::string& problem_path = command.problem;
  problem_ = guarded(ipc::FailureKind::problem_error, "cannot import the problem " + problem_path,
                     [&] { return harness.attr("load_module")(problem_path, "kbv_problem"); });
  for (const char* name : {"Model", "get_inputs", "get_init_inputs"}) {
    if (!py::hasattr(problem_, name)) {
      throw ipc::Failure(ipc::FailureKind::problem_error,
                         "the problem " + problem_path + " defines no `" + name +
                             "` (a KernelBench problem has Model, get_inputs and get_init_inputs)");
    }
  }
  const py::object init = guarded(ipc::FailureKind::problem_error, "get_init_inputs() of " + problem_path + " raised",
                                  [&] { return py::list(problem_.attr("get_init_inputs")()); });
  const std::uint64_t seed = protocol_.at("init_seed");
  const std::int64_t before = memory_->allocated();
  step("problem");
  if (role_ == Role::candidate && !command.draw.is_null()) {
    // What this process draws for a seed before any of the candidate's code ran.
    facts["draw_checksum"] = input_checksum(draw(command.draw));
    step("draw_before_import");
  }

  // Before the candidate's import: nothing it runs sees a call observed differently from another.
  // The candidate's worker only: the callback costs each op a little, and a baseline runs more ops
  // than a fused candidate, so carried by both it would favour the candidate.
  if (role_ == Role::candidate && protocol_.at("detection").at("enabled").get<bool>()) ops_.emplace();
  if (role_ == Role::reference) {
    model_ = guarded(ipc::FailureKind::problem_error, "constructing Model(*get_init_inputs()) raised",
                     [&] { return harness.attr("build")(problem_.attr("Model"), init, seed); });
    step("construct");
  } else {
    const std::string& candidate_path = command.candidate;
    if (protocol_.at("detection").at("enabled").get<bool>()) {
      watch_.emplace(problem_path, candidate_path);
      candidate_ = loaded_candidate(watch_->import_candidate());
    } else {
      candidate_ = import_candidate(candidate_path);
    }
    if (!py::hasattr(candidate_, "ModelNew")) {
      throw ipc::Failure(ipc::FailureKind::runtime_error,
                         "the candidate " + candidate_path + " defines no `ModelNew` class");
    }
    step("candidate");
    model_ = guarded(ipc::FailureKind::runtime_error,
                     "constructing ModelNew(*get_init_inputs()) raised (does its constructor match Model's?)", [&] {
                       const py::tuple args = py::make_tuple(candidate_.attr("ModelNew"), init, seed);
                       return watch_ ? watch_->construct(harness.attr("build"), args) : harness.attr("build")(*args);
                     });
    step("construct");
    if (protocol_.at("copy_state").get<bool>()) {
      const std::int64_t without_reference = memory_->allocated();
      py::object reference = guarded(ipc::FailureKind::problem_error, "constructing Model(*get_init_inputs()) raised",
                                     [&] { return harness.attr("build")(problem_.attr("Model"), init, seed); });
      facts["copied_state"] = harness.attr("copy_state")(model_, reference).cast<std::vector<std::string>>();
      reference = py::none();
      // Its memory goes with its last reference unless a cycle holds it: only then a full
      // collection, which costs 0.14 s on the CPU machine (more with a larger heap). Built on the
      // host, it never counts in a device's footprint.
      if (memory_->allocated() > without_reference) py::module_::import("gc").attr("collect")();
      step("copy_state");
    }
  }
  if (py::hasattr(model_, "to")) {
    model_ = guarded(role_ == Role::candidate ? ipc::FailureKind::runtime_error : ipc::FailureKind::problem_error,
                     "moving the module to the device raised", [&] { return model_.attr("to")(command.device); });
  }
  measure::synchronize(device_);
  step("to_device");
  facts["footprint_bytes"] = memory_->allocated() - before;
  if (watch_) {
    watch_->check_state("import and construction");
    watch_->watch_steps();
  }
  step("watch");
  return facts;
}

py::list Session::draw_standard(std::uint64_t seed) {
  if (watch_) watch_->check_routes("kbv's draw of the inputs");
  py::list drawn = guarded(ipc::FailureKind::problem_error, "get_inputs() raised", [&] {
    return py::list(python::draws().attr("draw_standard")(problem_.attr("get_inputs"), seed, device_.str()));
  });
  // The candidate's code shares this process: what the generators say after a draw must not tell
  // its seed (PROTOCOL.md, "What a candidate can tell about a call").
  if (role_ == Role::candidate) python::draws().attr("forget_seeds")();
  return drawn;
}

py::list Session::draw(const nlohmann::json& spec) {
  const auto family = inputs::family_from_name(spec.at("family").get<std::string>());
  const std::uint64_t seed = spec.at("seed");
  py::list drawn = draw_standard(seed);
  for (size_t i = 0; i < drawn.size(); ++i) {
    if (!is_tensor(drawn[i])) continue;
    const at::Tensor like = py::cast<at::Tensor>(drawn[i]);
    drawn[i] = py::cast(inputs::redraw(like, family, spec.at("params"), seed + 1 + i));
  }
  return drawn;
}

nlohmann::json Session::apply_flags(const std::string& mode) {
  const protocol::Tf32 wanted = flags_of(protocol_, mode);
  auto& context = at::globalContext();
  context.setAllowTF32CuBLAS(wanted.cublas);
  context.setAllowTF32CuDNN(wanted.cudnn);
  return {{"cublas", context.allowTF32CuBLAS()}, {"cudnn", context.allowTF32CuDNN()}};
}

Forward Session::forward(const std::string& mode, const py::list& inputs, const std::string& when) {
  const CallSpan span(ledger_);
  apply_flags(mode);
  if (!watch_) return collect(call_forward(inputs));
  const nlohmann::json flags = to_json(python::monitor().attr("tf32_flags")());
  const std::vector<at::Tensor> tensors = tensors_of(inputs);
  const std::vector<at::Tensor> before = hacks::snapshot(tensors);
  Forward forward = collect(call_forward(inputs));
  watch_->after_call(tensors, before, forward.outputs, flags, when);
  return forward;
}

py::object Session::call_forward(const py::list& inputs) {
  const CallSpan gpu_span(gpu_ledger_);
  const StepKernels::ModelCall model_call = watch_ ? watch_->model_call() : StepKernels::ModelCall(nullptr);
  const bool candidate = role_ == Role::candidate;
  return guarded(candidate ? ipc::FailureKind::runtime_error : ipc::FailureKind::reference_error,
                 candidate ? "ModelNew.forward raised" : "Model.forward raised",
                 [&] { return python::harness().attr("forward")(model_, inputs); });
}

Forward Session::collect(const py::object& result) {
  Forward forward;
  py::tuple split = python::harness().attr("split_outputs")(result);
  if (split[0].is_none()) {
    forward.bad_output = split[1].cast<std::string>();
    return forward;
  }
  for (const py::handle item : py::list(split[0])) forward.outputs.push_back(py::cast<at::Tensor>(item));
  return forward;
}

std::string Session::memory_in_words() {
  if (!memory_) return "";
  const auto gib = [](std::int64_t bytes) {
    char text[32];
    std::snprintf(text, sizeof text, "%.2f GiB",
                  static_cast<double>(bytes) / static_cast<double>(std::int64_t{1} << 30));
    return std::string(text);
  };
  try {
    std::string words = " [memory then: this process " + gib(memory_->allocated()) + " allocated by torch";
    if (const std::optional<std::int64_t> used = memory_->driver_used()) {
      words += "; the device " + gib(*used) + " in use by all processes of " + gib(memory_->capacity());
    }
    return words + "]";
  } catch (const std::exception&) {
    return "";  // a device left unusable by the failure
  }
}

}  // namespace kbv::worker
