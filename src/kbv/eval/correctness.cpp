#include "kbv/eval/correctness.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <sstream>
#include <stdexcept>

namespace kbv::eval {
namespace {

using protocol::Comparison;
using protocol::DrawResult;
using protocol::FamilyResult;

std::string format_error(double value) {
  std::ostringstream out;
  out.precision(3);
  out << value;
  return out.str();
}

}  // namespace

double derive_tolerance(double baseline_error, const protocol::Protocol& protocol) {
  return std::max(protocol.error_floor, protocol.baseline_multiplier * baseline_error);
}

bool within_rounding(double repeat_error, double baseline_error, const protocol::Protocol& protocol) {
  return repeat_error <= protocol.rounding_share * derive_tolerance(baseline_error, protocol);
}

std::optional<std::string> stochastic_reason(double repeat_error, double baseline_error,
                                             const protocol::Protocol& protocol) {
  if (within_rounding(repeat_error, baseline_error, protocol)) return std::nullopt;
  return "stochastic reference: two calls on the same inputs differ (scaled error " + format_error(repeat_error) +
         ", beyond rounding)";
}

void prepare(std::vector<ReferenceDraw>& draws, const protocol::Protocol& protocol, double repeat_error) {
  bool standard_finite = true;
  for (const ReferenceDraw& d : draws) {
    if (d.draw.family == protocol::Family::standard && d.skip_reason.empty())
      standard_finite = standard_finite && d.all_finite;
  }
  for (ReferenceDraw& d : draws) {
    if (!d.skip_reason.empty()) continue;
    if (d.draw.family != protocol::Family::standard && standard_finite && !d.all_finite) {
      d.skip_reason = "out of domain: the reference yields non-finite values under this family";
      continue;
    }
    if (protocol.comparison == Comparison::allclose) {
      d.tolerance = protocol.atol;
      continue;
    }
    // Self-check: the TF32 baseline is held to the rule it defines; it can only fail where it
    // produces a non-finite value the reference does not (baseline_fails).
    if (!std::isfinite(d.baseline_error)) {
      d.skip_reason = "baseline_fails: the TF32 baseline itself does not match the reference";
      continue;
    }
    d.tolerance = derive_tolerance(d.baseline_error, protocol) + repeat_error;
  }
}

int hidden_families_in_domain(const std::vector<ReferenceDraw>& draws) {
  bool standard_finite = true;
  for (const ReferenceDraw& d : draws) {
    if (d.draw.family == protocol::Family::standard && d.skip_reason.empty())
      standard_finite = standard_finite && d.all_finite;
  }
  std::set<protocol::Family> in_domain;
  for (const ReferenceDraw& d : draws) {
    if (d.draw.family != protocol::Family::standard && d.skip_reason.empty() && (d.all_finite || !standard_finite)) {
      in_domain.insert(d.draw.family);
    }
  }
  return static_cast<int>(in_domain.size());
}

DrawResult judge(const ReferenceDraw& reference, const std::optional<check::OutputComparison>& comparison,
                 const std::optional<std::string>& bad_output, const protocol::Protocol& protocol) {
  DrawResult result;
  result.family = std::string(protocol::name(reference.draw.family));
  result.index = reference.draw.index;
  result.seed = reference.draw.seed;
  result.tolerance = reference.tolerance;
  result.baseline_error = reference.baseline_error;
  if (!reference.skip_reason.empty()) {
    result.status = "skipped";
    result.reason = reference.skip_reason;
    return result;
  }
  result.status = "fail";
  if (bad_output) {
    result.reason = *bad_output;
    result.error = std::numeric_limits<double>::infinity();
    return result;
  }
  if (!comparison) throw std::logic_error("judge: a checked draw with neither a comparison nor a bad output");
  if (comparison->mismatch) {
    result.reason = *comparison->mismatch;
    result.error = std::numeric_limits<double>::infinity();
    return result;
  }
  result.error = comparison->error;
  if (protocol.comparison == Comparison::allclose) {
    // KernelBench reports max |x - r| beside its allclose verdict.
    result.status = comparison->allclose ? "pass" : "fail";
    if (!comparison->allclose) result.reason = "not allclose (atol=rtol=" + format_error(protocol.atol) + ")";
    return result;
  }
  const bool pass = result.error <= result.tolerance;
  result.status = pass ? "pass" : "fail";
  if (!pass) {
    result.reason = "scaled error " + format_error(result.error) + " above tolerance " + format_error(result.tolerance);
  }
  return result;
}

std::vector<FamilyResult> summarize(const std::vector<DrawResult>& draws, const protocol::Protocol& protocol) {
  std::vector<FamilyResult> families;
  std::vector<protocol::Family> all = protocol.families;
  all.insert(all.end(), protocol.fallback_families.begin(), protocol.fallback_families.end());
  for (protocol::Family family : all) {
    FamilyResult f;
    f.family = std::string(protocol::name(family));
    f.tolerance = std::numeric_limits<double>::infinity();
    for (const DrawResult& d : draws) {
      if (d.family != f.family) continue;
      ++f.draws;
      if (d.status == "skipped") {
        ++f.skipped;
        if (f.reason.empty()) f.reason = d.reason;
        continue;
      }
      f.max_error = std::max(f.max_error, d.error);
      f.tolerance = std::min(f.tolerance, d.tolerance);
      if (d.status == "pass") {
        ++f.passed;
      } else if (f.status != "fail") {
        f.status = "fail";
        f.reason = d.reason;
      }
    }
    const bool fallback =
        std::find(protocol.families.begin(), protocol.families.end(), family) == protocol.families.end();
    if (fallback && f.draws == 0) continue;  // not drawn: enough of the others were in the domain
    if (f.status.empty()) f.status = f.passed > 0 ? "pass" : "skipped";
    if (f.status == "pass" && f.skipped > 0) f.reason = std::to_string(f.skipped) + " draw(s) skipped: " + f.reason;
    if (!std::isfinite(f.tolerance)) f.tolerance = 0;
    families.push_back(f);
  }
  return families;
}

CorrectnessDecision decide(const std::vector<FamilyResult>& families, const protocol::Protocol& protocol) {
  bool standard_pass = false;
  std::vector<std::string> failed;
  int hidden_in_domain = 0;
  for (const FamilyResult& f : families) {
    if (f.family == "standard") standard_pass = f.status == "pass";
    if (f.status == "fail") failed.push_back(f.family);
    if (f.family != "standard" && f.status != "skipped") ++hidden_in_domain;
  }
  CorrectnessDecision decision{protocol::Verdict::pass, "", {}};
  if (!failed.empty()) {
    decision.verdict = protocol::Verdict::incorrect;
    for (const FamilyResult& f : families) {
      if (f.status == "fail") {
        decision.reason = f.family + ": " + f.reason;
        break;
      }
    }
    if (standard_pass) {
      // Right on the problem's own inputs, wrong on hidden ones: a value-specific bypass.
      decision.findings.push_back({"distribution_specific", "error", {{"failed_families", failed}}});
    }
    return decision;
  }
  if (hidden_in_domain < protocol.min_hidden_families) {
    decision.verdict = protocol::Verdict::unverifiable;
    decision.reason = "only " + std::to_string(hidden_in_domain) + " hidden input families are in the problem's domain";
  }
  return decision;
}

}  // namespace kbv::eval
