// Tensors across the parent<->worker channel: a JSON description (dtype, shape) in the header
// and the contiguous CPU bytes as a blob.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include <ATen/core/Tensor.h>
#include <nlohmann/json.hpp>

namespace kbv::worker {

// A tensor prepared for sending: `cpu` owns the bytes `bytes()` points into.
struct EncodedTensor {
  nlohmann::json meta;
  at::Tensor cpu;
  std::span<const std::byte> bytes() const;
};

EncodedTensor encode(const at::Tensor& tensor);

// Builds a CPU tensor from `meta` and takes ownership of `blob`'s bytes (no copy).
at::Tensor decode(const nlohmann::json& meta, std::vector<std::byte>&& blob);

}  // namespace kbv::worker
