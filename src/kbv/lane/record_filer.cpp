#include "kbv/lane/record_filer.h"

#include <optional>

namespace kbv::lane {

using nlohmann::json;

bool RecordFiler::file(std::int64_t problem, std::int64_t candidate, const std::string& protocol, const json& record) {
  json facts = record.at("versions");
  facts["device"] = device_;
  std::optional<std::int64_t> baseline;
  std::int64_t environment = 0;
  {
    std::lock_guard lock(mutex_);
    const std::string facts_key = facts.dump();
    if (!environments_.count(facts_key)) environments_[facts_key] = store_.environment(facts);
    environment = environments_[facts_key];
    if (record.contains("timing") && record["timing"].contains("baseline")) {
      const json& timing = record["timing"]["baseline"];
      const std::string key =
          std::to_string(problem) + " " + protocol + " " + std::to_string(environment) + " " + timing.dump();
      if (!baselines_.count(key)) {
        const json& memory = record.value("memory", json::object());
        baselines_[key] =
            store_.baseline(problem, protocol, device_, environment, timing,
                            memory.contains("baseline_peak_bytes")
                                ? std::optional<std::int64_t>(memory["baseline_peak_bytes"].get<std::int64_t>())
                                : std::nullopt);
      }
      baseline = baselines_[key];
    }
  }
  return store_.add_record(candidate, protocol, device_, baseline, environment, record);
}

}  // namespace kbv::lane
