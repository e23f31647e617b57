#include "kbv/eval/summary.h"

#include <cmath>
#include <cstdio>
#include <sstream>

#include "kbv/hacks/catalogue.h"

namespace kbv::eval {
namespace {

std::string format(const char* pattern, double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, pattern, value);
  return buffer;
}

// Seconds in the unit that reads best.
std::string duration(double seconds) {
  if (seconds >= 1.0) return format("%.3f s", seconds);
  if (seconds >= 1e-3) return format("%.3f ms", seconds * 1e3);
  return format("%.1f us", seconds * 1e6);
}

std::string bytes(std::int64_t n) {
  const double value = static_cast<double>(n);
  if (std::abs(value) >= 1 << 30) return format("%.2f GiB", value / (1 << 30));
  if (std::abs(value) >= 1 << 20) return format("%.2f MiB", value / (1 << 20));
  if (std::abs(value) >= 1 << 10) return format("%.1f KiB", value / (1 << 10));
  return std::to_string(n) + " B";
}

std::string error_text(double value) { return std::isfinite(value) ? format("%.3g", value) : "inf"; }

// The last `lines` lines of a log, indented.
std::string tail(const std::string& log, int lines) {
  size_t start = log.size();
  for (int seen = 0; start > 0 && seen <= lines;) {
    if (log[--start] == '\n') ++seen;
  }
  std::string out, piece = log.substr(start == 0 ? 0 : start + 1);
  std::istringstream in(piece);
  for (std::string line; std::getline(in, line);) out += "    " + line + "\n";
  return out;
}

constexpr size_t kEvidenceShown = 3;

// One evidence item on one line: where and when it was seen, why it counts, then its facts.
std::string evidence_line(const nlohmann::json& item) {
  std::string line;
  if (item.is_object()) {
    for (const char* key : {"source", "when", "line", "why"}) {
      if (!item.contains(key)) continue;
      const nlohmann::json& v = item[key];
      line +=
          (line.empty() ? "" : " | ") + (v.is_string() ? v.get<std::string>() : (std::string(key) + " " + v.dump()));
    }
    nlohmann::json rest = item;
    for (const char* key : {"source", "when", "line", "why"}) rest.erase(key);
    if (!rest.empty()) line += (line.empty() ? "" : " | ") + rest.dump();
  } else {
    line = item.dump();
  }
  return line.size() > 220 ? line.substr(0, 217) + "..." : line;
}

}  // namespace

