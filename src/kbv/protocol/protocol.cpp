#include "kbv/protocol/protocol.h"

#include <stdexcept>

namespace kbv::protocol {

std::string_view name(Family family) {
  switch (family) {
    case Family::standard: return "standard";
    case Family::normal: return "normal";
    case Family::shifted: return "shifted";
    case Family::heavy: return "heavy";
    case Family::sparse: return "sparse";
    case Family::rescaled: return "rescaled";
    case Family::powered: return "powered";
  }
  return "?";
}

Protocol verified() {
  Protocol p;
  p.name = "verified";
  p.families = {Family::standard, Family::normal, Family::shifted, Family::heavy, Family::sparse};
  p.fallback_families = {Family::rescaled, Family::powered};
  p.draws_per_family = 2;
  p.secret_seeds = true;
  p.copy_state = true;
  p.comparison = Comparison::scaled;
  p.reference_tf32 = {false, false};
  p.baseline_tf32 = {true, true};
  // The candidate runs under the baseline's flags: a library call inside it gets what the
  // baseline got, so neither side wins by a flag.
  p.candidate_tf32 = {true, true};
  return p;
}

Protocol kernelbench() {
  // KernelBench main: 5 trials seeded from 42, torch.rand inputs via get_inputs(), allclose
  // 1e-4, PyTorch's default TF32 flags (cuBLAS off, cuDNN on) everywhere, current-stream
  // events, 3 warm-ups, 100 trials, 256 MiB L2 flush, mean time, no check of timed outputs.
  Protocol p;
  p.name = "kernelbench";
  p.families = {Family::standard};
  p.draws_per_family = 5;
  p.secret_seeds = false;
  p.copy_state = false;
  p.comparison = Comparison::allclose;
  p.min_hidden_families = 0;
  p.reference_tf32 = {false, true};
  p.baseline_tf32 = {false, true};
  p.candidate_tf32 = {false, true};
  p.timing.warmup_calls = 3;
  p.timing.warmup_seconds = 0;
  p.timing.warmup_max_seconds = 0;
  p.timing.launch_cover_seconds = 0;
  p.timing.launch_cover_max_seconds = 0;
  p.timing.fixed_samples = 100;
  p.timing.use_median = false;
  p.timing.device_sync = false;
  p.timing.l2_flush_bytes = 256ll << 20;
  p.timing.pool_sets = 1;
  p.timing.refresh_inputs = false;
  p.timing.check_timed_outputs = false;
  p.detection.enabled = false;  // KernelBench looks for no hacks
  return p;
}

Protocol preset(std::string_view preset_name) {
  if (preset_name == "verified") return verified();
  if (preset_name == "kernelbench") return kernelbench();
  throw std::invalid_argument("unknown protocol '" + std::string(preset_name) + "' (known: verified, kernelbench)");
}

nlohmann::json to_json(const Protocol& p) {
  nlohmann::json families = nlohmann::json::array();
  for (Family f : p.families) families.push_back(name(f));
  nlohmann::json fallback = nlohmann::json::array();
  for (Family f : p.fallback_families) fallback.push_back(name(f));
  auto tf32 = [](const Tf32& t) { return nlohmann::json{{"cublas", t.cublas}, {"cudnn", t.cudnn}}; };
  const Timing& t = p.timing;
  return {
      {"name", p.name},
      {"families", families},
      {"fallback_families", fallback},
      {"draws_per_family", p.draws_per_family},
      {"secret_seeds", p.secret_seeds},
      {"fixed_seed", p.fixed_seed},
      {"init_seed", p.init_seed},
      {"copy_state", p.copy_state},
      {"comparison", p.comparison == Comparison::scaled ? "scaled" : "allclose"},
      {"atol", p.atol},
      {"rtol", p.rtol},
      {"error_floor", p.error_floor},
      {"baseline_multiplier", p.baseline_multiplier},
      {"rounding_share", p.rounding_share},
      {"min_hidden_families", p.min_hidden_families},
      {"reference_tf32", tf32(p.reference_tf32)},
      {"baseline_tf32", tf32(p.baseline_tf32)},
      {"candidate_tf32", tf32(p.candidate_tf32)},
      {"timing",
       {{"warmup_calls", t.warmup_calls},
        {"warmup_seconds", t.warmup_seconds},
        {"warmup_max_seconds", t.warmup_max_seconds},
        {"launch_cover_seconds", t.launch_cover_seconds},
        {"launch_cover_max_seconds", t.launch_cover_max_seconds},
        {"min_samples", t.min_samples},
        {"min_seconds", t.min_seconds},
        {"max_relative_half_width", t.max_relative_half_width},
        {"max_samples", t.max_samples},
        {"max_seconds", t.max_seconds},
        {"fixed_samples", t.fixed_samples},
        {"statistic", t.use_median ? "median" : "mean"},
        {"device_sync", t.device_sync},
        {"l2_flush_bytes", t.l2_flush_bytes},
        {"pool_sets", t.pool_sets},
        {"paired", t.paired},
        {"refresh_inputs", t.refresh_inputs},
        {"check_timed_outputs", t.check_timed_outputs},
        {"sketch_points", t.sketch_points},
        {"unreliable_other_cores", t.unreliable_other_cores},
        {"unreliable_steal_share", t.unreliable_steal_share},
        {"unreliable_scatter_share", t.unreliable_scatter_share},
        {"unreliable_drift_share", t.unreliable_drift_share},
        {"unreliable_round_spread_share", t.unreliable_round_spread_share}}},
      {"detection",
       {{"enabled", p.detection.enabled},
        {"alibi_share", p.detection.alibi_share},
        {"library_warning_share", p.detection.library_warning_share},
        {"floor_fraction", p.detection.floor_fraction},
        {"untimed_floor_seconds", p.detection.untimed_floor_seconds},
        {"untimed_fraction", p.detection.untimed_fraction},
        {"untimed_device_floor_seconds", p.detection.untimed_device_floor_seconds},
        {"untimed_device_fraction", p.detection.untimed_device_fraction}}},
  };
}

}  // namespace kbv::protocol
