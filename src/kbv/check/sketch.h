// Sketches of timed outputs: the values at a few thousand positions chosen by a seed the worker
// learns only after the call returned, so a candidate cannot compute just those. Both workers
// sample the same positions; the parent compares them with the scaled error (PROTOCOL.md,
// "Timing": every timed output is checked against the reference for its inputs).
#pragma once

#include <cstdint>
#include <vector>

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

namespace kbv::check {

// Per output: `points` positions drawn uniformly (with replacement) over its elements from `seed`
// by a generator of `device`, the evaluation's (on the GPU no copy to or from the host: the
// candidate's worker gathers a timed call's sketch between two timed calls), and the values
// there, left where the output is. Empty outputs give empty sketches.
std::vector<at::Tensor> gather_sketch(const std::vector<at::Tensor>& outputs, std::uint64_t seed, int points,
                                      const c10::Device& device);
// Gathered sketches as float64 CPU tensors.
std::vector<at::Tensor> to_host(const std::vector<at::Tensor>& sketches);
// Both at once.
std::vector<at::Tensor> sketch(const std::vector<at::Tensor>& outputs, std::uint64_t seed, int points,
                               const c10::Device& device);

}  // namespace kbv::check
