#include "kbv/report/results.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <type_traits>
#include <utility>

#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>
#include <SQLiteCpp/Transaction.h>
#include <nlohmann/json.hpp>

namespace kbv::report {
namespace {

// The schema version of src/kbv/store (its README lists the columns read here).
constexpr const char* kSchemaVersion = "1";

template <typename T>
std::optional<T> optional_column(const SQLite::Column& column) {
  if (column.isNull()) return std::nullopt;
  if constexpr (std::is_same_v<T, double>) {
    return column.getDouble();
  } else {
    return static_cast<T>(column.getInt());
  }
}

// The store's findings column: "id:severity" items separated by spaces.
std::vector<Finding> parse_findings(const std::string& text) {
  std::vector<Finding> findings;
  std::istringstream items(text);
  for (std::string item; items >> item;) {
    const auto colon = item.rfind(':');
    if (colon == std::string::npos) {
      findings.push_back({item, "?"});
    } else {
      findings.push_back({item.substr(0, colon), item.substr(colon + 1)});
    }
  }
  return findings;
}

// The audit that applies to each (problem, device): the rows are sorted so that it comes last,
// those of the problem's current content after the others, later rows after earlier ones. A store
// written before kbv run audited problems has no audits table: nothing was audited.
std::map<std::pair<std::int64_t, std::string>, Audit> read_audits(SQLite::Database& db) {
  std::map<std::pair<std::int64_t, std::string>, Audit> audits;
  if (!db.tableExists("audits")) return audits;
  SQLite::Statement rows(db,
                         "SELECT a.problem_id, a.device, a.findings, a.uncured, a.error FROM audits a "
                         "JOIN problems p ON p.id = a.problem_id "
                         "ORDER BY a.problem_id, a.device, a.content_key = p.content_key, a.rowid");
  while (rows.executeStep()) {
    // `uncured` is the store's own reading of each finding's cured_by_verified.
    std::set<std::string> uncured;
    std::istringstream ids(rows.getColumn(3).getString());
    for (std::string id; ids >> id;) uncured.insert(id);
    Audit audit;
    for (const nlohmann::json& f : nlohmann::json::parse(rows.getColumn(2).getString())) {
      const std::string id = f.value("id", std::string("?"));
      audit.findings.push_back({id, uncured.count(id) == 0});
    }
    if (!rows.getColumn(4).isNull()) audit.error = rows.getColumn(4).getString();
    audits[{rows.getColumn(0).getInt64(), rows.getColumn(1).getString()}] = std::move(audit);
  }
  return audits;
}

void check_schema(SQLite::Database& db) {
  if (!db.tableExists("meta") || !db.tableExists("records")) throw std::runtime_error("not a kbv results store");
  SQLite::Statement version(db, "SELECT value FROM meta WHERE key = 'schema_version'");
  const std::string found = version.executeStep() ? version.getColumn(0).getString() : "none";
  if (found != kSchemaVersion) {
    throw std::runtime_error(std::string("store schema version ") + found + ", this kbv reads " + kSchemaVersion);
  }
}

std::vector<RunResults> read(SQLite::Database& db) {
  check_schema(db);
  // One read transaction: a run writing the store meanwhile (WAL) cannot change the snapshot
  // between the queries below. It only reads, so letting it roll back at the end is harmless.
  SQLite::Transaction snapshot(db);

  std::vector<RunResults> runs;
  std::map<std::int64_t, std::size_t> index;  // run id -> position in `runs`
  SQLite::Statement run_rows(db,
                             "SELECT runs.id, runs.name, COUNT(candidates.id) FROM runs "
                             "LEFT JOIN candidates ON candidates.run_id = runs.id GROUP BY runs.id ORDER BY runs.id");
  while (run_rows.executeStep()) {
    index[run_rows.getColumn(0).getInt64()] = runs.size();
    runs.push_back({run_rows.getColumn(1).getString(), run_rows.getColumn(2).getInt(), {}, {}, {}, {}});
  }

  SQLite::Statement unmatched(db, "SELECT run_id, path, reason FROM unmatched ORDER BY run_id, path");
  while (unmatched.executeStep()) {
    runs[index.at(unmatched.getColumn(0).getInt64())].unmatched.push_back(
        {unmatched.getColumn(1).getString(), unmatched.getColumn(2).getString()});
  }

  // The latest failure of each evaluation still without a record: SQLite takes the other columns
  // from the row holding MAX(rowid), the last inserted (`created` has only one-second resolution).
  SQLite::Statement failures(
      db,
      "SELECT c.run_id, c.path, f.protocol, f.device, f.message, MAX(f.rowid) FROM failures f "
      "JOIN candidates c ON c.id = f.candidate_id WHERE NOT EXISTS (SELECT 1 FROM records r "
      "WHERE r.candidate_id = f.candidate_id AND r.protocol = f.protocol AND r.device = f.device) "
      "GROUP BY f.candidate_id, f.protocol, f.device ORDER BY c.run_id, c.path, f.protocol, f.device");
  while (failures.executeStep()) {
    runs[index.at(failures.getColumn(0).getInt64())].failures.push_back(
        {failures.getColumn(1).getString(), failures.getColumn(2).getString(), failures.getColumn(3).getString(),
         failures.getColumn(4).getString()});
  }

  if (db.tableExists("sessions")) {  // older stores have none
    SQLite::Statement sessions(db,
                               "SELECT command, device, created, wall_seconds, lanes, runs FROM sessions ORDER BY id");
    while (sessions.executeStep()) {
      Session session{sessions.getColumn(0).getString(),
                      sessions.getColumn(1).getString(),
                      sessions.getColumn(2).getString(),
                      sessions.getColumn(3).getDouble(),
                      {}};
      for (const nlohmann::json& lane : nlohmann::json::parse(sessions.getColumn(4).getString())) {
        session.lanes.push_back(
            {lane.at("lane"), lane.at("wall_seconds"), lane.at("device_seconds"), lane.at("evaluations")});
      }
      for (const nlohmann::json& run : nlohmann::json::parse(sessions.getColumn(5).getString())) {
        if (const auto at = index.find(run.get<std::int64_t>()); at != index.end())
          runs[at->second].sessions.push_back(session);
      }
    }
  }

  const auto audits = read_audits(db);
  SQLite::Statement records(
      db,
      "SELECT c.run_id, c.id, c.problem_id, p.level, r.protocol, r.device, r.verdict, r.speedup, "
      "r.peak_ratio, r.raises_peak, r.findings, p.number, p.name, c.path, c.sample, "
      "json_extract(r.record, '$.verdict_reason'), json_extract(r.record, '$.timing.speedup_ci[0]'), "
      "json_extract(r.record, '$.timing.speedup_ci[1]') FROM records r "
      "JOIN candidates c ON c.id = r.candidate_id JOIN problems p ON p.id = c.problem_id "
      "ORDER BY c.run_id, c.id, r.protocol, r.device");
  while (records.executeStep()) {
    Outcome o;
    o.candidate = records.getColumn(1).getInt64();
    o.problem = records.getColumn(2).getInt64();
    o.level = optional_column<int>(records.getColumn(3));
    o.protocol = records.getColumn(4).getString();
    o.device = records.getColumn(5).getString();
    o.verdict = records.getColumn(6).getString();
    o.speedup = optional_column<double>(records.getColumn(7));
    o.peak_ratio = optional_column<double>(records.getColumn(8));
    o.raises_peak = optional_column<bool>(records.getColumn(9));
    o.findings = parse_findings(records.getColumn(10).getString());
    o.problem_number = optional_column<int>(records.getColumn(11));
    o.problem_name = records.getColumn(12).getString();
    o.path = records.getColumn(13).getString();
    o.sample = optional_column<int>(records.getColumn(14));
    o.reason = records.getColumn(15).isNull() ? "" : records.getColumn(15).getString();
    o.speedup_ci_low = optional_column<double>(records.getColumn(16));
    o.speedup_ci_high = optional_column<double>(records.getColumn(17));
    if (const auto audit = audits.find({o.problem, o.device}); audit != audits.end()) o.audit = audit->second;
    runs[index.at(records.getColumn(0).getInt64())].outcomes.push_back(std::move(o));
  }
  return runs;
}

}  // namespace

bool has_uncured(const Audit& audit) {
  return std::any_of(audit.findings.begin(), audit.findings.end(), [](const AuditFinding& f) { return !f.cured; });
}

std::string problem_label(const Outcome& o) {
  return o.problem_number ? std::to_string(*o.problem_number) + "_" + o.problem_name : o.problem_name;
}

std::vector<RunResults> read_results(const std::string& path) {
  if (!std::filesystem::is_regular_file(path)) throw std::runtime_error("no results store at " + path);
  try {
    SQLite::Database db(path, SQLite::OPEN_READONLY, /*busy timeout ms*/ 10000);
    return read(db);
  } catch (const std::exception& error) {
    throw std::runtime_error("cannot read the store " + path + ": " + error.what());
  }
}

}  // namespace kbv::report
