// A call's inputs as the worker sees them: which arguments are tensors, and a checksum of their
// values that both workers must agree on for one draw.
#pragma once

#include <vector>

#include <ATen/core/Tensor.h>
#include <pybind11/pybind11.h>
#include <nlohmann/json.hpp>

namespace kbv::worker {

// Sums over the tensor inputs: both workers must have drawn the same values.
nlohmann::json input_checksum(const pybind11::list& inputs);

bool is_tensor(const pybind11::handle& object);

// The tensors among a call's arguments.
std::vector<at::Tensor> tensors_of(const pybind11::list& inputs);

}  // namespace kbv::worker
