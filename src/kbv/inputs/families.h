// Hidden input families (PROTOCOL.md, "Correctness" 2): parameters drawn per evaluation from a
// secret seed by the parent; tensors redrawn on the device by the workers, shapes, dtypes and
// exact-zero structure kept from the problem's own inputs.
#pragma once

#include <cstdint>
#include <random>

#include <ATen/core/Tensor.h>
#include <nlohmann/json.hpp>

#include "kbv/protocol/protocol.h"

namespace kbv::inputs {

// The family's parameters for one draw (e.g. normal: {"std": 2.3}).
nlohmann::json draw_parameters(protocol::Family family, std::mt19937_64& rng);

// A tensor of `like`'s shape, dtype and device from `family` with `parameters`, seeded by
// `seed`; entries exactly zero in `like` stay zero. Non-floating tensors are returned as given.
at::Tensor redraw(const at::Tensor& like, protocol::Family family, const nlohmann::json& parameters,
                  std::uint64_t seed);

protocol::Family family_from_name(std::string_view name);

}  // namespace kbv::inputs
