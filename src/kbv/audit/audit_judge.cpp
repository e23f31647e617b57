#include "kbv/audit/audit_judge.h"

#include <algorithm>
#include <functional>
#include <limits>

#include "kbv/eval/correctness.h"

namespace kbv::audit {
namespace {

using nlohmann::json;

double value(const json& v) { return v.is_number() ? v.get<double>() : std::numeric_limits<double>::infinity(); }

// A family whose reference ran and gave finite outputs: the verified protocol judges it.
bool judged(const json& facts) {
  if (!facts.contains("outputs")) return false;
  for (const json& o : facts["outputs"]) {
    if (!o.value("finite", false)) return false;
  }
  return true;
}

std::string why_not_judged(const json& facts) {
  if (facts.contains("raised")) return "the reference raised: " + facts["raised"].get<std::string>().substr(0, 200);
  if (facts.contains("bad_output")) return "no tensor output: " + facts["bad_output"].get<std::string>();
  return "non-finite reference output";
}

struct Family {
  std::string name;
  const json* facts;
  double tolerance;
};

}  // namespace

int judged_hidden_families(const std::vector<FamilyFacts>& families) {
  return static_cast<int>(std::count_if(families.begin() + std::min<size_t>(families.size(), 1), families.end(),
                                        [](const FamilyFacts& f) { return judged(f.facts); }));
}

std::vector<AuditFinding> judge_audit(const std::vector<FamilyFacts>& families, const protocol::Protocol& verified,
                                      const protocol::Protocol& kernelbench, double memory_share) {
  std::vector<AuditFinding> out;
  if (families.empty() || !judged(families.front().facts)) return out;  // the caller reports the standard failure
  const json& standard = families.front().facts;
  std::vector<Family> hidden;  // judged hidden families
  json out_of_domain = json::array();
  for (size_t i = 1; i < families.size(); ++i) {
    const json& f = families[i].facts;
    if (judged(f)) {
      hidden.push_back({families[i].family, &f, eval::derive_tolerance(value(f.at("baseline_error")), verified)});
    } else {
      out_of_domain.push_back({{"family", families[i].family}, {"why", why_not_judged(f)}});
    }
  }
  const double tolerance = eval::derive_tolerance(value(standard.at("baseline_error")), verified);
  // A defect the verified protocol cures: some judged hidden family does not show it.
  const auto cured_by = [&](const std::function<bool(const json&, double)>& shows) {
    json clear = json::array();
    for (const Family& f : hidden) {
      if (!shows(*f.facts, f.tolerance)) clear.push_back(f.name);
    }
    return clear;
  };

  // stochastic_reference: the same inputs twice give different outputs (in any family) beyond
  // rounding; within it (float atomics), rounding_reference.
  json differs = json::array();
  bool stochastic = false;
  for (const FamilyFacts& f : families) {
    if (f.facts.contains("repeat_error") && value(f.facts["repeat_error"]) > 0) {
      const double repeat = value(f.facts["repeat_error"]), baseline = value(f.facts.at("baseline_error"));
      differs.push_back({{"family", f.family},
                         {"scaled_error", f.facts["repeat_error"]},
                         {"tolerance", eval::derive_tolerance(baseline, verified)}});
      stochastic = stochastic || !eval::within_rounding(repeat, baseline, verified);
    }
  }
  // A random reference voids the comparisons below (its own baseline sets the tolerance): it is
  // named alone, with what concerns the families and the memory.
  if (stochastic) {
    out.push_back(
        {"stochastic_reference",
         true,
         {{"repeats_differ", differs}, {"why_cured", "verified: every candidate is unverifiable, none is scored"}}});
  } else if (!differs.empty()) {
    out.push_back({"rounding_reference",
                   true,
                   {{"repeats_differ", differs},
                    {"why_cured",
                     "verified: judged, the difference added to every bound (within rounding_share of the "
                     "tolerance)"}}});
  }

  // identity_under_inputs: an affine map of an input reproduces the output on these inputs but not
  // on every family (where it holds everywhere, the op is affine and no defect).
  const auto affine_holds = [](const json& facts, double tol, std::int64_t input, std::int64_t output) {
    for (const json& a : facts.at("affine")) {
      if (a["input"] == input && a["output"] == output && value(a["error"]) <= tol) return true;
    }
    return false;
  };
  for (const json& a : stochastic ? json::array() : standard.at("affine")) {
    if (value(a["error"]) > tolerance) continue;
    const std::int64_t input = a["input"], output = a["output"];
    const json clear = cured_by([&](const json& f, double tol) { return affine_holds(f, tol, input, output); });
    if (clear.empty()) continue;
    out.push_back({"identity_under_inputs",
                   true,
                   {{"input", input},
                    {"output", output},
                    {"scale", a["scale"]},
                    {"offset", a["offset"]},
                    {"scaled_error", a["error"]},
                    {"tolerance", tolerance},
                    {"fails_under", clear}}});
    break;
  }

  // near_zero_output: all-zero outputs pass KernelBench's allclose, or the scaled tolerance.
  bool kernelbench_zeros = true, verified_zeros = true;
  double max_abs = 0, zeros_error = 0;
  for (const json& o : standard.at("outputs")) {
    const double m = value(o.at("max_abs"));
    max_abs = std::max(max_abs, m);
    zeros_error = std::max(zeros_error, value(o.at("zeros_error")));
    kernelbench_zeros = kernelbench_zeros && m * (1 - kernelbench.rtol) <= kernelbench.atol;
  }
  verified_zeros = zeros_error <= tolerance;
  if (!stochastic && (kernelbench_zeros || verified_zeros)) {
    const json clear = cured_by([](const json& f, double tol) {
      for (const json& o : f.at("outputs")) {
        if (value(o.at("zeros_error")) > tol) return false;
      }
      return true;
    });
    out.push_back({"near_zero_output",
                   !verified_zeros || !clear.empty(),
                   {{"max_abs_output", max_abs},
                    {"kernelbench_atol", kernelbench.atol},
                    {"kernelbench_rtol", kernelbench.rtol},
                    {"passes_kernelbench", kernelbench_zeros},
                    {"zeros_scaled_error", zeros_error},
                    {"tolerance", tolerance},
                    {"passes_verified_standard", verified_zeros},
                    {"fails_under", clear}}});
  }

  // constant_output: another draw's inputs give the same outputs (then every input is unused and
  // the outputs insensitive: those are not named again).
  const bool constant = !stochastic && value(standard.at("other_draw_error")) <= tolerance;
  if (constant) {
    const json clear = cured_by([](const json& f, double tol) { return value(f.at("other_draw_error")) <= tol; });
    out.push_back({"constant_output",
                   !clear.empty(),
                   {{"scaled_error_between_draws", standard["other_draw_error"]},
                    {"tolerance", tolerance},
                    {"varies_under", clear}}});
  }

  // unused_input: replacing one input with another draw's changes nothing.
  json unused = json::array();
  bool all_cured = true;
  for (const json& r : stochastic || constant ? json::array() : standard.at("replaced")) {
    if (!(value(r.at("input_change")) > 0) || value(r.at("error")) > tolerance) continue;
    const auto index = r["input"];
    const json clear = cured_by([&](const json& f, double tol) {
      for (const json& other : f.at("replaced")) {
        if (other["input"] == index) return value(other.at("error")) <= tol;
      }
      return true;
    });
    all_cured = all_cured && !clear.empty();
    unused.push_back({{"input", index}, {"scaled_error_after_replacing", r["error"]}, {"used_under", clear}});
  }
  if (!unused.empty()) out.push_back({"unused_input", all_cured, {{"inputs", unused}, {"tolerance", tolerance}}});

  // low_sensitivity: the outputs move far less than the inputs.
  const auto ratio = [](const json& f) {
    const json& s = f.at("sensitivity");
    const double in = value(s.at("input_change")), outc = value(s.at("output_change"));
    return in > 0 ? outc / in : std::numeric_limits<double>::infinity();
  };
  if (!stochastic && !constant && ratio(standard) < kLowSensitivity) {
    const json clear = cured_by([&](const json& f, double) { return ratio(f) < kLowSensitivity; });
    out.push_back({"low_sensitivity",
                   !clear.empty(),
                   {{"output_change_per_input_change", ratio(standard)},
                    {"threshold", kLowSensitivity},
                    {"input_change", standard["sensitivity"]["input_change"]},
                    {"sensitive_under", clear}}});
  }

  // out_of_domain_families: hidden families the reference cannot take, so they check nothing.
  if (!out_of_domain.empty()) {
    json evidence = {{"families", out_of_domain}, {"judged_hidden_families", hidden.size()}};
    if (static_cast<int>(hidden.size()) < verified.min_hidden_families) {
      evidence["verified"] = "fewer judged hidden families than " + std::to_string(verified.min_hidden_families) +
                             ": every candidate is unverifiable";
    }
    out.push_back({"out_of_domain_families", false, evidence});
  }

  // huge_memory: inputs and outputs of one draw beyond a share of the device's memory.
  const double bytes = value(standard.at("bytes")), device = value(standard.at("device_bytes"));
  if (device > 0 && bytes > memory_share * device) {
    out.push_back({"huge_memory",
                   false,
                   {{"bytes", standard["bytes"]},
                    {"device_bytes", standard["device_bytes"]},
                    {"share", bytes / device},
                    {"threshold_share", memory_share}}});
  }
  return out;
}

}  // namespace kbv::audit
