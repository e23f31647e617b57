// How kbv run (local lanes or a Ray cluster) and kbv serve put a record into the store: the
// environment row of its versions and device, one baseline row per distinct measurement of a
// problem under a protocol (the records of one reference side share it), then the record.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include <nlohmann/json.hpp>

#include "kbv/store/store.h"

namespace kbv::lane {

class RecordFiler {
 public:
  RecordFiler(store::Store& store, std::string device) : store_(store), device_(std::move(device)) {}

  // The record as kbv eval --json writes it. False when the store held one for the candidate,
  // protocol and device already (the first stays). Safe from several threads.
  bool file(std::int64_t problem, std::int64_t candidate, const std::string& protocol, const nlohmann::json& record);

 private:
  store::Store& store_;
  const std::string device_;
  std::mutex mutex_;
  std::map<std::string, std::int64_t> environments_, baselines_;  // by their facts, by their measurement
};

}  // namespace kbv::lane
