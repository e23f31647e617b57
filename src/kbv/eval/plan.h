// The plan of an evaluation's checks: which input draws, with which family parameters and
// seeds. Made in the parent only; a worker learns one draw when it is asked to run it.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include <nlohmann/json.hpp>

#include "kbv/protocol/protocol.h"

namespace kbv::eval {

struct Draw {
  protocol::Family family;
  int index = 0;  // within its family
  nlohmann::json params;
  std::uint64_t seed = 0;
  nlohmann::json to_json() const;
};

// The evaluation's random source: secret (std::random_device) under `secret_seeds`, else
// seeded from `fixed_seed` so that KernelBench's runs are reproduced.
std::mt19937_64 make_rng(const protocol::Protocol& protocol);

// verified: `draws_per_family` draws of each family, then of each fallback family (run only where
// too few of the others are in the problem's domain), parameters and seeds from `rng`.
// kernelbench: the trial seeds KernelBench derives (torch.manual_seed(42), then one
// torch.randint(0, 2**32 - 1) per trial), standard inputs only.
std::vector<Draw> plan_draws(const protocol::Protocol& protocol, std::mt19937_64& rng);

}  // namespace kbv::eval
