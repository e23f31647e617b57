#include "kbv/serve/service.h"

#include <algorithm>
#include <iostream>
#include <map>
#include <optional>

#include "kbv/eval/compile.h"
#include "kbv/eval/evaluation.h"

namespace kbv::serve {

using nlohmann::json;

struct Service::Job {
  Submission submission;
  std::int64_t problem_id = 0, candidate_id = 0;
  std::promise<Answer> answer;
  std::promise<void> built_promise;
  std::shared_future<void> built = built_promise.get_future().share();
  Clock::time_point queued;
};

double seconds_since(std::chrono::steady_clock::time_point from) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - from).count();
}

Service::Service(ServiceConfig config, store::Store& store)
    : config_(std::move(config)), store_(store), filer_(store, config_.device) {
  if (config_.device == "cuda") {
    for (const std::string& gpu : config_.gpus) lanes_.push_back({gpu, {}, 0});
    for (int i = 0; i < std::max(1, config_.compile_jobs); ++i) threads_.emplace_back([this] { builder(); });
  } else {
    lanes_.push_back({"", {}, 0});
  }
  for (LaneSlot& lane : lanes_) threads_.emplace_back([this, &lane] { this->lane(lane); });
}

Service::~Service() { shutdown(); }

std::future<Answer> Service::submit(const Submission& s) {
  {
    std::lock_guard lock(mutex_);
    if (stopping_ || queue_.size() + reserved_ >= config_.queue_capacity) {
      ++refused_;
      throw Busy(stopping_
                     ? "kbv serve is stopping"
                     : "the queue is full (" + std::to_string(config_.queue_capacity) + " requests held); ask again");
    }
    ++reserved_;  // the slot is this request's while its rows are written
  }
  auto job = std::make_unique<Job>();
  job->submission = s;
  try {
    // A run's row is written once, a problem's again only when its file's content changed: each
    // write on this path is a commit the request waits for.
    std::int64_t run = 0;
    {
      std::lock_guard lock(mutex_);
      if (auto known = run_ids_.find(s.run_name); known != run_ids_.end()) run = known->second;
      if (auto known = problems_.find(s.problem.path);
          known != problems_.end() && known->second.first == s.problem.content_key) {
        job->problem_id = known->second.second;
      }
    }
    if (!run) {
      run = store_.run(s.run_name);
      std::lock_guard lock(mutex_);
      run_ids_[s.run_name] = run;
    }
    if (!job->problem_id) {
      job->problem_id = store_.problem(s.problem);
      std::lock_guard lock(mutex_);
      problems_[s.problem.path] = {s.problem.content_key, job->problem_id};
    }
    job->candidate_id = store_.candidate(run, job->problem_id, s.candidate);
  } catch (...) {
    {
      std::lock_guard lock(mutex_);
      --reserved_;
    }
    work_.notify_all();
    build_work_.notify_all();
    throw;
  }
  if (config_.device != "cuda") job->built_promise.set_value();  // on the CPU the lane's import builds it
  std::future<Answer> answer = job->answer.get_future();
  {
    std::lock_guard lock(mutex_);
    --reserved_;
    job->queued = Clock::now();
    if (config_.device == "cuda") to_build_.push_back(job.get());
    queue_.push_back(std::move(job));
  }
  work_.notify_all();
  build_work_.notify_one();
  return answer;
}

// Builds each queued candidate's kernels into the extension cache before a lane takes it, at the
// lowest CPU priority so a lane's timed calls never wait for a core behind a compiler.
void Service::builder() {
  for (;;) {
    Job* job = nullptr;
    {
      std::unique_lock lock(mutex_);
      build_work_.wait(lock, [&] { return !to_build_.empty() || (stopping_ && reserved_ == 0); });
      if (to_build_.empty()) return;
      job = to_build_.front();
      to_build_.pop_front();
    }
    eval::CompileRequest compile;
    compile.candidates = {job->submission.candidate.path};
    compile.device = config_.device;
    compile.background = true;
    compile.timeout_seconds = config_.compile_timeout_seconds;
    compile.cache_dir = config_.cache_dir;
    compile.launch = config_.launch;
    compile.done = [&](const eval::CompileResult& r) {
      store_.compiled(job->candidate_id, config_.device, r.outcome, r.seconds);
    };
    try {
      eval::compile_candidates(compile);
    } catch (const std::exception&) {
      // Not built ahead: the evaluation's import builds it, and a failure there is the candidate's verdict.
    }
    job->built_promise.set_value();  // the job may be gone once a lane has it: not touched after this
  }
}

lane::Item Service::item_of(const Job& job) {
  const Submission& s = job.submission;
  return {s.problem.path, s.problem.content_key, s.candidate.path, s.protocol, job.problem_id, job.candidate_id};
}

