#include "kbv/report/tables.h"

#include <algorithm>

#include "kbv/report/candidates.h"
#include "kbv/report/format.h"

namespace kbv::report {
namespace {

constexpr const char* kNoPass = "no passing candidates";

std::string geomean_cell(const Stats& s) {
  if (!s.geomean) return kNoPass;
  return times(s.geomean->value) + " over " + std::to_string(s.geomean->passing) + " passing";
}

std::string ci_cell(const Stats& s) {
  if (!s.geomean) return "-";
  return times(s.geomean->ci.low) + " - " + times(s.geomean->ci.high);
}

std::string fast_1_cell(const Stats& s) { return percent(s.fast_p[kFast1]); }

Table verdicts(const RunSummary& run) {
  Table t{"Verdicts",
          "Records per verdict; several samples per problem are common. On uncured problems: candidates on a problem "
          "whose audit found a defect the verified protocol does not cure (Problem audit).",
          {"level", "protocol", "device", "candidates", "problems", "on uncured problems"},
          {},
          "no records"};
  std::vector<std::string> names(kVerdicts.begin(), kVerdicts.end());
  for (const Group& g : run.groups) {  // a verdict name this kbv does not know still gets a column
    for (const auto& [verdict, count] : g.stats.verdicts) {
      if (std::find(names.begin(), names.end(), verdict) == names.end()) names.push_back(verdict);
    }
  }
  t.header.insert(t.header.end(), names.begin(), names.end());
  t.header.insert(t.header.end(), {"pass rate", "problems with a pass"});
  for (const Group& g : run.groups) {
    std::vector<std::string> row{g.level,
                                 g.protocol,
                                 g.device,
                                 std::to_string(g.stats.candidates),
                                 std::to_string(g.stats.problems),
                                 std::to_string(g.stats.on_uncured)};
    for (const std::string& verdict : names) {
      const auto count = g.stats.verdicts.find(verdict);
      row.push_back(std::to_string(count == g.stats.verdicts.end() ? 0 : count->second));
    }
    row.insert(row.end(), {percent(g.stats.pass_rate), std::to_string(g.stats.problems_with_pass)});
    t.rows.push_back(std::move(row));
  }
  return t;
}

Table speed(const RunSummary& run) {
  Table t{"Speed",
          "fast_p: share of all candidates that pass with speedup > p (fast_0: pass rate). Geometric mean over passing "
          "candidates, 95% bootstrap CI. Passing on uncured problems: passes that an uncured defect may have made "
          "possible.",
          {"level", "protocol", "device"},
          {},
          "no records"};
  for (double p : kFastPThresholds) t.header.push_back("fast_" + threshold_label(p));
  t.header.insert(t.header.end(), {"geomean speedup", "95% CI", "passing on uncured problems"});
  for (const Group& g : run.groups) {
    std::vector<std::string> row{g.level, g.protocol, g.device};
    for (double share : g.stats.fast_p) row.push_back(percent(share));
    row.insert(row.end(), {geomean_cell(g.stats), ci_cell(g.stats), std::to_string(g.stats.passed_on_uncured)});
    t.rows.push_back(std::move(row));
  }
  return t;
}

Table memory(const RunSummary& run) {
  Table t{
      "Memory",
      "Passing candidates whose peak memory was measured on both sides; peak ratio = candidate peak / baseline peak.",
      {"level", "protocol", "device", "passing with peaks", "raise peak", "share raising", "median peak ratio"},
      {},
      "no records"};
  for (const Group& g : run.groups) {
    const Stats& s = g.stats;
    t.rows.push_back({g.level, g.protocol, g.device, std::to_string(s.peaks_measured), std::to_string(s.raises_peak),
                      s.raises_peak_share ? percent(*s.raises_peak_share) : "-",
                      s.median_peak_ratio ? times(*s.median_peak_ratio) : (s.passed ? "-" : kNoPass)});
  }
  return t;
}

Table findings(const RunSummary& run) {
  Table t{"Findings",
          "Candidates (all levels) with each finding, by severity.",
          {"finding", "protocol", "device", "error", "warning"},
          {},
          "no findings"};
  for (const Group& g : run.groups) {
    if (g.level != kAllLevels) continue;
    for (const auto& [id, count] : g.stats.findings) {
      t.rows.push_back({id, g.protocol, g.device, std::to_string(count.error), std::to_string(count.warning)});
    }
  }
  return t;
}

Table protocol_gap(const RunSummary& run) {
  Table t{
      "verified vs kernelbench",
      "Candidates with a record under both protocols; gap = kernelbench minus verified.",
      {"level", "device", "candidates", "pass rate verified", "kernelbench", "gap", "fast_1 verified", "kernelbench",
       "gap", "geomean verified", "kernelbench", "gap", "pass only under kernelbench", "pass only under verified"},
      {},
      "no candidate has records under both protocols"};
  for (const ProtocolGap& g : run.gaps) {
    t.rows.push_back({g.level, g.device, std::to_string(g.verified.candidates), percent(g.verified.pass_rate),
                      percent(g.kernelbench.pass_rate), percent_points(g.pass_rate_gap), fast_1_cell(g.verified),
                      fast_1_cell(g.kernelbench), percent_points(g.fast_1_gap), geomean_cell(g.verified),
                      geomean_cell(g.kernelbench), g.geomean_gap ? signed_fixed(*g.geomean_gap, 2) : "-",
                      std::to_string(g.passes_only_kernelbench), std::to_string(g.passes_only_verified)});
  }
  return t;
}

std::string findings_cell(const Audit& audit) {
  std::string cell;
  for (const AuditFinding& f : audit.findings) {
    cell += (cell.empty() ? "" : ", ") + f.id + (f.cured ? " (cured: yes)" : " (cured: NO)");
  }
  if (!audit.error.empty()) cell += (cell.empty() ? "" : "; ") + std::string("could not be audited: ") + audit.error;
  return cell;
}

Table problem_audit(const RunSummary& run) {
  const ProblemAudits& a = run.audits;
  Table t{"Problem audit",
          "kbv audit's findings on the problems of the run's records, on the records' device (docs/audit.md); cured: "
          "the verified protocol takes away what a cheat would gain from the defect. Audited clean: " +
              std::to_string(a.clean) + "; not audited: " + std::to_string(a.not_audited) + ".",
          {"level", "problem", "device", "findings", "candidates"},
          {},
          "no audit findings"};
  for (const AuditedProblem& p : a.flagged) {
    t.rows.push_back({p.level, p.problem, p.device, findings_cell(p.audit), std::to_string(p.candidates)});
  }
  return t;
}

Table unmatched(const RunSummary& run) {
  Table t{"Unmatched files", "Files the run found but could not use.", {"path", "reason"}, {}, "none"};
  for (const Unmatched& u : run.unmatched) t.rows.push_back({u.path, u.reason});
  return t;
}

Table failures(const RunSummary& run) {
  Table t{"Failed evaluations",
          "Evaluations that could not be carried out and have no record (a rerun retries them).",
          {"candidate", "protocol", "device", "message"},
          {},
          "none"};
  for (const Failure& f : run.failures) t.rows.push_back({f.candidate, f.protocol, f.device, f.message});
  return t;
}

Table lanes(const RunSummary& run) {
  Table t{
      "Device busy share",
      "Per kbv run or kbv serve that wrote this run's records, each lane's seconds in stages that run on the device "
      "(a GPU, or the CPU where it is the evaluating device) over its wall (a service's wall is its uptime): what "
      "host-side work and idle time left the device.",
      {"when", "command", "device", "lane", "evaluations", "busy share", "device s", "wall s"},
      {},
      "none kept: no kbv run or kbv serve that wrote records of it has finished since kbv keeps them"};
  for (const Session& s : run.sessions) {
    for (const LaneUse& lane : s.lanes) {
      t.rows.push_back({s.created, s.command, s.device, lane.lane, std::to_string(lane.evaluations),
                        lane.wall_seconds > 0 ? percent(lane.device_seconds / lane.wall_seconds) : "-",
                        fixed(lane.device_seconds, 1), fixed(lane.wall_seconds, 1)});
    }
  }
  return t;
}

// Every record of the run, one row each (report/candidates.h): which candidate failed, under
// which protocol, and why. Last: it is the longest.
Table candidates(const RunSummary& run) {
  Table t{"Candidates",
          "Every record of the run counted above, one row each, in the store's order; the reason says why the verdict.",
          candidate_header(),
          {},
          "No records."};
  for (const Outcome& o : run.outcomes) t.rows.push_back(candidate_cells(o));
  t.id = "candidates";
  return t;
}

}  // namespace

std::string run_overview(const RunSummary& run) {
  std::size_t records = 0;
  for (const Group& g : run.groups) {
    if (g.level == kAllLevels) records += static_cast<std::size_t>(g.stats.candidates);
  }
  std::string overview = std::to_string(run.candidate_files) + " candidate files, " +
                         std::to_string(run.unmatched.size()) + " unmatched, " + std::to_string(records) +
                         " records, " + std::to_string(run.failures.size()) + " failed evaluations.";
  if (run.audits.uncured_candidates > 0) {
    overview += " " + std::to_string(run.audits.uncured_candidates) +
                " candidates on problems with an uncured defect, " +
                (run.excluded_candidates > 0 ? "left out of every number." : "counted in every number.");
  }
  return overview;
}

std::string uncured_note(const std::vector<RunSummary>& runs, bool exclude_uncured) {
  int uncured = 0, excluded = 0;
  for (const RunSummary& run : runs) {
    uncured += run.audits.uncured_candidates;
    excluded += run.excluded_candidates;
  }
  if (exclude_uncured) {
    return "Candidates on problems with a defect the verified protocol does not cure are left out of every number: " +
           std::to_string(excluded) + " candidates excluded (each run's Problem audit lists the problems).";
  }
  if (uncured == 0) return "";
  return std::to_string(uncured) + " candidates are on problems with a defect the verified protocol does not cure " +
         "(each run's Problem audit lists them); they are counted in every number (kbv report --exclude-uncured leaves "
         "them out).";
}

std::vector<Table> run_tables(const RunSummary& run) {
  return {problem_audit(run), verdicts(run),  speed(run),    memory(run), findings(run),
          protocol_gap(run),  unmatched(run), failures(run), lanes(run),  candidates(run)};
}

}  // namespace kbv::report
