#include "kbv/eval/plan.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include "kbv/inputs/families.h"

namespace kbv::eval {

nlohmann::json Draw::to_json() const {
  return {{"family", protocol::name(family)}, {"params", params}, {"seed", seed}};
}

std::mt19937_64 make_rng(const protocol::Protocol& protocol) {
  if (!protocol.secret_seeds) return std::mt19937_64(protocol.fixed_seed);
  std::random_device device;
  std::seed_seq seq{device(), device(), device(), device()};
  return std::mt19937_64(seq);
}

std::vector<Draw> plan_draws(const protocol::Protocol& protocol, std::mt19937_64& rng) {
  std::vector<Draw> draws;
  if (!protocol.secret_seeds) {
    at::Generator generator = at::detail::createCPUGenerator(protocol.fixed_seed);
    for (int i = 0; i < protocol.draws_per_family; ++i) {
      const auto seed =
          at::randint(0, 4294967295LL, {1}, generator, at::TensorOptions().dtype(at::kLong)).item<int64_t>();
      draws.push_back({protocol::Family::standard, i, nlohmann::json::object(), static_cast<std::uint64_t>(seed)});
    }
    return draws;
  }
  for (const auto* families : {&protocol.families, &protocol.fallback_families}) {
    for (protocol::Family family : *families) {
      for (int i = 0; i < protocol.draws_per_family; ++i) {
        nlohmann::json params = inputs::draw_parameters(family, rng);
        draws.push_back({family, i, std::move(params), rng() >> 1});  // < 2^63: torch.manual_seed takes it
      }
    }
  }
  return draws;
}

}  // namespace kbv::eval
