#include "kbv/run/runner.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <filesystem>
#include <fstream>
#include <cstdio>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "kbv/audit/auditor.h"
#include "kbv/eval/compile.h"
#include "kbv/eval/evaluation.h"
#include "kbv/eval/reference_side.h"
#include "kbv/protocol/record.h"
#include "kbv/run/progress.h"
#include "kbv/run/record_filer.h"

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

// Every pending evaluation through kbv serve on a Ray cluster, each answer filed as it comes: the
// problem and candidate go as text, so the nodes need no shared file system (each node times its
// own baselines). Returns the live nodes' lanes, as the store's sessions keep them.
json run_on_ray(const RunRequest& request, const std::vector<std::pair<std::string, std::string>>& order,
                const std::map<std::pair<std::string, std::string>, Group>& groups, store::Store& store, Progress& progress,
                RunTotals& totals) {
  progress.note("kbv: evaluating on the Ray cluster at " + request.ray->address + " (problems not audited)");
  std::vector<const Pending*> pending;
  std::vector<RayRequest> requests;
  for (const auto& key : order) {
    for (const Pending& p : groups.at(key).pending) {
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
  RecordFiler filer(store, request.device);
  json lanes = json::array();
  const auto file = [&](const json& line) {
    if (line.contains("lanes")) {
      lanes = line["lanes"];
      return;
    }
    const Pending& p = *pending.at(std::stoul(line.at("key").get<std::string>()));
    if (!line.contains("answer")) {
      const std::string failure = line.value("error", std::string("no answer"));
      store.failure(p.candidate_id, p.protocol, request.device, failure);
      ++totals.failed;
      progress.evaluated("failed", "failed  " + p.protocol + "  " + p.job->candidate.path + ": " + failure.substr(0, 300));
      return;
    }
    const json& record = line["answer"].at("record");
    filer.file(p.problem_id, p.candidate_id, p.protocol, record);
    ++totals.evaluated;
    totals.evaluate_seconds += line["answer"].value("evaluation_seconds", 0.0);
    ++totals.verdicts[record.value("verdict", std::string("?"))];
    for (const auto& [stage, seconds] : record["stage_seconds"].items()) totals.stage_seconds[stage] += seconds.get<double>();
    progress.evaluated(record.value("verdict", std::string("?")),
                       describe(p, record) + "  (" + line["answer"].value("node", std::string("?")) + ")");
  };
  evaluate_on_ray(*request.ray, requests, std::filesystem::temp_directory_path().string(), file);
  return lanes;
}

}  // namespace

RunTotals run(const RunRequest& request, store::Store& store) {
  const auto started = Clock::now();
  RunTotals totals;
  std::map<std::string, std::int64_t> run_ids;
  const auto run_id = [&](const std::string& name) {
    auto [at, added] = run_ids.emplace(name, 0);
    if (added) at->second = store.run(name);
    return at->second;
  };
  for (const Unmatched& u : request.discovery.unmatched) store.unmatched(run_id(u.run_name), u.path, u.reason);

  // What is left to do, grouped by (problem, protocol) in the discovery's order.
  std::vector<std::pair<std::string, std::string>> order;
  std::map<std::pair<std::string, std::string>, Group> groups;
  std::vector<std::string> to_build;
  std::map<std::string, std::vector<std::int64_t>> candidate_ids;  // by path, for the builds' rows
  for (const Job& job : request.discovery.jobs) {
    if (!job.device.empty() && job.device != request.device) {
      ++totals.other_device;
      continue;
    }
    const std::int64_t problem = store.problem(job.problem);
    const std::int64_t candidate = store.candidate(run_id(job.run_name), problem, job.candidate);
    bool needed = false;
    for (const std::string& protocol : request.protocols) {
      if (store.has_record(candidate, protocol, request.device)) {
        ++totals.already;
        continue;
      }
      const auto key = std::make_pair(job.problem.path, protocol);
      if (!groups.count(key)) order.push_back(key);
      groups[key].pending.push_back({&job, candidate, problem, protocol});
      needed = true;
    }
    if (needed) {
      if (!candidate_ids.count(job.candidate.path)) to_build.push_back(job.candidate.path);
      candidate_ids[job.candidate.path].push_back(candidate);
    }
  }
  size_t evaluations = 0;
  for (const auto& [key, group] : groups) evaluations += group.pending.size();
  Progress progress(evaluations, request.ray ? 0 : to_build.size(), request.terminal);
  if (totals.already) progress.note("kbv: " + std::to_string(totals.already) + " records already in the store, not redone");
  // The invocation's lanes into the store's sessions, once it has written a record.
  const auto keep_session = [&](const json& lanes) {
    totals.wall_seconds = std::chrono::duration<double>(Clock::now() - started).count();
    if (!totals.evaluated) return;
    std::vector<std::int64_t> runs;
    for (const auto& [name, id] : run_ids) runs.push_back(id);
    store.session("run", request.device, runs, totals.wall_seconds, lanes);
  };
  if (request.ray) {
    const json lanes = run_on_ray(request, order, groups, store, progress, totals);
    progress.finish();
    keep_session(lanes);
    return totals;
  }

  // Builds, on every core, in the order the lanes will want them.
  std::map<std::string, std::shared_future<void>> built;
  std::map<std::string, std::promise<void>> building;
  for (const std::string& path : to_build) built[path] = building[path].get_future().share();
  eval::CompileRequest compile;
  compile.candidates = to_build;
  compile.device = request.device;
  compile.jobs = request.compile_jobs;
  compile.background = request.device == "cuda";  // on the CPU, builds finish before any timing
  compile.timeout_seconds = request.compile_timeout_seconds;
  compile.cache_dir = request.cache_dir;
  compile.launch = request.launch;
  std::mutex build_mutex;
  std::set<std::string> finished;
  std::atomic<bool> stop_building = false;  // no device: the builds would serve no one
  compile.cancelled = [&] { return stop_building.load(); };
  compile.done = [&](const eval::CompileResult& result) {
    std::lock_guard lock(build_mutex);
    for (const std::int64_t id : candidate_ids[result.candidate]) store.compiled(id, request.device, result.outcome, result.seconds);
    totals.build_seconds += result.seconds;
    progress.compiled(result.candidate, result.outcome, result.seconds);
    // A build its source makes later with arguments that exist only at run time: built in the lane.
    for (const auto& missed : result.ahead.value("missed", json::array())) {
      progress.note("kbv: " + result.candidate + ": the build at line " + missed.at("line").dump() +
                    " is made when evaluated, not ahead (" + missed.at("why").get<std::string>() + ")");
    }
    building[result.candidate].set_value();
    finished.insert(result.candidate);
  };
  std::thread builder([&] {
    try {
      eval::compile_candidates(compile);
    } catch (const std::exception& error) {
      progress.note(std::string("kbv: building ahead stopped: ") + error.what() + " (candidates build when evaluated)");
    }
    std::lock_guard lock(build_mutex);  // no lane waits for a build that will not come
    for (auto& [path, promise] : building) {
      if (!finished.count(path)) promise.set_value();
    }
  });
  // On the CPU, builds and timing would share the cores: every build finishes before timing starts.
  if (request.device == "cpu") builder.join();

  std::mutex mutex;  // guards `claimed`, `audit_claimed` and the totals
  std::vector<bool> claimed(order.size(), false);
  size_t unclaimed = order.size();
  std::set<std::string> audit_claimed;  // problems audited (or being audited) by some lane
  std::exception_ptr no_device;         // set by the first lane to find no device: every lane stops
  // The problem's audit, once per content and device: the report marks problems whose defect the
  // verified protocol does not cure.
  const auto audit_problem = [&](const Pending& p, const eval::WorkerLaunch& launch) {
    {
      std::lock_guard lock(mutex);
      if (!audit_claimed.insert(p.job->problem.path).second) return;
    }
    if (store.has_audit(p.problem_id, p.job->problem.content_key, request.device)) return;
    audit::AuditRequest audit;
    audit.problems = {p.job->problem};
    audit.device = request.device;
    audit.timeout_seconds = request.timeout_seconds;
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
    store.add_audit(p.problem_id, p.job->problem.content_key, request.device, findings, result.error);
    {
      std::lock_guard lock(mutex);
      ++totals.audited;
      totals.uncured += uncured;
    }
    if (!result.error.empty()) {
      progress.note("kbv: audit of " + problem_label(p.job->problem) + " failed: " + result.error.substr(0, 200));
    } else if (!named.empty()) {  // a clean problem needs no line
      progress.note("kbv: audit of " + problem_label(p.job->problem) + ": " + named);
    }
  };
  RecordFiler filer(store, request.device);
  // A lane owns its workers from start to reaping: a worker dies with the thread that started it.
  const auto lane_work = [&](const std::string& gpu, RunTotals::Lane& mine) {
    eval::WorkerLaunch launch = request.launch;
    if (request.device == "cuda") launch.environment.emplace_back("CUDA_VISIBLE_DEVICES", gpu);
    using Key = std::pair<std::string, std::string>;
    // The first group in order whose candidates are built, else the first left: on a GPU the lane
    // evaluates what is ready (torch-only rewrites, builds found in the cache) while the builds of
    // the rest go on, instead of waiting for the first in order. On the CPU every build is done
    // before: the order is the discovery's.
    const auto claim = [&]() -> std::optional<Key> {
      std::lock_guard lock(mutex);
      if (unclaimed == 0 || no_device) return std::nullopt;
      const auto is_built = [&](size_t g) {
        return std::all_of(groups.at(order[g]).pending.begin(), groups.at(order[g]).pending.end(), [&](const Pending& p) {
          return built.at(p.job->candidate.path).wait_for(std::chrono::seconds(0)) == std::future_status::ready;
        });
      };
      size_t pick = order.size();
      for (size_t g = 0; g < order.size(); ++g) {
        if (claimed[g]) continue;
        if (pick == order.size()) pick = g;
        if (is_built(g)) {
          pick = g;
          break;
        }
      }
      claimed[pick] = true;
      --unclaimed;
      return order[pick];
    };
    const auto evaluation_of = [&](const Pending& p) {
      eval::EvalRequest evaluation;
      evaluation.problem = p.job->problem.path;
      evaluation.candidate = p.job->candidate.path;
      evaluation.device = request.device;
      evaluation.protocol = protocol::preset(p.protocol);
      evaluation.timeout_seconds = request.timeout_seconds;
      evaluation.compile_timeout_seconds = request.compile_timeout_seconds;
      evaluation.cache_dir = request.cache_dir;
      evaluation.launch = launch;
      return evaluation;
    };
    const auto reference_of = [&](const Pending& p) {
      return eval::ReferenceConfig{p.job->problem.path, request.device, protocol::preset(p.protocol),
                                   request.timeout_seconds, request.compile_timeout_seconds, launch};
    };
    // Across the lane's groups: the next group, claimed when this one's last evaluation starts, has
    // its reference side and first worker started beside that evaluation (eval::WorkerRelay).
    eval::WorkerRelay relay;
    for (std::optional<Key> key = claim(); key;) {
      const Group& group = groups.at(*key);
      std::optional<Key> following;
      std::unique_ptr<eval::ReferenceSide> reference = std::move(relay.reference_ahead);
      try {
        if (request.audit) audit_problem(group.pending.front(), launch);
      } catch (const eval::NoDevice&) {
        std::lock_guard lock(mutex);
        no_device = std::current_exception();
        stop_building = true;
        return;
      }
      for (size_t i = 0; i < group.pending.size(); ++i) {
        const Pending& p = group.pending[i];
        built.at(p.job->candidate.path).wait();
        const auto begun = Clock::now();
        json record;
        std::string failure;
        bool evaluating = false;  // from here a worker in the relay is the next candidate's
        try {
          if (!reference) reference = std::make_unique<eval::ReferenceSide>(reference_of(p));
          relay.next.reset();
          relay.next_reference.reset();
          if (i + 1 < group.pending.size()) {
            relay.next = evaluation_of(group.pending[i + 1]);
          } else if (!following && (following = claim())) {
            const Pending& first = groups.at(*following).pending.front();
            relay.next = evaluation_of(first);
            relay.next_reference = reference_of(first);
          }
          evaluating = true;
          record = protocol::to_json(eval::evaluate(evaluation_of(p), *reference, &relay));
          filer.file(p.problem_id, p.candidate_id, key->second, record);
        } catch (const eval::NoDevice&) {
          std::lock_guard lock(mutex);
          no_device = std::current_exception();
          stop_building = true;
          return;
        } catch (const std::exception& error) {  // the problem or the evaluator failed: no record
          failure = error.what();
          store.failure(p.candidate_id, key->second, request.device, failure);
          reference.reset();  // a failed reference worker serves no one; the next candidate starts another
          // A worker started for this candidate (its sandbox shows this one's files) serves no other.
          if (!evaluating) relay.ready.reset();
        }
        const double seconds = std::chrono::duration<double>(Clock::now() - begun).count();
        {
          std::lock_guard lock(mutex);
          totals.evaluate_seconds += seconds;
          if (failure.empty()) {
            ++totals.evaluated;
            ++totals.verdicts[record.value("verdict", std::string("?"))];
            for (const auto& [stage, stage_seconds] : record["stage_seconds"].items()) {
              totals.stage_seconds[stage] += stage_seconds.get<double>();
              if (protocol::device_stage(stage)) mine.device_seconds += stage_seconds.get<double>();
            }
            ++mine.evaluations;
          } else {
            ++totals.failed;
          }
        }
        if (failure.empty()) {
          progress.evaluated(record.value("verdict", std::string("?")), describe(p, record));
        } else {
          progress.evaluated("failed", "failed  " + p.protocol + "  " + p.job->candidate.path + ": " + failure.substr(0, 300));
        }
      }
      if (reference) {
        // Torn down beside the next group's untimed steps, reaped before its first timed call.
        reference->begin_shutdown();
        relay.leaving_reference = std::move(reference);
      }
      key = following ? following : claim();
    }
  };
  const auto lane = [&](const std::string& gpu) {
    RunTotals::Lane mine;
    const auto begun = Clock::now();
    lane_work(gpu, mine);
    mine.wall_seconds = std::chrono::duration<double>(Clock::now() - begun).count();
    std::lock_guard lock(mutex);
    totals.lanes[gpu.empty() ? "cpu" : gpu] = mine;
  };
  std::vector<std::thread> lanes;
  if (request.device == "cuda") {
    for (const std::string& gpu : request.gpus) lanes.emplace_back(lane, gpu);
  } else {
    lanes.emplace_back(lane, "");
  }
  for (std::thread& t : lanes) t.join();
  if (builder.joinable()) builder.join();
  progress.finish();
  if (no_device) std::rethrow_exception(no_device);
  json lane_use = json::array();
  for (const auto& [name, lane] : totals.lanes) {
    lane_use.push_back({{"lane", name}, {"wall_seconds", lane.wall_seconds}, {"device_seconds", lane.device_seconds},
                        {"evaluations", lane.evaluations}});
  }
  keep_session(lane_use);
  return totals;
}

}  // namespace kbv::run
