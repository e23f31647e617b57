// kbv run --ray: the evaluations handed to kbv_client.ray_run (python/kbv_client/ray_run.py),
// which runs them through kbv serve on every node of a Ray cluster and prints each answer as a
// JSON line as it comes; kbv run files them into its own store.
#pragma once

#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kbv::run {

struct RayLaunch {
  std::string python;   // an interpreter with ray and kbv_client
  std::string address;  // the Ray cluster's
  std::string binary;   // kbv, at this path on every node
  int gpus_per_node = 0;
  std::vector<std::string> serve_args;  // for every node's kbv serve
};

// The driver could not start, or ended in failure (its stderr, passed through, says why).
struct RayDriverFailed : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct RayRequest {
  std::string key;
  nlohmann::json body;  // kbv serve's /evaluate fields
};

// Calls `on_line` with each {"key", "answer"} or {"key", "error", "status"} as it arrives (from
// this thread), and with the last, {"lanes": [...]}, the nodes' lanes as the store's sessions keep
// them. Throws RayDriverFailed.
void evaluate_on_ray(const RayLaunch& launch, const std::vector<RayRequest>& requests, const std::string& scratch_dir,
                     const std::function<void(const nlohmann::json& line)>& on_line);

}  // namespace kbv::run