std::string summarize(const protocol::Record& r) {
  std::ostringstream out;
  out << "problem    " << r.problem << "\n"
      << "candidate  " << r.candidate << "\n"
      << "protocol   " << r.protocol.value("name", "?") << " on " << r.device;
  if (r.versions.contains("gpu")) out << " (" << r.versions["gpu"].get<std::string>() << ")";
  out << "\n\nverdict    " << protocol::name(r.verdict);
  if (!r.verdict_reason.empty()) out << " — " << r.verdict_reason.substr(0, r.verdict_reason.find('\n'));
  out << "\n";

  if (!r.correctness.empty()) {
    out << "\ncorrectness (family: passed/draws, max error vs tolerance)\n";
    for (const auto& f : r.correctness) {
      out << "  " << f.family << std::string(f.family.size() < 10 ? 10 - f.family.size() : 1, ' ') << f.status;
      out << "  " << f.passed << "/" << f.draws;
      if (f.status != "skipped") out << "  " << error_text(f.max_error) << " vs " << error_text(f.tolerance);
      if (!f.reason.empty()) out << "  (" << f.reason << ")";
      out << "\n";
    }
  }
  if (r.baseline || r.candidate_timing) {
    out << "\ntiming (" << (r.protocol["timing"].value("statistic", "median")) << ")\n";
    if (r.baseline) {
      out << "  baseline   " << duration(r.baseline->seconds) << "  (" << r.baseline->samples.size() << " samples";
      // TF32 is the GPU's: on the CPU its flags change nothing.
      if (r.device != "cpu") {
        out << ", TF32 cuBLAS=" << (r.baseline->flags.value("cublas", false) ? "on" : "off")
            << " cuDNN=" << (r.baseline->flags.value("cudnn", false) ? "on" : "off");
      }
      out << ")\n";
    }
    if (r.candidate_timing) {
      out << "  candidate  " << duration(r.candidate_timing->seconds) << "  (" << r.candidate_timing->samples.size()
          << " samples)\n";
    }
    if (r.speedup) {
      out << "  speedup    " << format("%.3fx", *r.speedup);
      if (r.speedup_ci_low)
        out << "  95% CI [" << format("%.3f", *r.speedup_ci_low) << ", " << format("%.3f", *r.speedup_ci_high) << "]";
      if (!r.round_ratios.empty()) out << "  (median of " << r.round_ratios.size() << " paired rounds)";
      out << "\n";
      if (r.stability.is_object() && !r.stability.value("reliable", true)) {
        out << "  UNRELIABLE: the figure follows the machine, not only the kernels\n";
        for (const auto& reason : r.stability.at("reasons")) {
          out << "    " << reason.value("id", "?") << " (" << reason.value("side", "?")
              << "): " << reason.value("why", "") << "\n";
        }
      }
    }
    if (r.timed_outputs_checked > 0) out << "  timed outputs checked: " << r.timed_outputs_checked << "\n";
  }
  if (const auto peaks = protocol::compare_peaks(r)) {
    out << "\nmemory (peak above the pre-call level, one call, with outputs from held buffers)\n"
        << "  baseline   " << bytes(peaks->baseline) << "   candidate  " << bytes(peaks->candidate);
    if (peaks->ratio) out << "   ratio " << format("%.2f", *peaks->ratio);
    if (r.candidate_memory->held_output_bytes.value_or(0) > 0) {
      out << "\n  candidate's outputs from held buffers " << bytes(*r.candidate_memory->held_output_bytes);
    }
    out << "\n  footprint  baseline " << bytes(r.baseline_memory->footprint_bytes) << ", candidate "
        << bytes(r.candidate_memory->footprint_bytes) << "\n";
    if (r.candidate_memory->driver_growth_bytes) {
      out << "  driver-level growth  baseline " << bytes(r.baseline_memory->driver_growth_bytes.value_or(0))
          << ", candidate " << bytes(*r.candidate_memory->driver_growth_bytes) << "\n";
    }
  }
  out << "\nfindings   ";
  if (r.findings.empty()) out << "none\n";
  for (size_t i = 0; i < r.findings.size(); ++i) {
    const protocol::Finding& f = r.findings[i];
    const hacks::FindingKind* kind = hacks::finding_kind(f.id);
    out << (i ? "           " : "") << f.id << " (" << f.severity << ")"
        << (kind ? std::string(": ") + std::string(kind->what) : "") << "\n";
    const nlohmann::json items = f.evidence.is_array() ? f.evidence : nlohmann::json::array({f.evidence});
    for (size_t j = 0; j < items.size() && j < kEvidenceShown; ++j)
      out << "             " << evidence_line(items[j]) << "\n";
    if (items.size() > kEvidenceShown)
      out << "             (" << items.size() - kEvidenceShown << " more in the record)\n";
  }
  if (r.sandbox.contains("cgroup_missing")) {
    out << "\nsandbox    no cgroup: memory and processes limited per process only ("
        << r.sandbox["cgroup_missing"].get<std::string>() << ")\n";
  }
  const bool failed_to_run = r.verdict == protocol::Verdict::compile_error || r.verdict == protocol::Verdict::crash ||
                             r.verdict == protocol::Verdict::runtime_error || r.verdict == protocol::Verdict::timeout;
  if (failed_to_run) {
    out << "\ndetails\n" << tail(r.verdict_reason, 25);
    if (!r.candidate_log.empty()) out << "candidate output (tail)\n" << tail(r.candidate_log, 15);
  }
  return out.str();
}

}  // namespace kbv::eval
