// Sketches of timed outputs: the values at a few thousand positions chosen by a seed the worker
// learns only after the call returned, so a candidate cannot compute just those. Both workers
// sample the same positions; the parent compares them with the scaled error (PROTOCOL.md,
// "Timing": every timed output is checked against the reference for its inputs).
#pragma once

#include <cstdint>
#include <vector>

#include <ATen/core/Tensor.h>

namespace kbv::check {

// Per output: `points` positions drawn uniformly (with replacement) over its elements from `seed`;
// returns float64 CPU tensors. Empty outputs give empty sketches.
std::vector<at::Tensor> sketch(const std::vector<at::Tensor>& outputs, std::uint64_t seed, int points);

}  // namespace kbv::check