void Service::lane(LaneSlot& me) {
  lane::Lane mine({config_.device, me.gpu, config_.timeout_seconds, config_.compile_timeout_seconds, config_.cache_dir,
                   config_.launch, config_.warm_problems},
                  filer_, store_);
  // As in kbv run, each evaluation starts the next candidate's worker while its own untimed steps
  // run: the next request of the same problem, built, taken from the queue for this lane then.
  std::unique_ptr<Job> next;
  for (;;) {
    std::unique_ptr<Job> job = std::move(next);
    if (!job) {
      std::unique_lock lock(mutex_);
      work_.wait(lock, [&] { return !queue_.empty() || (stopping_ && reserved_ == 0); });
      if (queue_.empty()) return;
      // Built and warm first, then built, then warm, then the oldest.
      auto best = queue_.begin();
      int best_score = -1;
      for (auto it = queue_.begin(); it != queue_.end() && best_score < 3; ++it) {
        const bool built = (*it)->built.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
        const int score = 2 * built + static_cast<int>(mine.warm(item_of(**it)));
        if (score > best_score) best = it, best_score = score;
      }
      job = std::move(*best);
      queue_.erase(best);
      ++running_;
    }
    job->built.wait();
    const auto begun = Clock::now();
    const lane::Item item = item_of(*job);
    {
      std::lock_guard lock(mutex_);
      const std::string side = lane::Lane::side_key(item);
      const auto same = std::find_if(queue_.begin(), queue_.end(), [&](const std::unique_ptr<Job>& j) {
        return lane::Lane::side_key(item_of(*j)) == side &&
               j->built.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
      });
      if (same != queue_.end()) {
        next = std::move(*same);
        queue_.erase(same);
        ++running_;
      }
    }
    lane::Outcome outcome;
    try {
      outcome = mine.evaluate(item, next ? std::optional<lane::Item>(item_of(*next)) : std::nullopt);
    } catch (const eval::NoDevice& error) {  // filed as any failure: the service answers each request
      outcome.failure = error.what();
      try {
        store_.failure(item.candidate_id, item.protocol, config_.device, outcome.failure);
      } catch (const std::exception&) {
        // The answer below still says what failed.
      }
    }
    finish(me, mine, outcome.failure.empty());
    if (!outcome.failure.empty()) {
      job->answer.set_exception(std::make_exception_ptr(eval::EvalError(outcome.failure)));
      continue;
    }
    Answer answer;
    answer.record = std::move(outcome.record);
    answer.stored = outcome.stored;
    answer.queued_at = job->queued;
    answer.queued_seconds = std::chrono::duration<double>(begun - job->queued).count();
    answer.evaluation_seconds = seconds_since(begun);
    job->answer.set_value(std::move(answer));
  }
}

void Service::finish(LaneSlot& me, const lane::Lane& mine, bool evaluated) {
  std::lock_guard lock(mutex_);
  --running_;
  const auto now = Clock::now();
  finished_at_.push_back(now);
  while (!finished_at_.empty() && now - finished_at_.front() > std::chrono::minutes(1)) finished_at_.pop_front();
  me.use = mine.use();
  me.warm_problems = mine.warm_count();
  evaluated ? ++done_ : ++failed_;
}

json Service::metrics() const {
  std::lock_guard lock(mutex_);
  const double uptime = seconds_since(started_);
  const auto now = Clock::now();
  const auto last_minute = std::count_if(finished_at_.begin(), finished_at_.end(),
                                         [&](Clock::time_point t) { return now - t <= std::chrono::minutes(1); });
  json lanes = json::array();
  std::map<std::string, double> stage_seconds;
  for (const LaneSlot& lane : lanes_) {
    lanes.push_back({{"gpu", lane.gpu.empty() ? "cpu" : lane.gpu},
                     {"evaluations", lane.use.evaluations},
                     {"device_seconds", lane.use.device_seconds},
                     {"busy_share", uptime > 0 ? lane.use.device_seconds / uptime : 0.0},
                     {"warm_problems", lane.warm_problems}});
    for (const auto& [stage, seconds] : lane.use.stage_seconds) stage_seconds[stage] += seconds;
  }
  return {
      {"device", config_.device},
      {"uptime_seconds", uptime},
      {"queue", {{"depth", queue_.size() + reserved_}, {"capacity", config_.queue_capacity}, {"evaluating", running_}}},
      {"evaluations", {{"done", done_}, {"failed", failed_}, {"refused_busy", refused_}, {"last_minute", last_minute}}},
      {"lanes", lanes},
      {"stage_seconds", stage_seconds},
      {"stopping", stopping_}};
}

bool Service::stopping() const {
  std::lock_guard lock(mutex_);
  return stopping_;
}

void Service::shutdown() {
  std::lock_guard guard(shutdown_mutex_);
  if (joined_) return;
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  work_.notify_all();
  build_work_.notify_all();
  for (std::thread& t : threads_) t.join();
  joined_ = true;
  // The service's lanes, as kbv run's are kept: what it left the GPUs idle over its uptime.
  if (done_ == 0) return;
  std::vector<std::int64_t> runs;
  for (const auto& [name, id] : run_ids_) runs.push_back(id);
  const double uptime = seconds_since(started_);
  json lanes = json::array();
  for (const LaneSlot& lane : lanes_) {
    lanes.push_back({{"lane", lane.gpu.empty() ? "cpu" : lane.gpu},
                     {"wall_seconds", uptime},
                     {"device_seconds", lane.use.device_seconds},
                     {"evaluations", lane.use.evaluations}});
  }
  try {
    store_.session("serve", config_.device, runs, uptime, lanes);
  } catch (const std::exception& error) {  // every record is in already; only this summary is lost
    std::cerr << "kbv serve: cannot write the lanes' use to the store: " << error.what() << "\n";
  }
}

}  // namespace kbv::serve
