// What `kbv report` reads from the results store: one Outcome per record (the store's indexed
// columns, and of the JSON record only the verdict's reason and the speedup's CI) with the audit
// of its problem, and, per run, its files, the
// files it could not use, the evaluations that failed and the invocations that wrote it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kbv::report {

struct Finding {
  std::string id;
  std::string severity;  // error | warning
};

// A defect of a problem that kbv audit found (docs/audit.md lists the ids).
struct AuditFinding {
  std::string id;
  bool cured = false;  // the verified protocol takes away what a cheat would gain from the defect
};

// kbv audit on a problem's content on one device.
struct Audit {
  std::vector<AuditFinding> findings;  // none: audited clean
  std::string error;                   // not empty: the problem could not be audited
};

// True when some finding is not cured: a candidate on the problem may pass, or look fast, through
// the defect even under the verified protocol.
bool has_uncured(const Audit& audit);

// One record: a candidate evaluated under one protocol on one device.
struct Outcome {
  std::int64_t candidate = 0;
  std::int64_t problem = 0;
  std::optional<int> level;           // KernelBench level; none for a problem outside a level{L} folder
  std::optional<int> problem_number;  // the leading {id}_ of the problem's file name
  std::string problem_name;           // the file name without id and extension
  std::string path;                   // the candidate's file
  std::optional<int> sample;          // its sample number, where its name gives one
  // Of the problem on the record's device: the one of the problem's current content, else the
  // latest; none when it was never audited there.
  std::optional<Audit> audit;
  std::string protocol, device, verdict;
  std::string reason;             // why the verdict (the record's verdict_reason; empty for a pass)
  std::optional<double> speedup;  // baseline time / candidate time
  std::optional<double> speedup_ci_low, speedup_ci_high;
  std::optional<double> peak_ratio;  // candidate peak / baseline peak
  std::optional<bool> raises_peak;
  std::vector<Finding> findings;
};

// The problem's file name without its extension ({id}_{Name}), as the report names it.
std::string problem_label(const Outcome& o);

struct Unmatched {
  std::string path, reason;
};

// An evaluation that could not be carried out and has no record since (a rerun retries it).
struct Failure {
  std::string candidate, protocol, device, message;
};

// One evaluation lane of a kbv run or kbv serve invocation: its device busy share is
// device_seconds over wall_seconds.
struct LaneUse {
  std::string lane;  // its GPU, or "cpu"
  double wall_seconds = 0, device_seconds = 0;
  int evaluations = 0;
};

// A kbv run or kbv serve invocation that wrote records of the run.
struct Session {
  std::string command, device, created;
  double wall_seconds = 0;
  std::vector<LaneUse> lanes;
};

struct RunResults {
  std::string name;
  int candidate_files = 0;  // candidates the run found, with a record or not
  std::vector<Unmatched> unmatched;
  std::vector<Failure> failures;
  std::vector<Outcome> outcomes;
  std::vector<Session> sessions;  // oldest first; none in a store written before kbv kept them
};

// Every run in the store at `path`, oldest first, read in one snapshot. The store is opened read
// only: a missing file is an error, never created. Throws std::runtime_error naming the path when
// the file is missing, not a SQLite database, or not a kbv store of the schema this kbv reads.
std::vector<RunResults> read_results(const std::string& path);

}  // namespace kbv::report
