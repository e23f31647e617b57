// One lane of evaluations, as kbv run and kbv serve (and so Ray, whose nodes run kbv serve) use it:
// evaluations one after another on one device, the reference sides of its latest problems kept
// warm (their workers started, their baselines timed once), each evaluation starting the next one's
// worker, and for another problem its reference side, beside its own untimed steps
// (eval::WorkerRelay), and each record or failure filed in the store.
//
// Lifetime rules, stated here once:
// - A worker dies with the thread that started it (worker_process.h): a Lane is made, used and
//   destroyed on one thread, which owns every worker and reference side it starts.
// - Nothing of another evaluation runs beside a timed call: a reference side the lane lets go is
//   asked to exit and reaped by the next evaluation before its first timed call, as is the worker
//   of the candidate before.
// - A reference side that failed serves no one: the next evaluation of its problem starts another.
// - A worker started for the next candidate shows that candidate's files only: when the evaluation
//   that started it fails before it began, it is let go, not handed to another candidate.
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "kbv/eval/evaluation.h"
#include "kbv/eval/reference_side.h"
#include "kbv/lane/record_filer.h"
#include "kbv/store/store.h"

namespace kbv::lane {

struct LaneConfig {
  std::string device = "cpu";
  std::string gpu;  // cuda: the one GPU its workers see (CUDA_VISIBLE_DEVICES); empty on the CPU
  double timeout_seconds = 120, compile_timeout_seconds = 1800;
  std::string cache_dir;
  eval::WorkerLaunch launch;
  std::size_t warm_problems = 1;  // reference sides kept, the least recently used let go first
};

// One evaluation to do: its files, its protocol (a preset's name) and the store's rows it is filed under.
struct Item {
  std::string problem, problem_key;  // the problem file and its content key: a changed file is another side
  std::string candidate, protocol;
  std::int64_t problem_id = 0, candidate_id = 0;
};

struct Outcome {
  nlohmann::json record;  // kbv eval --json's; null when the evaluation could not be carried out
  std::string failure;    // why not (the problem or the evaluator failed), filed as a failure
  bool stored = false;    // the record filed (false: the store held one for it already, the first stays)
  double seconds = 0;     // its wall, the start of its reference side included
};

// What a lane did, summed over its evaluations.
struct LaneUse {
  std::size_t evaluations = 0, failures = 0;  // records, failures
  double device_seconds = 0;                  // the records' device stages (protocol::device_stage)
  std::map<std::string, double> stage_seconds;
};

class Lane {
 public:
  Lane(LaneConfig config, RecordFiler& filer, store::Store& store);
  Lane(const Lane&) = delete;
  Lane& operator=(const Lane&) = delete;

  // Evaluates `item` and files its record or its failure. `next`: what this lane evaluates after
  // it, where known; its worker (and its problem's reference side, where not warm) starts beside
  // this evaluation. Throws eval::NoDevice, filing nothing: no evaluation on this device can be
  // carried out.
  Outcome evaluate(const Item& item, const std::optional<Item>& next = std::nullopt);

  // Lets go of `item`'s reference side, if warm: asked to exit now, reaped by the next evaluation
  // before its timing (kbv run, after a problem's last candidate).
  void release(const Item& item);

  // The reference side `item` is evaluated against: its problem file, that file's content and its
  // protocol. Items of one key share a side.
  static std::string side_key(const Item& item);

  // How its workers start: config.launch, seeing only the lane's GPU (kbv run's audits use it too).
  const eval::WorkerLaunch& launch() const { return launch_; }

  // Safe from any thread.
  bool warm(const Item& item) const;
  std::size_t warm_count() const;
  LaneUse use() const;

 private:
  struct Warm {
    std::string key;
    std::unique_ptr<eval::ReferenceSide> side;
  };
  eval::EvalRequest request_of(const Item& item) const;
  eval::ReferenceConfig reference_of(const Item& item) const;
  // The item's reference side, first in `warm_`: kept, started ahead by the evaluation before, or
  // started now, the least recently used let go where the lane keeps as many as it may.
  eval::ReferenceSide& side_for(const Item& item);
  std::list<Warm>::iterator find_warm(const std::string& key);
  void retire(std::list<Warm>::iterator at);  // asked to exit, reaped by the next evaluation
  void let_go(std::list<Warm>::iterator at);  // out of the lists (a failed side: destroyed now)
  void count(const nlohmann::json* record);   // null: a failure

  const LaneConfig config_;
  eval::WorkerLaunch launch_;  // config_.launch, seeing only the lane's GPU
  RecordFiler& filer_;
  store::Store& store_;
  eval::WorkerRelay relay_;
  std::string ahead_key_;  // whose reference side relay_ starts ahead
  std::list<Warm> warm_;   // most recently used first

  mutable std::mutex mutex_;  // the two below, read by other threads
  std::list<std::string> warm_keys_;
  LaneUse use_;
};

}  // namespace kbv::lane
