#include "kbv/worker/tensor_codec.h"

#include <stdexcept>

#include <ATen/ATen.h>

namespace kbv::worker {

std::span<const std::byte> EncodedTensor::bytes() const {
  return {static_cast<const std::byte*>(cpu.const_data_ptr()), static_cast<size_t>(cpu.nbytes())};
}

EncodedTensor encode(const at::Tensor& tensor) {
  EncodedTensor encoded;
  encoded.cpu = tensor.detach().to(at::kCPU).contiguous();
  encoded.meta = {{"dtype", static_cast<int>(encoded.cpu.scalar_type())},
                  {"dtype_name", c10::toString(encoded.cpu.scalar_type())},
                  {"shape", encoded.cpu.sizes().vec()}};
  return encoded;
}

at::Tensor decode(const nlohmann::json& meta, std::vector<std::byte>&& blob) {
  const auto type = static_cast<at::ScalarType>(meta.at("dtype").get<int>());
  const auto shape = meta.at("shape").get<std::vector<int64_t>>();
  auto* owned = new std::vector<std::byte>(std::move(blob));
  at::Tensor tensor = at::from_blob(
      owned->data(), shape, [owned](void*) { delete owned; }, at::TensorOptions().dtype(type));
  if (tensor.nbytes() != owned->size()) {
    throw std::runtime_error("tensor blob holds " + std::to_string(owned->size()) + " bytes, its shape needs " +
                             std::to_string(tensor.nbytes()));
  }
  return tensor;
}

}  // namespace kbv::worker
