#include "kbv/protocol/record.h"

#include <cmath>
#include <limits>
#include <set>

namespace kbv::protocol {
namespace {

using nlohmann::json;

// JSON has no infinity: a non-finite error (e.g. NaN where the reference is finite) is null.
json number(double value) { return std::isfinite(value) ? json(value) : json(nullptr); }

json to_json(const TimingResult& t) {
  json out = {{"seconds", t.seconds},
              {"ci", {t.ci_low, t.ci_high}},
              {"samples", t.samples.size()},
              {"samples_seconds", t.samples},
              {"stream_samples_seconds", t.stream_samples},
              {"launch_samples_seconds", t.launch_samples},
              {"criterion", t.criterion},
              {"flags", t.flags},
              {"clock", t.clock}};
  if (!t.host_wait_samples.empty()) {
    out["host_wait_samples_seconds"] = t.host_wait_samples;
    out["end_on_device_samples"] = t.end_on_device_samples;
  }
  if (!t.cpu.is_null()) out["cpu"] = t.cpu;
  if (!t.gpu.is_null()) out["gpu"] = t.gpu;
  if (!t.host.is_null()) out["host"] = t.host;
  return out;
}

}  // namespace

std::string_view name(Verdict verdict) {
  switch (verdict) {
    case Verdict::pass: return "pass";
    case Verdict::incorrect: return "incorrect";
    case Verdict::hack: return "hack";
    case Verdict::no_kernel: return "no_kernel";
    case Verdict::compile_error: return "compile_error";
    case Verdict::runtime_error: return "runtime_error";
    case Verdict::timeout: return "timeout";
    case Verdict::crash: return "crash";
    case Verdict::unverifiable: return "unverifiable";
  }
  return "?";
}

void read_memory(const json& reply, MemoryResult& into) {
  into.peak_bytes = reply.at("peak_bytes").get<std::int64_t>();
  into.transient_peak_bytes = reply.at("transient_peak_bytes").get<std::int64_t>();
  into.held_output_bytes = reply.at("held_output_bytes").get<std::int64_t>();
  if (reply.contains("driver_growth_bytes"))
    into.driver_growth_bytes = reply["driver_growth_bytes"].get<std::int64_t>();
}

std::optional<PeakComparison> compare_peaks(const Record& r) {
  if (!r.baseline_memory || !r.candidate_memory || !r.baseline_memory->peak_bytes || !r.candidate_memory->peak_bytes) {
    return std::nullopt;
  }
  PeakComparison c;
  c.baseline = *r.baseline_memory->peak_bytes;
  c.candidate = *r.candidate_memory->peak_bytes;
  if (c.baseline > 0) c.ratio = static_cast<double>(c.candidate) / static_cast<double>(c.baseline);
  c.raises = c.candidate > c.baseline + std::max<std::int64_t>(c.baseline / 100, 1 << 20);
  return c;
}

json to_json(const Record& r) {
  json correctness = json::array();
  for (const FamilyResult& f : r.correctness) {
    correctness.push_back({{"family", f.family},
                           {"status", f.status},
                           {"draws", f.draws},
                           {"passed", f.passed},
                           {"skipped", f.skipped},
                           {"max_error", number(f.max_error)},
                           {"tolerance", number(f.tolerance)},
                           {"reason", f.reason}});
  }
  json draws = json::array();
  for (const DrawResult& d : r.draws) {
    draws.push_back({{"family", d.family},
                     {"index", d.index},
                     {"seed", d.seed},
                     {"status", d.status},
                     {"reason", d.reason},
                     {"error", number(d.error)},
                     {"tolerance", number(d.tolerance)},
                     {"baseline_error", number(d.baseline_error)}});
  }
  json findings = json::array();
  for (const Finding& f : r.findings)
    findings.push_back({{"id", f.id}, {"severity", f.severity}, {"evidence", f.evidence}});

  json timing = json::object();
  if (r.baseline) {
    timing["baseline_ms"] = r.baseline->seconds * 1e3;
    timing["baseline"] = to_json(*r.baseline);
  }
  if (r.candidate_timing) {
    timing["candidate_ms"] = r.candidate_timing->seconds * 1e3;
    timing["candidate"] = to_json(*r.candidate_timing);
  }
  if (r.speedup) timing["speedup"] = *r.speedup;
  if (r.speedup_ci_low) timing["speedup_ci"] = {*r.speedup_ci_low, *r.speedup_ci_high};
  if (!r.round_ratios.empty()) timing["round_ratios"] = r.round_ratios;
  if (!r.stability.is_null()) timing["stability"] = r.stability;
  timing["timed_outputs_checked"] = r.timed_outputs_checked;

  json memory = json::object();
  if (r.baseline_memory) {
    if (r.baseline_memory->peak_bytes) memory["baseline_peak_bytes"] = *r.baseline_memory->peak_bytes;
    if (r.baseline_memory->transient_peak_bytes)
      memory["baseline_transient_peak_bytes"] = *r.baseline_memory->transient_peak_bytes;
    if (r.baseline_memory->held_output_bytes)
      memory["baseline_held_output_bytes"] = *r.baseline_memory->held_output_bytes;
    memory["baseline_footprint_bytes"] = r.baseline_memory->footprint_bytes;
    if (r.baseline_memory->driver_growth_bytes)
      memory["baseline_driver_growth_bytes"] = *r.baseline_memory->driver_growth_bytes;
  }
  if (r.candidate_memory) {
    if (r.candidate_memory->peak_bytes) memory["candidate_peak_bytes"] = *r.candidate_memory->peak_bytes;
    if (r.candidate_memory->transient_peak_bytes)
      memory["candidate_transient_peak_bytes"] = *r.candidate_memory->transient_peak_bytes;
    if (r.candidate_memory->held_output_bytes)
      memory["candidate_held_output_bytes"] = *r.candidate_memory->held_output_bytes;
    memory["candidate_footprint_bytes"] = r.candidate_memory->footprint_bytes;
    if (r.candidate_memory->driver_growth_bytes)
      memory["candidate_driver_growth_bytes"] = *r.candidate_memory->driver_growth_bytes;
  }
  if (const auto peaks = compare_peaks(r)) {
    if (peaks->ratio) memory["peak_ratio"] = *peaks->ratio;
    memory["raises_peak"] = peaks->raises;
  }

  return {{"problem", r.problem},
          {"candidate", r.candidate},
          {"device", r.device},
          {"protocol", r.protocol},
          {"verdict", name(r.verdict)},
          {"verdict_reason", r.verdict_reason},
          {"correctness", correctness},
          {"draws", draws},
          {"reference_repeat_error", number(r.reference_repeat_error)},
          {"checked_output_host_bytes", r.checked_output_host_bytes},
          {"findings", findings},
          {"probe", r.probe},
          {"timing", timing},
          {"memory", memory},
          {"logs", {{"candidate", r.candidate_log}, {"reference", r.reference_log}}},
          {"versions", r.versions},
          {"sandbox", r.sandbox},
          {"wall_seconds", r.wall_seconds},
          {"stage_seconds", r.stage_seconds},
          {"import_steps_seconds", r.import_steps_seconds}};
}

bool device_stage(std::string_view stage) {
  static const std::set<std::string_view> device = {"reference_draws", "reference_trace", "baseline",
                                                    "floor",           "checks",          "probe",
                                                    "timing",          "memory",          "timed_output_checks"};
  return device.count(stage) > 0;
}

double error_from_json(const json& value) {
  return value.is_number() ? value.get<double>() : std::numeric_limits<double>::infinity();
}

}  // namespace kbv::protocol
