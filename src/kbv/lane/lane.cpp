#include "kbv/lane/lane.h"

#include <algorithm>
#include <chrono>
#include <exception>
#include <utility>

#include "kbv/protocol/protocol.h"
#include "kbv/protocol/record.h"

namespace kbv::lane {

using nlohmann::json;

Lane::Lane(LaneConfig config, RecordFiler& filer, store::Store& store)
    : config_(std::move(config)), launch_(config_.launch), filer_(filer), store_(store) {
  if (config_.device == "cuda" && !config_.gpu.empty())
    launch_.environment.emplace_back("CUDA_VISIBLE_DEVICES", config_.gpu);
}

std::string Lane::side_key(const Item& item) { return item.problem + "\n" + item.problem_key + "\n" + item.protocol; }

eval::EvalRequest Lane::request_of(const Item& item) const {
  eval::EvalRequest request;
  request.problem = item.problem;
  request.candidate = item.candidate;
  request.device = config_.device;
  request.protocol = protocol::preset(item.protocol);
  request.timeout_seconds = config_.timeout_seconds;
  request.compile_timeout_seconds = config_.compile_timeout_seconds;
  request.cache_dir = config_.cache_dir;
  request.launch = launch_;
  return request;
}

eval::ReferenceConfig Lane::reference_of(const Item& item) const {
  return {item.problem,
          config_.device,
          protocol::preset(item.protocol),
          config_.timeout_seconds,
          config_.compile_timeout_seconds,
          launch_};
}

std::list<Lane::Warm>::iterator Lane::find_warm(const std::string& key) {
  return std::find_if(warm_.begin(), warm_.end(), [&](const Warm& w) { return w.key == key; });
}

void Lane::retire(std::list<Warm>::iterator at) {
  at->side->begin_shutdown();
  relay_.leaving_reference = std::move(at->side);
  let_go(at);
}

void Lane::let_go(std::list<Warm>::iterator at) {
  {
    std::lock_guard lock(mutex_);
    warm_keys_.remove(at->key);
  }
  warm_.erase(at);
}

eval::ReferenceSide& Lane::side_for(const Item& item) {
  const std::string key = side_key(item);
  if (auto at = find_warm(key); at != warm_.end()) {
    warm_.splice(warm_.begin(), warm_, at);
  } else {
    // Torn down beside this evaluation's untimed steps, reaped before its first timed call.
    if (!warm_.empty() && warm_.size() >= config_.warm_problems) retire(std::prev(warm_.end()));
    std::unique_ptr<eval::ReferenceSide> side;
    if (ahead_key_ == key) side = std::move(relay_.reference_ahead);
    relay_.reference_ahead.reset();  // started for another item than the one that came: not used
    ahead_key_.clear();
    if (!side) side = std::make_unique<eval::ReferenceSide>(reference_of(item));
    warm_.push_front({key, std::move(side)});
    std::lock_guard lock(mutex_);
    warm_keys_.push_front(key);
  }
  return *warm_.front().side;
}

Outcome Lane::evaluate(const Item& item, const std::optional<Item>& next) {
  const auto begun = std::chrono::steady_clock::now();
  Outcome outcome;
  bool evaluating = false;  // from here a worker in the relay is the next candidate's
  try {
    eval::ReferenceSide& side = side_for(item);
    relay_.next.reset();
    relay_.next_reference.reset();
    if (next) {
      relay_.next = request_of(*next);
      if (side_key(*next) != side_key(item) && !warm(*next)) {
        relay_.next_reference = reference_of(*next);
        ahead_key_ = side_key(*next);
      }
    }
    evaluating = true;
    outcome.record = protocol::to_json(eval::evaluate(request_of(item), side, &relay_));
    outcome.stored = filer_.file(item.problem_id, item.candidate_id, item.protocol, outcome.record);
  } catch (const eval::NoDevice&) {
    throw;
  } catch (const std::exception& error) {  // the problem or the evaluator failed: no record
    outcome.record = nullptr;
    outcome.failure = error.what();
    try {
      store_.failure(item.candidate_id, item.protocol, config_.device, outcome.failure);
    } catch (const std::exception&) {
      // The outcome still says what failed.
    }
    if (auto at = find_warm(side_key(item)); at != warm_.end()) let_go(at);
    if (!evaluating) relay_.ready.reset();
  }
  outcome.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begun).count();
  count(outcome.record.is_null() ? nullptr : &outcome.record);
  return outcome;
}

void Lane::release(const Item& item) {
  if (auto at = find_warm(side_key(item)); at != warm_.end()) retire(at);
}

bool Lane::warm(const Item& item) const {
  std::lock_guard lock(mutex_);
  return std::find(warm_keys_.begin(), warm_keys_.end(), side_key(item)) != warm_keys_.end();
}

std::size_t Lane::warm_count() const {
  std::lock_guard lock(mutex_);
  return warm_keys_.size();
}

LaneUse Lane::use() const {
  std::lock_guard lock(mutex_);
  return use_;
}

void Lane::count(const json* record) {
  std::lock_guard lock(mutex_);
  if (!record) {
    ++use_.failures;
    return;
  }
  ++use_.evaluations;
  for (const auto& [stage, seconds] : record->at("stage_seconds").items()) {
    use_.stage_seconds[stage] += seconds.get<double>();
    if (protocol::device_stage(stage)) use_.device_seconds += seconds.get<double>();
  }
}

}  // namespace kbv::lane
