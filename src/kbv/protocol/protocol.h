// The protocol: one plain value naming every knob of an evaluation (PROTOCOL.md, "Presets").
// Records store it whole, so a number can always be traced to the rules that produced it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace kbv::protocol {

// Input families (PROTOCOL.md, "Correctness" 2). `standard` is the problem's own get_inputs();
// `rescaled` and `powered` reshape its values, signs and zeros kept: the fallback for problems
// whose domain the others leave.
enum class Family { standard, normal, shifted, heavy, sparse, rescaled, powered };
std::string_view name(Family family);

// TF32 switches for cuBLAS and cuDNN (torch's legacy flags, set and read back around each use).
struct Tf32 {
  bool cublas = false;
  bool cudnn = false;
};

enum class Comparison {
  scaled,    // verified: error scaled by the output's RMS, bound derived from the TF32 baseline's error
  allclose,  // kernelbench: torch.allclose(atol, rtol)
};

struct Timing {
  int warmup_calls = 3;
  // Then timed calls, their samples dropped, for at least warmup_seconds and until two windows
  // of them agree (at most warmup_max_seconds): a GPU's clocks follow its recent load
  // (docs/performance.md, "Timing stability").
  double warmup_seconds = 0.1;
  double warmup_max_seconds = 1.0;
  // The GPU is kept busy (a spin kernel) before each timed call's start event, so that the host's
  // launch of the call is not inside the timed region: at least launch_cover_seconds, and after the
  // warm-up as long as the side's own host path measured there (twice its 90th percentile), up to
  // launch_cover_max_seconds. Both sides by the same rule: a slow host puts no device
  // idle time into either side's figure (PROTOCOL.md, "Timing").
  double launch_cover_seconds = 100e-6;
  double launch_cover_max_seconds = 5e-3;
  // Adaptive stop (fixed_samples == 0): PROTOCOL.md "Repetitions".
  int min_samples = 10;
  double min_seconds = 0.2;
  double max_relative_half_width = 0.01;
  int max_samples = 200;
  double max_seconds = 10.0;
  int fixed_samples = 0;            // > 0: exactly this many samples (kernelbench: 100)
  bool use_median = true;           // false: mean of samples (kernelbench reports the mean)
  bool device_sync = true;          // work on any stream counts: a device-wide synchronize after the call
  std::int64_t l2_flush_bytes = 0;  // 0: twice the device's L2
  int pool_sets = 2;                // input sets timed in turn
  // Baseline and candidate timed in alternating rounds, both workers warm, the speedup the median
  // of the rounds' ratios (eval/paired_timing.h); off: the baseline once per reference side, before
  // the candidate's import, and the candidate's timing after its checks.
  bool paired = false;
  bool refresh_inputs = true;  // new content (same buffers) before every timed call
  bool check_timed_outputs = true;
  int sketch_points = 4096;  // sampled positions compared per timed output
  // The stability judgement (PROTOCOL.md, "Stability", measure/stability.h): the speedup is
  // unreliable where, while either side was timed, other processes kept more than this many cores
  // busy, the hypervisor took more than this share of the cores' time, or more than this share of
  // its samples lay beyond twice its median or below half of it (two groups: the median follows the
  // one the run filled more), or the median of its last third of samples moved by more than this
  // share from its first third's (drift); with a launch cover, also where a side's host path
  // outgrew its cover (beyond launch_cover_max_seconds); with paired rounds, also where half the
  // width of their ratios' interval exceeds this share of their median (the rounds disagree).
  double unreliable_other_cores = 0.5;
  double unreliable_steal_share = 0.05;
  double unreliable_scatter_share = 0.25;
  double unreliable_drift_share = 0.25;
  double unreliable_round_spread_share = 0.25;
};

// Hack detection (PROTOCOL.md, "Findings"): the static screen, the candidate's runtime watch and
// the parent's judgements. Shares are of the traced forward's work (own + library).
struct Detection {
  bool enabled = true;
  double alibi_share = 0.01;            // own work below this share: no_custom_kernel (an alibi)
  double library_warning_share = 0.10;  // library work above this share: library_fallback (warning)
  // timing_anomaly below this fraction of a plain copy of the output bytes, timed the same way
  // (writing the output alone can be up to twice as fast as copying it).
  double floor_fraction = 0.5;
  // untimed_work above this many CPU seconds (two clock ticks: the coarsest reading, /proc's) plus
  // this share of the CPU time its calls and kbv's steps took.
  double untimed_floor_seconds = 0.02;
  double untimed_fraction = 0.05;
  // untimed_work on the GPU above this many device seconds outside the timed calls' windows plus
  // this share of the windows' seconds (honest candidates leave none outside: PROTOCOL.md).
  double untimed_device_floor_seconds = 1e-4;
  double untimed_device_fraction = 0.01;
};

struct Protocol {
  std::string name;
  std::vector<Family> families;
  // Checked only where fewer than min_hidden_families of `families` are in the problem's domain.
  std::vector<Family> fallback_families;
  int draws_per_family = 2;
  bool secret_seeds = true;  // false: seeds derived from fixed_seed, as KernelBench does
  std::uint64_t fixed_seed = 42;
  std::uint64_t init_seed = 42;  // seed under which Model and ModelNew are constructed
  bool copy_state = true;        // copy reference parameters/buffers into ModelNew
  Comparison comparison = Comparison::scaled;
  double atol = 1e-4, rtol = 1e-4;   // allclose
  double error_floor = 1e-4;         // scaled: smallest bound ever used
  double baseline_multiplier = 3.0;  // scaled: bound = max(floor, multiplier x baseline error)
  // scaled: a reference whose two calls on the same inputs differ by at most this share of the
  // draw's tolerance is deterministic up to rounding (float atomics): judged, the difference added
  // to every bound; beyond it, random (dropout): unverifiable.
  double rounding_share = 0.25;
  int min_hidden_families = 2;  // fewer in-domain hidden families: unverifiable
  Tf32 reference_tf32;          // reference values
  Tf32 baseline_tf32;           // timed baseline (and the tolerance's yardstick)
  Tf32 candidate_tf32;          // flags the candidate runs under
  Timing timing;
  Detection detection;
};

Protocol verified();
Protocol kernelbench();
// Throws std::invalid_argument naming the known presets.
Protocol preset(std::string_view name);

nlohmann::json to_json(const Protocol& protocol);

}  // namespace kbv::protocol
