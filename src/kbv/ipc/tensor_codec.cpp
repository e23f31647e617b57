#include "kbv/ipc/tensor_codec.h"

#include <stdexcept>
#include <string>

#include <ATen/ATen.h>

namespace kbv::ipc {

std::span<const std::byte> EncodedTensor::bytes() const {
  return {static_cast<const std::byte*>(cpu.const_data_ptr()), static_cast<size_t>(cpu.nbytes())};
}

nlohmann::json describe(const at::Tensor& tensor) {
  return {{"dtype", static_cast<int>(tensor.scalar_type())},
          {"dtype_name", c10::toString(tensor.scalar_type())},
          {"shape", tensor.sizes().vec()}};
}

EncodedTensor encode(const at::Tensor& tensor) {
  EncodedTensor encoded;
  encoded.cpu = tensor.detach().to(at::kCPU).contiguous();
  encoded.meta = describe(encoded.cpu);
  return encoded;
}

Layout layout_of(const nlohmann::json& meta) {
  const int dtype = meta.at("dtype").get<int>();
  if (dtype < 0 || dtype >= static_cast<int>(at::ScalarType::NumOptions)) throw std::runtime_error("tensor: bad dtype");
  Layout layout{static_cast<at::ScalarType>(dtype), meta.at("shape").get<std::vector<int64_t>>(), 0};
  layout.bytes = c10::elementSize(layout.dtype);
  for (const int64_t extent : layout.shape) {
    if (extent < 0 || __builtin_mul_overflow(layout.bytes, static_cast<std::uint64_t>(extent), &layout.bytes)) {
      throw std::runtime_error("tensor: bad shape");
    }
  }
  return layout;
}

at::Tensor wrap(const nlohmann::json& meta, void* data, std::uint64_t bytes, std::function<void(void*)> release) {
  try {
    const Layout layout = layout_of(meta);
    if (layout.bytes != bytes) {
      throw std::runtime_error("tensor holds " + std::to_string(bytes) + " bytes, its shape needs " +
                               std::to_string(layout.bytes));
    }
    return at::from_blob(data, layout.shape, std::move(release), at::TensorOptions().dtype(layout.dtype));
  } catch (...) {
    release(data);
    throw;
  }
}

at::Tensor decode(const nlohmann::json& meta, std::vector<std::byte>&& blob) {
  auto* owned = new std::vector<std::byte>(std::move(blob));
  return wrap(meta, owned->data(), owned->size(), [owned](void*) { delete owned; });
}

}  // namespace kbv::ipc
