// The record of one evaluation: raw typed results in fixed units (seconds, bytes). The JSON
// writer and the summary printer only read it.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace kbv::protocol {

// no_kernel: correct and honest, but no kernel of its own did the work (PyTorch's ops did).
enum class Verdict { pass, incorrect, hack, no_kernel, compile_error, runtime_error, timeout, crash, unverifiable };
std::string_view name(Verdict verdict);

struct Finding {
  std::string id;
  std::string severity;  // error | warning
  nlohmann::json evidence;
};

// One input draw's outcome.
struct DrawResult {
  std::string family;
  int index = 0;
  std::uint64_t seed = 0;  // logged once the verdict is in, so the draw can be reproduced
  std::string status;      // pass | fail | skipped
  std::string reason;      // why it failed or was skipped
  double error = 0;        // scaled error (verified) or max |x - r| (kernelbench)
  double tolerance = 0;    // bound the error was held to
  double baseline_error = 0;
};

struct FamilyResult {
  std::string family;
  std::string status;  // pass | fail | skipped
  int draws = 0, passed = 0, skipped = 0;
  double max_error = 0;
  double tolerance = 0;  // the tightest bound among its draws
  std::string reason;
};

struct TimingResult {
  std::vector<double> samples;         // seconds
  std::vector<double> stream_samples;  // seconds, current stream only
  std::vector<double> launch_samples;  // the host's seconds from the start event to the call's return
  // GPU, device-wide end: each sample's figure by the host's wait for the device, and how many
  // samples took the context event's end instead (PROTOCOL.md, "Device-wide end").
  std::vector<double> host_wait_samples;
  int end_on_device_samples = 0;
  double seconds = 0;              // the protocol's statistic (median or mean)
  double ci_low = 0, ci_high = 0;  // 95% CI of the median
  nlohmann::json criterion;        // stopping rule and whether it converged
  nlohmann::json flags;            // TF32 flags read back before timing
  nlohmann::json clock;            // the timer: clock, flush, device sync and its latency
  // Where the worker's CPU time went from the pool's first draw to the last timed call (PROTOCOL.md,
  // "Work outside the timed calls"): the worker's ledger (worker/cpu_ledger.h), `outside_seconds`
  // read from outside it with its `source`, and `fills`, the input sets drawn meanwhile.
  nlohmann::json cpu;
  // Where the device's time went over the same span, on a GPU under a protocol that looks for
  // hacks: the GPU ledger's totals (worker/gpu_ledger.h), or why it could not record.
  nlohmann::json gpu;
  // The host over the same span (measure/host_load.h): other processes' work beside the timing, steal.
  nlohmann::json host;
};

struct MemoryResult {
  // One call: the allocator's peak above the pre-call level (transient) plus the bytes of outputs
  // handed out from memory held before the call (a buffer kept from __init__ or an earlier call),
  // so that a candidate reusing its output buffer compares like with like.
  std::optional<std::int64_t> peak_bytes;
  std::optional<std::int64_t> transient_peak_bytes, held_output_bytes;
  std::int64_t footprint_bytes = 0;  // held by the module after construction
  std::optional<std::int64_t> driver_growth_bytes;
};

// A worker's `memory` reply (Session::measure_memory) into `into`; the footprint is left as is.
void read_memory(const nlohmann::json& reply, MemoryResult& into);

struct Record {
  std::string problem, candidate, device;
  nlohmann::json protocol;
  Verdict verdict = Verdict::unverifiable;
  std::string verdict_reason;
  std::vector<FamilyResult> correctness;
  std::vector<DrawResult> draws;
  double reference_repeat_error = 0;  // scaled error between two reference calls on the same inputs
  int timed_outputs_checked = 0;
  // Bytes of the candidate's checked outputs that went through the host on their way to the
  // reference's worker (outputs handed over on the device count none).
  std::int64_t checked_output_host_bytes = 0;
  std::vector<Finding> findings;
  nlohmann::json probe;  // the hack probe's measurements (repeat, poison, trace), when it ran
  std::optional<TimingResult> baseline, candidate_timing;
  std::optional<double> speedup, speedup_ci_low, speedup_ci_high;
  // Paired timing (Timing::paired): each round's baseline median over its candidate median, in
  // order; empty where the sides were timed apart.
  std::vector<double> round_ratios;
  nlohmann::json stability;  // measure/stability.h's judgement of the speedup; null without one
  std::optional<MemoryResult> baseline_memory, candidate_memory;
  std::string candidate_log, reference_log;  // tails of the workers' stdout+stderr
  nlohmann::json versions;
  // The candidate's sandbox: {"enabled": true, "limits": {...}} or {"enabled": false} (--sandbox off).
  nlohmann::json sandbox;
  double wall_seconds = 0;
  // Wall seconds per stage (reference_load, reference_draws, baseline, floor, screen, import,
  // checks, probe, previous_worker, next_worker, timing, memory, findings, shutdown,
  // timed_output_checks); the candidate worker's start-up (interpreter, torch) falls in its first
  // stage.
  std::map<std::string, double> stage_seconds;
  // The candidate worker's load, step by step, in its own seconds (where `import` goes).
  std::map<std::string, double> import_steps_seconds;
};

// Both sides' peaks side by side, when both were measured (PROTOCOL.md, "Memory").
struct PeakComparison {
  std::int64_t baseline = 0, candidate = 0;
  std::optional<double> ratio;  // candidate / baseline; none when the baseline peak is 0
  bool raises = false;          // more than 1% and more than 1 MiB above the baseline
};
std::optional<PeakComparison> compare_peaks(const Record& record);

// Whether a stage's work runs on the device (the reference's draws and trace, the baseline, the
// floor, checks, probe, timing, memory, the timed outputs' checks) rather than on the host alone
// (screen, import, workers' start and shutdown, findings): a lane's device busy share is the former's
// seconds over its wall.
bool device_stage(std::string_view stage);

nlohmann::json to_json(const Record& record);

// An error read back from JSON, where a non-finite value is written as null: null (or no number)
// is infinity, not comparable.
double error_from_json(const nlohmann::json& value);

}  // namespace kbv::protocol
