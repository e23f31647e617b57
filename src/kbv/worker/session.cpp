#include "kbv/worker/session.h"

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <torch/csrc/autograd/python_variable.h>
#include <torch/csrc/utils/pybind.h>

#include "kbv/check/comparison.h"
#include "kbv/common/syscall.h"
#include "kbv/hacks/integrity.h"
#include "kbv/hacks/poison.h"
#include "kbv/inputs/families.h"
#include "kbv/measure/statistics.h"
#include "kbv/python/harness.h"
#include "kbv/sandbox/enter.h"
#include "kbv/worker/extension_symbols.h"
#include "kbv/worker/kernel_warmup.h"

namespace py = pybind11;

namespace kbv::worker {

bool is_tensor(const py::handle& object) { return THPVariable_Check(object.ptr()); }

namespace {

protocol::Tf32 flags_of(const nlohmann::json& protocol, const std::string& mode) {
  const nlohmann::json& f = protocol.at(mode + "_tf32");
  return {f.at("cublas").get<bool>(), f.at("cudnn").get<bool>()};
}

// Calls into Python, turning a Python exception into a Failure of `kind` with `what` before it.
template <typename F>
auto guarded(FailureKind kind, const std::string& what, F&& call) {
  try {
    return call();
  } catch (py::error_already_set& error) {
    throw Failure(kind, what + ":\n" + error.what());
  }
}

// Reads one byte of every page a CPU output's elements can occupy. Inside the timed region, so an
// output whose content is produced when first read (pages protected and filled by a fault handler,
// any lazy mapping) is produced, and timed, there -- not later in kbv's checks. Costs one load per
// 4 KiB on either side of the comparison.
void read_every_page(const at::Tensor& t) {
  if (!t.defined() || !t.is_cpu() || t.layout() != at::kStrided || t.numel() == 0) return;
  std::int64_t last = 0;  // the furthest element from the first, in elements (strides are >= 0)
  for (std::int64_t d = 0; d < t.dim(); ++d) last += (t.size(d) - 1) * t.stride(d);
  const auto* first = static_cast<const volatile char*>(t.data_ptr());
  const std::int64_t bytes = (last + 1) * static_cast<std::int64_t>(t.element_size());
  constexpr std::int64_t kPage = 4096;
  // A discarded volatile read is still made ([expr.context]): nothing here can be optimized away.
  for (std::int64_t offset = 0; offset < bytes; offset += kPage) (void)first[offset];
  (void)first[bytes - 1];
}

// Bytes of the outputs' storages (each once) beyond what the call left allocated: an output in a
// buffer the module holds (allocated in __init__ or on an earlier call) counts, as the memory it
// takes to hand out that output, where a freshly allocated one is already in the call's peak.
std::int64_t held_output_bytes(const std::vector<at::Tensor>& outputs, std::int64_t left_allocated) {
  std::set<const void*> seen;
  std::int64_t bytes = 0;
  for (const at::Tensor& t : outputs) {
    if (!t.defined() || !t.has_storage() || !seen.insert(t.storage().data()).second) continue;
    bytes += static_cast<std::int64_t>(t.storage().nbytes());
  }
  return std::max<std::int64_t>(0, bytes - std::max<std::int64_t>(0, left_allocated));
}

// The same inputs in new tensor objects: same storage, offset, sizes and strides, not views (so
// nothing about the objects -- identity, _base, _is_view -- tells a timed call from a checked one).
py::list fresh_objects(const py::list& inputs) {
  py::list fresh;
  for (const py::handle item : inputs) {
    if (!is_tensor(item)) {
      fresh.append(item);
      continue;
    }
    const at::Tensor t = py::cast<at::Tensor>(item);
    fresh.append(at::empty({0}, t.options()).set_(t.storage(), t.storage_offset(), t.sizes(), t.strides()));
  }
  return fresh;
}

void read_every_page(const py::handle& result) {
  if (is_tensor(result)) {
    read_every_page(py::cast<at::Tensor>(result));
  } else if (py::isinstance<py::tuple>(result) || py::isinstance<py::list>(result)) {
    for (const py::handle item : result) read_every_page(item);
  }
}

}  // namespace

FailureKind classify_candidate_error(const std::string& message) {
  // A CUDA fault (illegal address, launch failure) is sticky: the context is lost, as after a
  // segfault on the host, so it is filed with crashes.
  return message.find("CUDA error") != std::string::npos ? FailureKind::crash : FailureKind::runtime_error;
}

nlohmann::json Session::select_device(const std::string& name) {
  nlohmann::json facts = nlohmann::json::object();
  if (name == "cpu") return facts;
  if (name != "cuda") throw Failure(FailureKind::internal, "unknown device '" + name + "'");
  py::module_ cuda = py::module_::import("torch").attr("cuda");
  if (!cuda.attr("is_available")().cast<bool>()) {
    throw Failure(FailureKind::no_device, "--device cuda: no CUDA device is visible here (torch.cuda.is_available() is False)");
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
  if (device_.is_cuda()) (void)at::empty({1}, at::TensorOptions().device(device_));  // the context, with its first allocation
  if (!protocol.is_null()) warm_kernels(device_, protocol);
  measure::synchronize(device_);
}

namespace {

// The module from harness.load_candidate's (module, error), or its error as a Failure.
py::object loaded_candidate(const py::tuple& loaded) {
  if (!loaded[1].is_none()) {
    py::tuple error = loaded[1];
    throw Failure(failure_kind(error[0].cast<std::string>()), error[1].cast<std::string>());
  }
  return loaded[0];
}

}  // namespace

py::object Session::import_candidate(const std::string& path) {
  return loaded_candidate(python::harness().attr("load_candidate")(path, "kbv_candidate"));
}

nlohmann::json Session::compile(const commands::Compile& command) {
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

nlohmann::json Session::load(const commands::Load& command) {
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
  timer_ = measure::make_timer(device_, timing);
  memory_ = measure::make_memory_meter(device_);
  step("device_and_timer");

  const std::string& problem_path = command.problem;
  problem_ = guarded(FailureKind::problem_error, "cannot import the problem " + problem_path,
                     [&] { return harness.attr("load_module")(problem_path, "kbv_problem"); });
  for (const char* name : {"Model", "get_inputs", "get_init_inputs"}) {
    if (!py::hasattr(problem_, name)) {
      throw Failure(FailureKind::problem_error, "the problem " + problem_path + " defines no `" + name +
                                         "` (a KernelBench problem has Model, get_inputs and get_init_inputs)");
    }
  }
  const py::object init = guarded(FailureKind::problem_error, "get_init_inputs() of " + problem_path + " raised",
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
    model_ = guarded(FailureKind::problem_error, "constructing Model(*get_init_inputs()) raised",
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
      throw Failure(FailureKind::runtime_error, "the candidate " + candidate_path + " defines no `ModelNew` class");
    }
    step("candidate");
    model_ = guarded(FailureKind::runtime_error, "constructing ModelNew(*get_init_inputs()) raised (does its constructor match Model's?)", [&] {
      const py::tuple args = py::make_tuple(candidate_.attr("ModelNew"), init, seed);
      return watch_ ? watch_->construct(harness.attr("build"), args) : harness.attr("build")(*args);
    });
    step("construct");
    if (protocol_.at("copy_state").get<bool>()) {
      const std::int64_t without_reference = memory_->allocated();
      py::object reference = guarded(FailureKind::problem_error, "constructing Model(*get_init_inputs()) raised",
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
    model_ = guarded(role_ == Role::candidate ? FailureKind::runtime_error : FailureKind::problem_error, "moving the module to the device raised",
                     [&] { return model_.attr("to")(command.device); });
  }
  measure::synchronize(device_);
  step("to_device");
  facts["footprint_bytes"] = memory_->allocated() - before;
  if (watch_) watch_->check_state("import and construction");
  step("watch");
  return facts;
}

py::list Session::draw_standard(std::uint64_t seed) const {
  py::list drawn = guarded(FailureKind::problem_error, "get_inputs() raised", [&] {
    return py::list(python::draws().attr("draw_standard")(problem_.attr("get_inputs"), seed, device_.str()));
  });
  // The candidate's code shares this process: what the generators say after a draw must not tell
  // its seed (PROTOCOL.md, "What a candidate can tell about a call").
  if (role_ == Role::candidate) python::draws().attr("forget_seeds")();
  return drawn;
}

py::list Session::draw(const nlohmann::json& spec) const {
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

namespace {

// A call of the model as a ledger's span (CpuLedger: with kbv's checks around it, other threads'
// time in it is the call's; GpuLedger: the model's own code alone, what it launches is the call's).
// Left on every way out: a call that raises ends the evaluation.
template <typename Ledger>
class CallSpan {
 public:
  explicit CallSpan(Ledger& ledger) : ledger_(ledger) { ledger_.enter_call(); }
  ~CallSpan() { ledger_.leave_call(); }
  CallSpan(const CallSpan&) = delete;
  CallSpan& operator=(const CallSpan&) = delete;

 private:
  Ledger& ledger_;
};

}  // namespace

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
  const bool candidate = role_ == Role::candidate;
  return guarded(candidate ? FailureKind::runtime_error : FailureKind::reference_error,
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

void Session::fill_pool(const std::vector<std::uint64_t>& seeds) {
  pool_.clear();
  last_.clear();
  for (const std::uint64_t seed : seeds) {
    pool_.push_back(draw_standard(seed));
    last_.emplace_back();
  }
  measure::synchronize(device_);
}

void Session::fill_set(size_t index, std::uint64_t seed) {
  if (index >= pool_.size()) throw Failure(FailureKind::internal, "no timing input set " + std::to_string(index));
  const py::list fresh = draw_standard(seed);
  // Same buffers, new values: a cache keyed by pointer returns stale results.
  py::list& set = pool_[index];
  for (size_t j = 0; j < fresh.size(); ++j) {
    if (is_tensor(set[j])) {
      py::cast<at::Tensor>(set[j]).copy_(py::cast<at::Tensor>(fresh[j]));
    } else {
      set[j] = fresh[j];
    }
  }
  measure::synchronize(device_);
}

std::string Session::memory_in_words() {
  if (!memory_) return "";
  const auto gib = [](std::int64_t bytes) {
    char text[32];
    std::snprintf(text, sizeof text, "%.2f GiB", static_cast<double>(bytes) / static_cast<double>(std::int64_t{1} << 30));
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

void Session::begin_timing() {
  ledger_.open();
  if (device_.is_cuda() && protocol_.at("detection").at("enabled").get<bool>()) {
    measure::synchronize(device_);
    gpu_ledger_.open(protocol_.at("timing").at("launch_cover_seconds").get<double>() > 0);
  }
}

nlohmann::json Session::cpu_totals() {
  nlohmann::json totals = ledger_.totals();
  if (watch_ && totals.is_object()) totals["threads_started_since_import"] = watch_->threads_started_since_import();
  return totals;
}

void Session::drop_pool() {
  pool_.clear();
  last_.clear();
}

void Session::warm_up(int calls, double seconds, double max_seconds, const std::string& mode) {
  const auto begun = std::chrono::steady_clock::now();
  const auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - begun).count(); };
  for (int i = 0; i < calls; ++i) {
    const size_t set = static_cast<size_t>(i) % pool_.size();
    last_[set] = forward(mode, pool_[set], "warm-up call");
  }
  measure::synchronize(device_);
  // Windows of at least kWindowCalls calls and kWindowSeconds each; settled when a window's
  // median is within kSettled of the one before.
  constexpr size_t kWindowCalls = 10;
  constexpr double kWindowSeconds = 0.02, kSettled = 0.01;
  std::vector<double> window;
  double window_begun = elapsed(), previous = 0;
  for (size_t i = 0; elapsed() < max_seconds; ++i) {
    window.push_back(timed_call(i % pool_.size(), mode).seconds);
    if (window.size() < kWindowCalls || elapsed() - window_begun < kWindowSeconds) continue;
    const double median = measure::median(window);
    if (elapsed() >= seconds && previous > 0 && std::abs(median - previous) <= kSettled * previous) break;
    previous = median;
    window.clear();
    window_begun = elapsed();
  }
}

nlohmann::json Session::clock() const { return timer_->describe(); }

measure::TimedCall Session::timed_call(size_t set, const std::string& mode) {
  if (set >= pool_.size()) throw Failure(FailureKind::internal, "no timing input set " + std::to_string(set));
  const CallSpan span(ledger_);
  apply_flags(mode);
  py::object result;
  const py::list inputs = fresh_objects(pool_[set]);
  timer_->flush_cache();
  const std::string range = "kbv timed " + mode;
  const bool host_outputs = device_.is_cpu();
  if (ops_) ops_->start();
  const measure::TimedCall timed = timer_->time(
      [&] {
        result = call_forward(inputs);
        if (host_outputs) read_every_page(result);
      },
      range.c_str());
  gpu_ledger_.timed(timed.seconds);
  if (ops_) timed_ops_.merge(ops_->stop());
  last_[set] = collect(result);  // outside the timed region
  if (watch_) watch_->after_call(tensors_of(pool_[set]), std::nullopt, last_[set].outputs, nullptr, "timed call");
  return timed;
}

const std::vector<at::Tensor>& Session::last_outputs(size_t set) const {
  if (set >= last_.size()) throw Failure(FailureKind::internal, "no timed output for set " + std::to_string(set));
  if (last_[set].bad_output) throw Failure(FailureKind::incorrect, *last_[set].bad_output);
  return last_[set].outputs;
}

nlohmann::json Session::measure_memory(const std::string& mode) {
  measure::synchronize(device_);
  memory_->reset_peak();
  const std::int64_t before = memory_->allocated();
  const auto driver_before = memory_->driver_used();
  std::int64_t held = 0;
  {
    apply_flags(mode);  // no watch here: its input clones would count in the peak
    Forward result = collect(call_forward(pool_.at(0)));
    measure::synchronize(device_);
    held = held_output_bytes(result.outputs, memory_->allocated() - before);
  }
  const std::int64_t transient = memory_->peak() - before;
  nlohmann::json memory = {{"peak_bytes", transient + held}, {"transient_peak_bytes", transient}, {"held_output_bytes", held}};
  if (driver_before) memory["driver_growth_bytes"] = *memory_->driver_used() - *driver_before;
  return memory;
}

double Session::copy_seconds(std::int64_t bytes) {
  constexpr int kWarmUp = 3, kSamples = 21;
  const auto options = at::TensorOptions().dtype(at::kByte).device(device_);
  const at::Tensor source = at::full({std::max<std::int64_t>(bytes, 1)}, 1, options);
  at::Tensor destination = at::empty_like(source);
  // On the CPU a plain memcpy on this thread: torch's copy is parallel, and its threads' start-up
  // (on a loaded machine, milliseconds) would set the floor far above what one thread can do.
  const auto copy = [&] {
    if (device_.is_cuda()) {
      destination.copy_(source);
    } else {
      std::memcpy(destination.data_ptr(), source.data_ptr(), source.nbytes());
    }
  };
  for (int i = 0; i < kWarmUp; ++i) copy();
  std::vector<double> samples;
  for (int i = 0; i < kSamples; ++i) {
    timer_->flush_cache();
    samples.push_back(timer_->time(copy, "kbv floor copy").seconds);
  }
  return measure::median(samples);
}

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
    const py::tuple traced = python::monitor().attr("trace_call")(bound_forward(model_, inputs), device_.str(), py::none(), py::none());
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
    traced = guarded(FailureKind::runtime_error, "ModelNew.forward raised under the profiler", [&] {
      return python::monitor().attr("trace_call")(bound_forward(model_, inputs), device_.str(), extensions_dir(),
                                                  watch_->problem_path());
    });
  } catch (const Failure&) {
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
  if (!watch_) throw Failure(FailureKind::internal, "probe: the candidate is not watched (detection is off)");
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
  py::object watch = monitor.attr("CallWatch")(watch_->problem_path(), watch_->candidate_path(), extensions_dir(), false, true);
  restore_inputs();
  {
    const Forward second = within(watch, [&] { return forward(mode, inputs, "probe: repeated call"); });
    probe["repeat_error"] = check::scaled_error(second.outputs, clean);
    probe["output_reuse"] = !hacks::overlaps(second.outputs, first.outputs).empty();
  }
  first = Forward{};  // both calls' outputs freed before the poisoned call
  const nlohmann::json raised = to_json(watch.attr("raised")), problem_calls = to_json(watch.attr("problem_calls"));
  if (!raised.empty()) watch_->add("exception_fallback", "error", {{"when", "forward"}, {"raised_and_caught", raised}});
  if (!problem_calls.empty()) watch_->add("reference_reuse", "error", {{"when", "forward"}, {"problem_code_run", problem_calls}});

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
  } catch (const Failure& failure) {
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
                {{"when", "probe"}, {"changes", {{{"what", "op recording"}, {"name", "its extension imports a switch of it"}}}},
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
    watch_->add("global_state_tamper", "error",
                {{"when", "end of the evaluation"},
                 {"changes", {{{"what", "op recording"}, {"name", "torch's RecordFunction switched off or kbv's callback removed"}}}}});
  }
  return watch_->findings();
}

nlohmann::json Session::observed_ops() const {
  if (!ops_ || !traced_ops_ || timed_ops_.empty()) return nlohmann::json::object();
  return {{"timed", timed_ops_}, {"traced", *traced_ops_}};
}

std::vector<at::Tensor> tensors_of(const py::list& inputs) {
  std::vector<at::Tensor> tensors;
  for (const py::handle item : inputs) {
    if (is_tensor(item)) tensors.push_back(py::cast<at::Tensor>(item));
  }
  return tensors;
}

namespace {

// A host tensor's sum and sum of magnitudes in float64: fixed blocks each summed in order, the
// blocks' sums added in order. torch's parallel sum splits the work by the process's thread
// count, which the two workers need not share: the last bits then differ, and an honest
// candidate's draw reads as changed by it (CI once named one global_state_tamper on a draw whose
// float64 sum is not exact).
constexpr int64_t kChecksumBlock = int64_t{1} << 16;

std::pair<double, double> host_sums(const at::Tensor& t) {
  const at::Tensor c = t.contiguous();
  const int64_t n = c.numel();
  const int64_t blocks = (n + kChecksumBlock - 1) / kChecksumBlock;
  std::vector<double> sums(static_cast<size_t>(blocks)), abs_sums(static_cast<size_t>(blocks));
  AT_DISPATCH_ALL_TYPES_AND3(at::kHalf, at::kBFloat16, at::kBool, c.scalar_type(), "input_checksum", [&] {
    const scalar_t* data = c.const_data_ptr<scalar_t>();
    at::parallel_for(0, blocks, 1, [&](int64_t first, int64_t last) {
      for (int64_t b = first; b < last; ++b) {
        double sum = 0, abs_sum = 0;
        for (int64_t i = b * kChecksumBlock; i < std::min(n, (b + 1) * kChecksumBlock); ++i) {
          const double v = static_cast<double>(data[i]);
          sum += v;
          abs_sum += std::abs(v);
        }
        sums[static_cast<size_t>(b)] = sum;
        abs_sums[static_cast<size_t>(b)] = abs_sum;
      }
    });
  });
  std::pair<double, double> total{0, 0};
  for (size_t b = 0; b < sums.size(); ++b) {
    total.first += sums[b];
    total.second += abs_sums[b];
  }
  return total;
}

}  // namespace

nlohmann::json input_checksum(const py::list& inputs) {
  double sum = 0, abs_sum = 0;
  for (const py::handle item : inputs) {
    if (!is_tensor(item)) continue;
    const at::Tensor t = py::cast<at::Tensor>(item);
    if (t.is_cuda() && (t.scalar_type() == at::kFloat || t.scalar_type() == at::kDouble)) {
      // In the dtype, one pass each, one read: both workers run the same reduction over the same
      // shape on the same device, whose order is fixed, so equal draws give equal bits. A float64
      // sum of a float32 input casts it first, and a verified evaluation takes twenty checksums
      // (bench/comparison_probe.py times both ways).
      const at::Tensor sums = at::stack({t.sum(), at::linalg_vector_norm(t, 1)}).to(at::kDouble).cpu();
      sum += sums[0].item<double>();
      abs_sum += sums[1].item<double>();
      continue;
    }
    if (t.is_cuda()) {
      // Other dtypes accumulate in float64 as the elements are read (bool, which has no abs, is
      // converted).
      const at::Tensor v = t.scalar_type() == at::kBool ? t.to(at::kDouble) : t;
      sum += v.sum(at::kDouble).item<double>();
      abs_sum += v.abs().sum(at::kDouble).item<double>();
      continue;
    }
    const auto [part, abs_part] = host_sums(t);
    sum += part;
    abs_sum += abs_part;
  }
  return {{"sum", sum}, {"abs_sum", abs_sum}};
}

}  // namespace kbv::worker
