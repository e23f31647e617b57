// Session's timing steps (session.h): the input sets refilled in place, the warm-up, the timed
// calls under the ledgers, the memory of one call, the physical floor's copy.
#include "kbv/worker/session.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <torch/csrc/utils/pybind.h>

#include "kbv/measure/statistics.h"
#include "kbv/worker/call_inputs.h"
#include "kbv/worker/call_span.h"

namespace py = pybind11;

namespace kbv::worker {

namespace {

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
  if (index >= pool_.size())
    throw ipc::Failure(ipc::FailureKind::internal, "no timing input set " + std::to_string(index));
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
  std::vector<double> window, host_paths;
  double window_begun = elapsed(), previous = 0;
  for (size_t i = 0; elapsed() < max_seconds; ++i) {
    const measure::TimedCall timed = timed_call(i % pool_.size(), mode);
    window.push_back(timed.seconds);
    host_paths.push_back(timed.launch_seconds);
    if (window.size() < kWindowCalls || elapsed() - window_begun < kWindowSeconds) continue;
    const double median = measure::median(window);
    if (elapsed() >= seconds && previous > 0 && std::abs(median - previous) <= kSettled * previous) break;
    previous = median;
    window.clear();
    window_begun = elapsed();
  }
  // The timed calls' launch cover as long as this side's host path (protocol::Timing): the
  // device never waits for the host inside the timed region, on a slow host or a fast one. Twice
  // the warm-up's: the timed calls, each after a refill of its inputs, ran host paths up to 1.5x
  // the warm-up's 90th percentile (docs/gpu-runs.md, "launch cover").
  constexpr double kCoverMargin = 2.0;
  if (!host_paths.empty()) timer_->cover_host_path(kCoverMargin * measure::quantile(host_paths, 0.9));
}

nlohmann::json Session::clock() const { return timer_->describe(); }

measure::TimedCall Session::timed_call(size_t set, const std::string& mode) {
  if (set >= pool_.size()) throw ipc::Failure(ipc::FailureKind::internal, "no timing input set " + std::to_string(set));
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
  if (set >= last_.size())
    throw ipc::Failure(ipc::FailureKind::internal, "no timed output for set " + std::to_string(set));
  if (last_[set].bad_output) throw ipc::Failure(ipc::FailureKind::incorrect, *last_[set].bad_output);
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
  nlohmann::json memory = {
      {"peak_bytes", transient + held}, {"transient_peak_bytes", transient}, {"held_output_bytes", held}};
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

}  // namespace kbv::worker
