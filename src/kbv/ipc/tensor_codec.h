// Tensors across the parent<->worker channel: a JSON description (dtype, shape) in the header
// and the contiguous CPU bytes, as a blob or in the worker's output region (shared_region.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include <ATen/core/Tensor.h>
#include <nlohmann/json.hpp>

namespace kbv::ipc {

// A tensor prepared for sending: `cpu` owns the bytes `bytes()` points into.
struct EncodedTensor {
  nlohmann::json meta;
  at::Tensor cpu;
  std::span<const std::byte> bytes() const;
};

// The description a receiver rebuilds `tensor` from: dtype, its name, shape.
nlohmann::json describe(const at::Tensor& tensor);

EncodedTensor encode(const at::Tensor& tensor);

// The dtype and shape `meta` describes and the bytes they need. The description may come from the
// candidate: a dtype out of range or a negative or overflowing shape throws std::runtime_error.
struct Layout {
  at::ScalarType dtype;
  std::vector<int64_t> shape;
  std::uint64_t bytes;
};
Layout layout_of(const nlohmann::json& meta);

// The CPU tensor `meta` describes over `bytes` bytes at `data`, which `release` frees when the
// tensor goes. The description comes from a worker that may be the candidate: a dtype out of
// range, a negative or overflowing shape, or a size other than `bytes` throws std::runtime_error
// (and `release` is called).
at::Tensor wrap(const nlohmann::json& meta, void* data, std::uint64_t bytes, std::function<void(void*)> release);

// Builds a CPU tensor from `meta` and takes ownership of `blob`'s bytes (no copy).
at::Tensor decode(const nlohmann::json& meta, std::vector<std::byte>&& blob);

}  // namespace kbv::ipc
