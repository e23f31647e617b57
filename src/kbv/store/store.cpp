#include "kbv/store/store.h"

#include <chrono>
#include <ctime>
#include <functional>
#include <stdexcept>

#include <SQLiteCpp/Statement.h>
#include <SQLiteCpp/Transaction.h>

namespace kbv::store {
namespace {

using nlohmann::json;

constexpr int kSchemaVersion = 1;

// The schema (README.md beside this file says what each column means).
constexpr const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS runs (
  id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, created TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS environments (
  id INTEGER PRIMARY KEY, facts TEXT NOT NULL UNIQUE);
CREATE TABLE IF NOT EXISTS problems (
  id INTEGER PRIMARY KEY, path TEXT NOT NULL UNIQUE, level INTEGER, number INTEGER, name TEXT NOT NULL,
  content_key TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS candidates (
  id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL REFERENCES runs(id),
  problem_id INTEGER NOT NULL REFERENCES problems(id), path TEXT NOT NULL, sample INTEGER,
  content_key TEXT NOT NULL, UNIQUE (run_id, path));
CREATE TABLE IF NOT EXISTS unmatched (
  run_id INTEGER NOT NULL REFERENCES runs(id), path TEXT NOT NULL, reason TEXT NOT NULL, UNIQUE (run_id, path));
CREATE TABLE IF NOT EXISTS compiles (
  candidate_id INTEGER NOT NULL REFERENCES candidates(id), device TEXT NOT NULL, outcome TEXT NOT NULL,
  seconds REAL NOT NULL, created TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS baselines (
  id INTEGER PRIMARY KEY, problem_id INTEGER NOT NULL REFERENCES problems(id), protocol TEXT NOT NULL, device TEXT NOT NULL,
  environment_id INTEGER NOT NULL REFERENCES environments(id), seconds REAL NOT NULL, peak_bytes INTEGER,
  timing TEXT NOT NULL, created TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS records (
  id INTEGER PRIMARY KEY, candidate_id INTEGER NOT NULL REFERENCES candidates(id),
  protocol TEXT NOT NULL, device TEXT NOT NULL, baseline_id INTEGER REFERENCES baselines(id),
  environment_id INTEGER NOT NULL REFERENCES environments(id),
  verdict TEXT NOT NULL, speedup REAL, baseline_ms REAL, candidate_ms REAL, peak_ratio REAL, raises_peak INTEGER,
  findings TEXT NOT NULL, wall_seconds REAL NOT NULL, record TEXT NOT NULL, created TEXT NOT NULL,
  UNIQUE (candidate_id, protocol, device));
CREATE TABLE IF NOT EXISTS failures (
  candidate_id INTEGER NOT NULL REFERENCES candidates(id), protocol TEXT NOT NULL, device TEXT NOT NULL,
  message TEXT NOT NULL, created TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS audits (
  problem_id INTEGER NOT NULL REFERENCES problems(id), content_key TEXT NOT NULL, device TEXT NOT NULL,
  findings TEXT NOT NULL, uncured TEXT NOT NULL, error TEXT, created TEXT NOT NULL,
  UNIQUE (problem_id, content_key, device));
CREATE TABLE IF NOT EXISTS sessions (
  id INTEGER PRIMARY KEY, command TEXT NOT NULL, device TEXT NOT NULL, runs TEXT NOT NULL, wall_seconds REAL NOT NULL,
  lanes TEXT NOT NULL, created TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS records_by_verdict ON records (protocol, device, verdict);
CREATE INDEX IF NOT EXISTS candidates_by_run ON candidates (run_id, problem_id);
)sql";

std::string now_utc() {
  const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return text;
}

template <typename T>
void bind_optional(SQLite::Statement& statement, int index, const std::optional<T>& value) {
  if (value) {
    statement.bind(index, *value);
  } else {
    statement.bind(index);  // NULL
  }
}

std::optional<double> number_at(const json& object, const char* key) {
  if (object.is_object() && object.contains(key) && object[key].is_number()) return object[key].get<double>();
  return std::nullopt;
}

std::int64_t id_of(SQLite::Database& db, const std::string& query,
                   const std::function<void(SQLite::Statement&)>& bind) {
  SQLite::Statement select(db, query);
  bind(select);
  if (!select.executeStep()) throw std::logic_error("store: no row for " + query);
  return select.getColumn(0).getInt64();
}

}  // namespace

Store::Store(const std::string& path) try
    : db_(path, SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE, /*busy timeout ms*/ 10000) {
  // WAL: a reader (kbv report) never blocks the run, and a killed writer loses only its open transaction.
  db_.exec("PRAGMA journal_mode = WAL; PRAGMA foreign_keys = ON;");
  SQLite::Transaction transaction(db_);
  db_.exec(kSchema);
  SQLite::Statement version(db_, "INSERT OR IGNORE INTO meta (key, value) VALUES ('schema_version', ?)");
  version.bind(1, std::to_string(kSchemaVersion));
  version.exec();
  transaction.commit();
  SQLite::Statement check(db_, "SELECT value FROM meta WHERE key = 'schema_version'");
  check.executeStep();
  if (check.getColumn(0).getString() != std::to_string(kSchemaVersion)) {
    throw std::runtime_error("schema version " + check.getColumn(0).getString() + ", this kbv writes " +
                             std::to_string(kSchemaVersion));
  }
} catch (const SQLite::Exception& error) {
  throw std::runtime_error("cannot open the store " + path + ": " + error.what());
}

std::int64_t Store::run(const std::string& name) {
  std::lock_guard lock(mutex_);
  SQLite::Statement insert(db_, "INSERT OR IGNORE INTO runs (name, created) VALUES (?, ?)");
  insert.bind(1, name);
  insert.bind(2, now_utc());
  insert.exec();
  return id_of(db_, "SELECT id FROM runs WHERE name = ?", [&](SQLite::Statement& s) { s.bind(1, name); });
}

std::int64_t Store::environment(const json& facts) {
  std::lock_guard lock(mutex_);
  const std::string text = facts.dump();
  SQLite::Statement insert(db_, "INSERT OR IGNORE INTO environments (facts) VALUES (?)");
  insert.bind(1, text);
  insert.exec();
  return id_of(db_, "SELECT id FROM environments WHERE facts = ?", [&](SQLite::Statement& s) { s.bind(1, text); });
}

std::int64_t Store::problem(const ProblemInfo& p) {
  std::lock_guard lock(mutex_);
  // A problem file edited since an earlier run keeps its row: its new content key is written.
  SQLite::Statement upsert(db_,
                           "INSERT INTO problems (path, level, number, name, content_key) VALUES (?, ?, ?, ?, ?) "
                           "ON CONFLICT (path) DO UPDATE SET content_key = excluded.content_key");
  upsert.bind(1, p.path);
  bind_optional(upsert, 2, p.level);
  bind_optional(upsert, 3, p.number);
  upsert.bind(4, p.name);
  upsert.bind(5, p.content_key);
  upsert.exec();
  return id_of(db_, "SELECT id FROM problems WHERE path = ?", [&](SQLite::Statement& s) { s.bind(1, p.path); });
}

std::int64_t Store::candidate(std::int64_t run, std::int64_t problem, const CandidateInfo& c) {
  std::lock_guard lock(mutex_);
  SQLite::Statement insert(db_,
                           "INSERT OR IGNORE INTO candidates (run_id, problem_id, path, sample, content_key) "
                           "VALUES (?, ?, ?, ?, ?)");
  insert.bind(1, run);
  insert.bind(2, problem);
  insert.bind(3, c.path);
  bind_optional(insert, 4, c.sample);
  insert.bind(5, c.content_key);
  insert.exec();
  return id_of(db_, "SELECT id FROM candidates WHERE run_id = ? AND path = ?", [&](SQLite::Statement& s) {
    s.bind(1, run);
    s.bind(2, c.path);
  });
}

void Store::unmatched(std::int64_t run, const std::string& path, const std::string& reason) {
  std::lock_guard lock(mutex_);
  SQLite::Statement insert(db_, "INSERT OR REPLACE INTO unmatched (run_id, path, reason) VALUES (?, ?, ?)");
  insert.bind(1, run);
  insert.bind(2, path);
  insert.bind(3, reason);
  insert.exec();
}

void Store::compiled(std::int64_t candidate, const std::string& device, const std::string& outcome, double seconds) {
  std::lock_guard lock(mutex_);
  SQLite::Statement insert(
      db_, "INSERT INTO compiles (candidate_id, device, outcome, seconds, created) VALUES (?, ?, ?, ?, ?)");
  insert.bind(1, candidate);
  insert.bind(2, device);
  insert.bind(3, outcome);
  insert.bind(4, seconds);
  insert.bind(5, now_utc());
  insert.exec();
}

std::int64_t Store::baseline(std::int64_t problem, const std::string& protocol, const std::string& device,
                             std::int64_t environment, const json& timing, std::optional<std::int64_t> peak_bytes) {
  std::lock_guard lock(mutex_);
  SQLite::Statement insert(
      db_,
      "INSERT INTO baselines (problem_id, protocol, device, environment_id, seconds, peak_bytes, timing, created) "
      "VALUES (?, ?, ?, ?, ?, ?, ?, ?)");
  insert.bind(1, problem);
  insert.bind(2, protocol);
  insert.bind(3, device);
  insert.bind(4, environment);
  insert.bind(5, timing.value("seconds", 0.0));
  bind_optional(insert, 6, peak_bytes);
  insert.bind(7, timing.dump());
  insert.bind(8, now_utc());
  insert.exec();
  return db_.getLastInsertRowid();
}

void Store::session(const std::string& command, const std::string& device, const std::vector<std::int64_t>& runs,
                    double wall_seconds, const json& lanes) {
  std::lock_guard lock(mutex_);
  SQLite::Statement insert(
      db_, "INSERT INTO sessions (command, device, runs, wall_seconds, lanes, created) VALUES (?, ?, ?, ?, ?, ?)");
  insert.bind(1, command);
  insert.bind(2, device);
  insert.bind(3, json(runs).dump());
  insert.bind(4, wall_seconds);
  insert.bind(5, lanes.dump());
  insert.bind(6, now_utc());
  insert.exec();
}

void Store::failure(std::int64_t candidate, const std::string& protocol, const std::string& device,
                    const std::string& message) {
  std::lock_guard lock(mutex_);
  SQLite::Statement insert(
      db_, "INSERT INTO failures (candidate_id, protocol, device, message, created) VALUES (?, ?, ?, ?, ?)");
  insert.bind(1, candidate);
  insert.bind(2, protocol);
  insert.bind(3, device);
  insert.bind(4, message);
  insert.bind(5, now_utc());
  insert.exec();
}

bool Store::has_audit(std::int64_t problem, const std::string& content_key, const std::string& device) {
  std::lock_guard lock(mutex_);
  SQLite::Statement select(db_, "SELECT 1 FROM audits WHERE problem_id = ? AND content_key = ? AND device = ?");
  select.bind(1, problem);
  select.bind(2, content_key);
  select.bind(3, device);
  return select.executeStep();
}

void Store::add_audit(std::int64_t problem, const std::string& content_key, const std::string& device,
                      const json& findings, const std::string& error) {
  std::lock_guard lock(mutex_);
  std::string uncured;
  for (const json& f : findings) {
    if (!f.value("cured_by_verified", false)) uncured += (uncured.empty() ? "" : " ") + f.value("id", std::string("?"));
  }
  SQLite::Statement insert(
      db_,
      "INSERT OR IGNORE INTO audits (problem_id, content_key, device, findings, uncured, error, created) "
      "VALUES (?, ?, ?, ?, ?, ?, ?)");
  insert.bind(1, problem);
  insert.bind(2, content_key);
  insert.bind(3, device);
  insert.bind(4, findings.dump());
  insert.bind(5, uncured);
  if (error.empty()) {
    insert.bind(6);
  } else {
    insert.bind(6, error);
  }
  insert.bind(7, now_utc());
  insert.exec();
}

bool Store::has_record(std::int64_t candidate, const std::string& protocol, const std::string& device) {
  std::lock_guard lock(mutex_);
  SQLite::Statement select(db_, "SELECT 1 FROM records WHERE candidate_id = ? AND protocol = ? AND device = ?");
  select.bind(1, candidate);
  select.bind(2, protocol);
  select.bind(3, device);
  return select.executeStep();
}

bool Store::add_record(std::int64_t candidate, const std::string& protocol, const std::string& device,
                       std::optional<std::int64_t> baseline, std::int64_t environment, const json& record) {
  std::lock_guard lock(mutex_);
  const json& timing = record.value("timing", json::object());
  const json& memory = record.value("memory", json::object());
  std::string findings;
  for (const json& f : record.value("findings", json::array())) {
    findings +=
        (findings.empty() ? "" : " ") + f.value("id", std::string("?")) + ":" + f.value("severity", std::string("?"));
  }
  SQLite::Statement insert(
      db_,
      "INSERT OR IGNORE INTO records (candidate_id, protocol, device, baseline_id, environment_id, verdict, "
      "speedup, baseline_ms, candidate_ms, peak_ratio, raises_peak, findings, wall_seconds, record, created) "
      "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  insert.bind(1, candidate);
  insert.bind(2, protocol);
  insert.bind(3, device);
  bind_optional(insert, 4, baseline);
  insert.bind(5, environment);
  insert.bind(6, record.value("verdict", std::string("?")));
  bind_optional(insert, 7, number_at(timing, "speedup"));
  bind_optional(insert, 8, number_at(timing, "baseline_ms"));
  bind_optional(insert, 9, number_at(timing, "candidate_ms"));
  bind_optional(insert, 10, number_at(memory, "peak_ratio"));
  if (memory.contains("raises_peak")) {
    insert.bind(11, memory["raises_peak"].get<bool>() ? 1 : 0);
  } else {
    insert.bind(11);
  }
  insert.bind(12, findings);
  insert.bind(13, record.value("wall_seconds", 0.0));
  insert.bind(14, record.dump());
  insert.bind(15, now_utc());
  return insert.exec() == 1;
}

}  // namespace kbv::store
