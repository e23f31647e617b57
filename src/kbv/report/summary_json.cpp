#include "kbv/report/summary_json.h"

#include "kbv/report/candidates.h"
#include "kbv/report/format.h"

namespace kbv::report {
namespace {

using nlohmann::json;

// Format version of this file: bump when a key changes meaning or disappears.
constexpr int kSummaryVersion = 1;

template <typename T>
json or_null(const std::optional<T>& value) {
  return value ? json(*value) : json(nullptr);
}

json to_json(const Stats& s) {
  json fast = json::object();
  for (std::size_t i = 0; i < kFastPThresholds.size(); ++i) fast[threshold_label(kFastPThresholds[i])] = s.fast_p[i];
  json geomean = nullptr;
  if (s.geomean) {
    geomean = {
        {"value", s.geomean->value}, {"ci", {s.geomean->ci.low, s.geomean->ci.high}}, {"passing", s.geomean->passing}};
  }
  json findings = json::object();
  for (const auto& [id, count] : s.findings) findings[id] = {{"error", count.error}, {"warning", count.warning}};
  return {{"candidates", s.candidates},
          {"problems", s.problems},
          {"problems_with_pass", s.problems_with_pass},
          {"verdicts", s.verdicts},
          {"passed", s.passed},
          {"pass_rate", s.pass_rate},
          {"fast_p", fast},
          {"geomean_speedup", geomean},
          {"memory",
           {{"peaks_measured", s.peaks_measured},
            {"raises_peak", s.raises_peak},
            {"raises_peak_share", or_null(s.raises_peak_share)},
            {"median_peak_ratio", or_null(s.median_peak_ratio)}}},
          {"findings", findings},
          {"on_uncured_problems", {{"candidates", s.on_uncured}, {"passed", s.passed_on_uncured}}}};
}

json to_json(const ProtocolGap& g) {
  return {
      {"level", g.level},
      {"device", g.device},
      {"candidates", g.verified.candidates},
      {"verified", to_json(g.verified)},
      {"kernelbench", to_json(g.kernelbench)},
      {"passes_only_kernelbench", g.passes_only_kernelbench},
      {"passes_only_verified", g.passes_only_verified},
      {"gap", {{"pass_rate", g.pass_rate_gap}, {"fast_1", g.fast_1_gap}, {"geomean_speedup", or_null(g.geomean_gap)}}}};
}

json to_json(const ProblemAudits& a) {
  json problems = json::array();
  for (const AuditedProblem& p : a.flagged) {
    json findings = json::array();
    for (const AuditFinding& f : p.audit.findings) findings.push_back({{"id", f.id}, {"cured_by_verified", f.cured}});
    problems.push_back({{"level", p.level},
                        {"problem", p.problem},
                        {"device", p.device},
                        {"findings", findings},
                        {"error", p.audit.error.empty() ? json(nullptr) : json(p.audit.error)},
                        {"candidates", p.candidates}});
  }
  return {{"problems", problems},
          {"clean", a.clean},
          {"not_audited", a.not_audited},
          {"uncured_candidates", a.uncured_candidates}};
}

}  // namespace

json summary_json(const std::string& store, const std::vector<RunSummary>& runs, bool exclude_uncured) {
  json out_runs = json::array();
  for (const RunSummary& run : runs) {
    json groups = json::array();
    for (const Group& g : run.groups) {
      json group = to_json(g.stats);
      group["level"] = g.level;
      group["protocol"] = g.protocol;
      group["device"] = g.device;
      groups.push_back(std::move(group));
    }
    json gaps = json::array();
    for (const ProtocolGap& g : run.gaps) gaps.push_back(to_json(g));
    json unmatched = json::array();
    for (const Unmatched& u : run.unmatched) unmatched.push_back({{"path", u.path}, {"reason", u.reason}});
    json failures = json::array();
    for (const Failure& f : run.failures) {
      failures.push_back(
          {{"candidate", f.candidate}, {"protocol", f.protocol}, {"device", f.device}, {"message", f.message}});
    }
    json sessions = json::array();
    for (const Session& s : run.sessions) {
      json lanes = json::array();
      for (const LaneUse& lane : s.lanes) {
        lanes.push_back(
            {{"lane", lane.lane},
             {"evaluations", lane.evaluations},
             {"device_seconds", lane.device_seconds},
             {"wall_seconds", lane.wall_seconds},
             {"busy_share", lane.wall_seconds > 0 ? json(lane.device_seconds / lane.wall_seconds) : json()}});
      }
      sessions.push_back({{"command", s.command},
                          {"device", s.device},
                          {"created", s.created},
                          {"wall_seconds", s.wall_seconds},
                          {"lanes", lanes}});
    }
    std::vector<CandidateRow> records;
    for (const Outcome& o : run.outcomes) records.push_back({run.name, &o});
    out_runs.push_back({{"name", run.name},
                        {"candidate_files", run.candidate_files},
                        {"unmatched", unmatched},
                        {"failures", failures},
                        {"groups", groups},
                        {"protocol_gaps", gaps},
                        {"problem_audit", to_json(run.audits)},
                        {"excluded_candidates", run.excluded_candidates},
                        {"sessions", sessions},
                        {"candidates", candidates_json(records)}});
  }
  int excluded = 0;
  for (const RunSummary& run : runs) excluded += run.excluded_candidates;
  json thresholds = json::array();
  for (double p : kFastPThresholds) thresholds.push_back(p);
  return {{"kbv_report_version", kSummaryVersion},
          {"store", store},
          {"exclude_uncured", exclude_uncured},
          {"excluded_candidates", excluded},
          {"fast_p_thresholds", thresholds},
          {"geomean_ci",
           {{"method", "percentile bootstrap over passing candidates"},
            {"confidence", kConfidence},
            {"resamples", kBootstrapResamples},
            {"seed", kBootstrapSeed}}},
          {"runs", out_runs}};
}

}  // namespace kbv::report
