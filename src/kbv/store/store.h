// The results store: one SQLite file holding runs, problems, candidates, baselines, records and
// the environments they were measured in (schema in src/kbv/store/README.md). Writes are
// transactions, so a run killed at any point leaves every finished record in place exactly once;
// a rerun asks has_record() and skips what is there.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <SQLiteCpp/Database.h>
#include <nlohmann/json.hpp>

namespace kbv::store {

struct ProblemInfo {
  std::string path;           // absolute
  std::optional<int> level;   // KernelBench's level{L} folder, when it is in one
  std::optional<int> number;  // the leading {id}_ of its file name
  std::string name;           // the file name without id and extension
  std::string content_key;
};

struct CandidateInfo {
  std::string path;  // absolute
  std::optional<int> sample;
  std::string content_key;
};

class Store {
 public:
  // Opens (creating if needed) the store at `path`. Throws std::runtime_error with the path on failure.
  explicit Store(const std::string& path);

  std::int64_t run(const std::string& name);              // the run's id, created on first use
  std::int64_t environment(const nlohmann::json& facts);  // identical facts share one row
  std::int64_t problem(const ProblemInfo& problem);
  std::int64_t candidate(std::int64_t run, std::int64_t problem, const CandidateInfo& candidate);
  // A file the run could not use (unreadable, unmatched to a problem): listed, never dropped silently.
  void unmatched(std::int64_t run, const std::string& path, const std::string& reason);
  void compiled(std::int64_t candidate, const std::string& device, const std::string& outcome, double seconds);
  // A baseline measurement (the record's timing.baseline JSON), shared by the records that cite it.
  std::int64_t baseline(std::int64_t problem, const std::string& protocol, const std::string& device,
                        std::int64_t environment, const nlohmann::json& timing, std::optional<std::int64_t> peak_bytes);

  // An evaluation that could not be carried out (the problem or the evaluator failed): no record,
  // so a rerun tries again.
  void failure(std::int64_t candidate, const std::string& protocol, const std::string& device,
               const std::string& message);

  // kbv audit's findings of a problem's content on a device (`findings`: [{id, cured_by_verified,
  // evidence}]), kept once; `error` when it could not be audited.
  bool has_audit(std::int64_t problem, const std::string& content_key, const std::string& device);
  void add_audit(std::int64_t problem, const std::string& content_key, const std::string& device,
                 const nlohmann::json& findings, const std::string& error);

  // One kbv run or kbv serve invocation that wrote records of `runs`: its wall and, per lane,
  // `lanes` as [{lane, wall_seconds, device_seconds, evaluations}] (the lanes' device busy share).
  void session(const std::string& command, const std::string& device, const std::vector<std::int64_t>& runs,
               double wall_seconds, const nlohmann::json& lanes);

  bool has_record(std::int64_t candidate, const std::string& protocol, const std::string& device);
  // Stores `record` (kbv eval's JSON record) with its indexed columns; a second record for the
  // same (candidate, protocol, device) is refused (returns false) and leaves the first.
  bool add_record(std::int64_t candidate, const std::string& protocol, const std::string& device,
                  std::optional<std::int64_t> baseline, std::int64_t environment, const nlohmann::json& record);

  SQLite::Database& database() { return db_; }  // for readers (kbv report)

 private:
  std::mutex mutex_;  // one writer at a time: the run's lanes share the store
  SQLite::Database db_;
};

}  // namespace kbv::store
