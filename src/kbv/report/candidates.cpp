#include "kbv/report/candidates.h"

#include <algorithm>
#include <sstream>

#include "kbv/report/format.h"

namespace kbv::report {
namespace {

using nlohmann::json;

std::string problem_of(const Outcome& o) {
  return o.level ? "level" + std::to_string(*o.level) + "/" + problem_label(o) : problem_label(o);
}

std::string findings_of(const Outcome& o) {
  std::string text;
  for (const Finding& f : o.findings) {
    if (!text.empty()) text += ",";
    text += f.id + (f.severity == "error" ? "" : "(w)");
  }
  return text.empty() ? "-" : text;
}

std::string speedup_of(const Outcome& o) {
  if (!o.speedup) return "-";
  std::string text = times(*o.speedup);
  if (o.speedup_ci_low && o.speedup_ci_high)
    text += " [" + fixed(*o.speedup_ci_low, 2) + ", " + fixed(*o.speedup_ci_high, 2) + "]";
  return text;
}

std::string cut(std::string text, std::size_t most) {
  std::replace(text.begin(), text.end(), '\n', ' ');
  return text.size() <= most ? text : text.substr(0, most - 3) + "...";
}

}  // namespace

std::vector<CandidateRow> candidate_rows(const std::vector<RunResults>& runs, const CandidateQuery& query) {
  const auto matches = [](const std::string& wanted, const std::string& value) {
    return wanted.empty() || wanted == value;
  };
  std::vector<CandidateRow> rows;
  for (const RunResults& run : runs) {
    if (!matches(query.run, run.name)) continue;
    for (const Outcome& o : run.outcomes) {
      if (matches(query.verdict, o.verdict) && matches(query.protocol, o.protocol) && matches(query.device, o.device)) {
        rows.push_back({run.name, &o});
      }
    }
  }
  return rows;
}

std::vector<std::string> candidate_header() {
  return {"problem", "candidate", "protocol", "device", "verdict", "speedup [95% CI]", "peak", "findings", "reason"};
}

std::vector<std::string> candidate_cells(const Outcome& o) {
  return {problem_of(o),
          o.path,
          o.protocol,
          o.device,
          o.verdict,
          speedup_of(o),
          o.peak_ratio ? times(*o.peak_ratio) : "-",
          findings_of(o),
          o.reason.empty() ? "-" : o.reason};
}

std::string candidates_table(const std::vector<CandidateRow>& rows) {
  std::vector<std::vector<std::string>> cells = {candidate_header()};
  cells.front().insert(cells.front().begin(), "run");
  for (const CandidateRow& row : rows) {
    std::vector<std::string> line = candidate_cells(*row.outcome);
    line.insert(line.begin(), row.run);
    line.back() = cut(line.back(), 100);
    cells.push_back(std::move(line));
  }
  std::vector<std::size_t> width(cells.front().size(), 0);
  for (const auto& line : cells) {
    for (std::size_t i = 0; i + 1 < line.size(); ++i) width[i] = std::max(width[i], line[i].size());
  }
  std::ostringstream out;
  for (const auto& line : cells) {
    for (std::size_t i = 0; i < line.size(); ++i) {
      out << line[i];
      if (i + 1 < line.size()) out << std::string(width[i] - line[i].size() + 2, ' ');
    }
    out << '\n';
  }
  out << rows.size() << (rows.size() == 1 ? " record\n" : " records\n");
  return out.str();
}

json candidates_json(const std::vector<CandidateRow>& rows) {
  json out = json::array();
  for (const CandidateRow& row : rows) {
    const Outcome& o = *row.outcome;
    json findings = json::array();
    for (const Finding& f : o.findings) findings.push_back({{"id", f.id}, {"severity", f.severity}});
    json r = {
        {"run", row.run},
        {"problem", problem_of(o)},
        {"level", o.level ? json(*o.level) : json()},
        {"candidate", o.path},
        {"sample", o.sample ? json(*o.sample) : json()},
        {"protocol", o.protocol},
        {"device", o.device},
        {"verdict", o.verdict},
        {"reason", o.reason},
        {"speedup", o.speedup ? json(*o.speedup) : json()},
        {"speedup_ci", o.speedup_ci_low && o.speedup_ci_high ? json({*o.speedup_ci_low, *o.speedup_ci_high}) : json()},
        {"peak_ratio", o.peak_ratio ? json(*o.peak_ratio) : json()},
        {"raises_peak", o.raises_peak ? json(*o.raises_peak) : json()},
        {"findings", std::move(findings)}};
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace kbv::report
