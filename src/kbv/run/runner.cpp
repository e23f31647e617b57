#include "kbv/run/runner.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "kbv/audit/auditor.h"
#include "kbv/eval/compile.h"
#include "kbv/eval/evaluation.h"
#include "kbv/lane/lane.h"
#include "kbv/protocol/record.h"
#include "kbv/run/builds_ahead.h"
#include "kbv/run/progress.h"

namespace kbv::run {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

// One evaluation still to do.
struct Pending {
  const Job* job;
  std::int64_t candidate_id, problem_id;
  std::string protocol;
};

// The candidates of one problem under one protocol: one reference side serves them all.
struct Group {
  std::vector<Pending> pending;
};

std::string problem_label(const store::ProblemInfo& p) {
  return p.level ? "level" + std::to_string(*p.level) + "/" + p.name : p.name;
}

std::string describe(const Pending& p, const json& record) {
  std::string where = problem_label(p.job->problem);
  if (p.job->candidate.sample) where += " sample " + std::to_string(*p.job->candidate.sample);
  std::string speed;
  if (record.contains("timing") && record["timing"].contains("speedup")) {
    char text[32];
    std::snprintf(text, sizeof text, " %.2fx", record["timing"]["speedup"].get<double>());
    speed = text;
  }
  return record.value("verdict", std::string("?")) + speed + "  " + p.protocol + "  " + p.job->run_name + "  " + where +
         "  " + p.job->candidate.path;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

using Key = std::pair<std::string, std::string>;  // (problem path, protocol)

// One kbv run: what is left to do, in (problem, protocol) groups; the builds ahead, on every core;
// one lane per GPU taking whole groups; the totals and the store's session.
class Runner {
 public:
  Runner(const RunRequest& request, store::Store& store)
      : request_(request), store_(store), filer_(store, request.device) {}
  RunTotals run();

 private:
  std::int64_t run_id(const std::string& name);
  void plan();
  void keep_session(const json& lanes);
  json run_on_ray();
  void build_ahead();
  std::optional<Key> claim();
  void audit_problem(const Pending& p, const eval::WorkerLaunch& launch);
  void lane(const std::string& gpu);
  void evaluate_groups(lane::Lane& mine);
  // Into the totals and the progress line (`where`: the node that answered, under --ray).
  void count(const Pending& p, const lane::Outcome& outcome, const std::string& where = "");
  void stop_for_no_device();

  const RunRequest& request_;
  store::Store& store_;
  lane::RecordFiler filer_;
  const Clock::time_point started_ = Clock::now();
  std::map<std::string, std::int64_t> run_ids_;
  std::vector<Key> order_;  // the discovery's
  std::map<Key, Group> groups_;
  std::vector<std::string> to_build_;
  std::map<std::string, std::vector<std::int64_t>> candidate_ids_;  // by path, for the builds' rows
  std::optional<Progress> progress_;

  std::optional<BuildsAhead> builds_;  // its done callback alone writes the build totals

  std::mutex mutex_;  // everything below
  RunTotals totals_;
  std::vector<bool> claimed_;
  std::size_t unclaimed_ = 0;
  std::set<std::string> audit_claimed_;  // problems audited (or being audited) by some lane
  std::exception_ptr no_device_;         // set by the first lane to find no device: every lane stops
};

std::int64_t Runner::run_id(const std::string& name) {
  auto [at, added] = run_ids_.emplace(name, 0);
  if (added) at->second = store_.run(name);
  return at->second;
}

// What is left to do, grouped by (problem, protocol) in the discovery's order.
void Runner::plan() {
  for (const Unmatched& u : request_.discovery.unmatched) store_.unmatched(run_id(u.run_name), u.path, u.reason);
  for (const Job& job : request_.discovery.jobs) {
    if (!job.device.empty() && job.device != request_.device) {
      ++totals_.other_device;
      continue;
    }
    const std::int64_t problem = store_.problem(job.problem);
    const std::int64_t candidate = store_.candidate(run_id(job.run_name), problem, job.candidate);
    bool needed = false;
    for (const std::string& protocol : request_.protocols) {
      if (store_.has_record(candidate, protocol, request_.device)) {
        ++totals_.already;
        continue;
      }
      const Key key{job.problem.path, protocol};
      if (!groups_.count(key)) order_.push_back(key);
      groups_[key].pending.push_back({&job, candidate, problem, protocol});
      needed = true;
    }
    if (needed) {
      if (!candidate_ids_.count(job.candidate.path)) to_build_.push_back(job.candidate.path);
      candidate_ids_[job.candidate.path].push_back(candidate);
    }
  }
  claimed_.assign(order_.size(), false);
  unclaimed_ = order_.size();
}

// The invocation's lanes into the store's sessions, once it has written a record.
void Runner::keep_session(const json& lanes) {
  totals_.wall_seconds = std::chrono::duration<double>(Clock::now() - started_).count();
  if (!totals_.evaluated) return;
  std::vector<std::int64_t> runs;
  for (const auto& [name, id] : run_ids_) runs.push_back(id);
  store_.session("run", request_.device, runs, totals_.wall_seconds, lanes);
}

// Every pending evaluation through kbv serve on a Ray cluster, each answer filed as it comes: the
// problem and candidate go as text, so the nodes need no shared file system (each node times its
// own baselines). Returns the live nodes' lanes, as the store's sessions keep them.
json Runner::run_on_ray() {
  progress_->note("kbv: evaluating on the Ray cluster at " + request_.ray->address + " (problems not audited)");
  std::vector<const Pending*> pending;
  std::vector<RayRequest> requests;
  for (const Key& key : order_) {
    for (const Pending& p : groups_.at(key).pending) {
      json body = {{"problem_source", slurp(p.job->problem.path)},
                   {"problem_name", std::filesystem::path(p.job->problem.path).filename().string()},
                   {"candidate_source", slurp(p.job->candidate.path)},
                   {"protocol", p.protocol},
                   {"run", p.job->run_name}};
      if (p.job->problem.level) body["level"] = *p.job->problem.level;
      if (p.job->candidate.sample) body["sample"] = *p.job->candidate.sample;
      requests.push_back({std::to_string(pending.size()), std::move(body)});
      pending.push_back(&p);
    }
  }
  json lanes = json::array();
  const auto file = [&](const json& line) {
    if (line.contains("lanes")) {
      lanes = line["lanes"];
      return;
    }
    const Pending& p = *pending.at(std::stoul(line.at("key").get<std::string>()));
    lane::Outcome outcome;
    if (!line.contains("answer")) {
      outcome.failure = line.value("error", std::string("no answer"));
      store_.failure(p.candidate_id, p.protocol, request_.device, outcome.failure);
    } else {
      outcome.record = line["answer"].at("record");
      outcome.seconds = line["answer"].value("evaluation_seconds", 0.0);
      outcome.stored = filer_.file(p.problem_id, p.candidate_id, p.protocol, outcome.record);
    }
    count(p, outcome, "  (" + line.value("answer", json::object()).value("node", std::string("?")) + ")");
  };
  evaluate_on_ray(*request_.ray, requests, std::filesystem::temp_directory_path().string(), file);
  return lanes;
}

// Builds, on every core, in the order the lanes will want them; on the CPU all of them before any
// timing (they would share the cores the timing measures).
void Runner::build_ahead() {
  eval::CompileRequest compile;
  compile.candidates = to_build_;
  compile.device = request_.device;
  compile.jobs = request_.compile_jobs;
  compile.background = request_.device == "cuda";  // on the CPU, builds finish before any timing
  compile.timeout_seconds = request_.compile_timeout_seconds;
  compile.cache_dir = request_.cache_dir;
  compile.launch = request_.launch;
  const auto done = [this](const eval::CompileResult& result) {
    for (const std::int64_t id : candidate_ids_[result.candidate])
      store_.compiled(id, request_.device, result.outcome, result.seconds);
    totals_.build_seconds += result.seconds;
    progress_->compiled(result.candidate, result.outcome, result.seconds);
    // A build its source makes later with arguments that exist only at run time: built in the lane.
    for (const auto& missed : result.ahead.value("missed", json::array())) {
      progress_->note("kbv: " + result.candidate + ": the build at line " + missed.at("line").dump() +
                      " is made when evaluated, not ahead (" + missed.at("why").get<std::string>() + ")");
    }
  };
  builds_.emplace(std::move(compile), done, [this](const std::string& line) { progress_->note(line); });
}

// The first group in order whose candidates are built, else the first left: on a GPU the lane
// evaluates what is ready (torch-only rewrites, builds found in the cache) while the builds of the
// rest go on, instead of waiting for the first in order. On the CPU every build is done before:
// the order is the discovery's.
std::optional<Key> Runner::claim() {
  std::lock_guard lock(mutex_);
  if (unclaimed_ == 0 || no_device_) return std::nullopt;
  const auto is_built = [&](size_t g) {
    return std::all_of(groups_.at(order_[g]).pending.begin(), groups_.at(order_[g]).pending.end(),
                       [&](const Pending& p) { return builds_->ready(p.job->candidate.path); });
  };
  size_t pick = order_.size();
  for (size_t g = 0; g < order_.size(); ++g) {
    if (claimed_[g]) continue;
    if (pick == order_.size()) pick = g;
    if (is_built(g)) {
      pick = g;
      break;
    }
  }
  claimed_[pick] = true;
  --unclaimed_;
  return order_[pick];
}

// The problem's audit, once per content and device: the report marks problems whose defect the
// verified protocol does not cure.
void Runner::audit_problem(const Pending& p, const eval::WorkerLaunch& launch) {
  {
    std::lock_guard lock(mutex_);
    if (!audit_claimed_.insert(p.job->problem.path).second) return;
  }
  if (store_.has_audit(p.problem_id, p.job->problem.content_key, request_.device)) return;
  audit::AuditRequest audit;
  audit.problems = {p.job->problem};
  audit.device = request_.device;
  audit.timeout_seconds = request_.timeout_seconds;
  audit.launch = launch;
  const audit::ProblemAudit result = audit::audit_problems(audit).at(0);
  json findings = json::array();
  std::string named;
  bool uncured = false;
  for (const audit::AuditFinding& f : result.findings) {
    findings.push_back({{"id", f.id}, {"cured_by_verified", f.cured}, {"evidence", f.evidence}});
    named += (named.empty() ? "" : ", ") + f.id + (f.cured ? " (cured)" : " (NOT cured)");
    uncured = uncured || !f.cured;
  }
  store_.add_audit(p.problem_id, p.job->problem.content_key, request_.device, findings, result.error);
  {
    std::lock_guard lock(mutex_);
    ++totals_.audited;
    totals_.uncured += uncured;
  }
  if (!result.error.empty()) {
    progress_->note("kbv: audit of " + problem_label(p.job->problem) + " failed: " + result.error.substr(0, 200));
  } else if (!named.empty()) {  // a clean problem needs no line
    progress_->note("kbv: audit of " + problem_label(p.job->problem) + ": " + named);
  }
}

void Runner::stop_for_no_device() {
  std::lock_guard lock(mutex_);
  no_device_ = std::current_exception();
  builds_->stop();
}

void Runner::count(const Pending& p, const lane::Outcome& outcome, const std::string& where) {
  {
    std::lock_guard lock(mutex_);
    totals_.evaluate_seconds += outcome.seconds;
    if (outcome.failure.empty()) {
      ++totals_.evaluated;
      ++totals_.verdicts[outcome.record.value("verdict", std::string("?"))];
      for (const auto& [stage, seconds] : outcome.record["stage_seconds"].items())
        totals_.stage_seconds[stage] += seconds.get<double>();
    } else {
      ++totals_.failed;
    }
  }
  if (outcome.failure.empty()) {
    progress_->evaluated(outcome.record.value("verdict", std::string("?")), describe(p, outcome.record) + where);
  } else {
    progress_->evaluated(
        "failed", "failed  " + p.protocol + "  " + p.job->candidate.path + ": " + outcome.failure.substr(0, 300));
  }
}

lane::Item item_of(const Pending& p) {
  return {p.job->problem.path, p.job->problem.content_key, p.job->candidate.path, p.protocol, p.problem_id,
          p.candidate_id};
}

// Whole groups, one after another: the lane keeps a group's reference side for all of its
// candidates and lets it go after the last.
void Runner::evaluate_groups(lane::Lane& mine) {
  for (std::optional<Key> key = claim(); key;) {
    const Group& group = groups_.at(*key);
    std::optional<Key> following;
    try {
      if (request_.audit) audit_problem(group.pending.front(), mine.launch());
    } catch (const eval::NoDevice&) {
      return stop_for_no_device();
    }
    for (size_t i = 0; i < group.pending.size(); ++i) {
      const Pending& p = group.pending[i];
      builds_->wait(p.job->candidate.path);
      // The next candidate's worker starts beside this evaluation; after a group's last, the next
      // group's first, with its reference side.
      std::optional<lane::Item> next;
      if (i + 1 < group.pending.size()) {
        next = item_of(group.pending[i + 1]);
      } else if (!following && (following = claim())) {
        next = item_of(groups_.at(*following).pending.front());
      }
      try {
        count(p, mine.evaluate(item_of(p), next));
      } catch (const eval::NoDevice&) {
        return stop_for_no_device();
      }
    }
    mine.release(item_of(group.pending.front()));
    key = following ? following : claim();
  }
}

void Runner::lane(const std::string& gpu) {
  const auto begun = Clock::now();
  lane::Lane mine({request_.device, gpu, request_.timeout_seconds, request_.compile_timeout_seconds, request_.cache_dir,
                   request_.launch, 1},
                  filer_, store_);
  evaluate_groups(mine);
  const lane::LaneUse use = mine.use();
  std::lock_guard lock(mutex_);
  totals_.lanes[gpu.empty() ? "cpu" : gpu] = {std::chrono::duration<double>(Clock::now() - begun).count(),
                                              use.device_seconds, use.evaluations};
}

RunTotals Runner::run() {
  plan();
  size_t evaluations = 0;
  for (const auto& [key, group] : groups_) evaluations += group.pending.size();
  progress_.emplace(evaluations, request_.ray ? 0 : to_build_.size(), request_.terminal);
  if (totals_.already)
    progress_->note("kbv: " + std::to_string(totals_.already) + " records already in the store, not redone");
  if (request_.ray) {
    const json lanes = run_on_ray();
    progress_->finish();
    keep_session(lanes);
    return totals_;
  }
  build_ahead();
  std::vector<std::thread> lanes;
  if (request_.device == "cuda") {
    for (const std::string& gpu : request_.gpus) lanes.emplace_back([this, gpu] { lane(gpu); });
  } else {
    lanes.emplace_back([this] { lane(""); });
  }
  for (std::thread& t : lanes) t.join();
  builds_->join();
  progress_->finish();
  if (no_device_) std::rethrow_exception(no_device_);
  json lane_use = json::array();
  for (const auto& [name, lane] : totals_.lanes) {
    lane_use.push_back({{"lane", name},
                        {"wall_seconds", lane.wall_seconds},
                        {"device_seconds", lane.device_seconds},
                        {"evaluations", lane.evaluations}});
  }
  keep_session(lane_use);
  return totals_;
}

}  // namespace

RunTotals run(const RunRequest& request, store::Store& store) { return Runner(request, store).run(); }

}  // namespace kbv::run
