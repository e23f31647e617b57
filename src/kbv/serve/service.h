// kbv serve's evaluator: a bounded queue in front of one lane per GPU (one on the CPU). Each lane
// keeps the reference sides of its latest problems warm (their workers started, their baselines
// timed once), takes first the queued requests for a problem it has warm, and starts the next
// one's worker while it evaluates (as kbv run's lanes); on the GPU each candidate is built ahead on
// the CPU cores while it waits. Every evaluation is kbv eval's,
// sandbox and verdicts alike, and its record goes to the store as kbv run writes it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "kbv/eval/worker_client.h"
#include "kbv/lane/lane.h"
#include "kbv/lane/record_filer.h"
#include "kbv/serve/submission.h"
#include "kbv/store/store.h"

namespace kbv::serve {

struct ServiceConfig {
  std::string device = "cpu";
  std::vector<std::string> gpus = {"0"};  // cuda: one lane per entry, each seeing only that GPU
  std::size_t queue_capacity = 64;        // requests held, waiting or building, beyond those evaluated now
  std::size_t warm_problems = 4;          // reference sides a lane keeps, least recently used dropped
  int compile_jobs = 1;                   // cuda: candidates built at a time, ahead of the lanes
  double timeout_seconds = 120, compile_timeout_seconds = 1800;
  std::string cache_dir;
  eval::WorkerLaunch launch;
};

// The service holds as many requests as it may (`queue_capacity`), or it is stopping: ask again
// later. Answered 503 with Retry-After.
struct Busy : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Seconds from `from` to now: each span a request's answer reports is measured so.
double seconds_since(std::chrono::steady_clock::time_point from);

// What a request gets back: the record (kbv eval --json's) and where its time went.
struct Answer {
  nlohmann::json record;
  // When the request entered the queue: its admission ends there and its queued span begins, so
  // the spans a client adds up never overlap.
  std::chrono::steady_clock::time_point queued_at;
  double queued_seconds = 0, evaluation_seconds = 0;
  bool stored = false;  // false only when the store already held a record for its candidate
};

class Service {
 public:
  Service(ServiceConfig config, store::Store& store);
  ~Service();  // shutdown()
  Service(const Service&) = delete;
  Service& operator=(const Service&) = delete;

  // Queues the evaluation. The future throws eval::EvalError when it cannot be carried out (the
  // problem or the evaluator failed; stored as a failure). Throws Busy.
  std::future<Answer> submit(const Submission& submission);

  // Queue depth, evaluations (done, failed, refused, per minute), each lane's device busy share
  // (device stages' seconds over the service's uptime) and warm problems, stage seconds.
  nlohmann::json metrics() const;
  bool stopping() const;

  // Takes no more requests and finishes every one it holds; returns when the lanes are done, its
  // lanes' use written to the store (`sessions`).
  void shutdown();

 private:
  using Clock = std::chrono::steady_clock;
  struct Job;
  // A lane as the other threads see it: what its lane::Lane (its thread's own) reported last.
  struct LaneSlot {
    std::string gpu;  // empty on the CPU
    lane::LaneUse use;
    std::size_t warm_problems = 0;
  };
  static lane::Item item_of(const Job& job);
  void lane(LaneSlot& me);
  void builder();
  void finish(LaneSlot& me, const lane::Lane& mine, bool evaluated);

  const ServiceConfig config_;
  store::Store& store_;
  lane::RecordFiler filer_;
  const Clock::time_point started_ = Clock::now();

  mutable std::mutex mutex_;  // everything below
  std::condition_variable work_, build_work_;
  std::deque<std::unique_ptr<Job>> queue_;  // waiting for a lane, in arrival order
  std::deque<Job*> to_build_;               // queued jobs whose candidate is not built yet
  std::size_t reserved_ = 0, running_ = 0;  // accepted and not yet queued; being evaluated
  bool stopping_ = false;
  std::map<std::string, std::int64_t> run_ids_;
  std::map<std::string, std::pair<std::string, std::int64_t>>
      problems_;  // by path: the content key last written, the row
  std::size_t done_ = 0, failed_ = 0, refused_ = 0;
  std::deque<Clock::time_point> finished_at_;  // the last minute's completions
  std::deque<LaneSlot> lanes_;                 // stable addresses: each thread holds its own
  std::vector<std::thread> threads_;
  std::mutex shutdown_mutex_;
  bool joined_ = false;
};

}  // namespace kbv::serve
