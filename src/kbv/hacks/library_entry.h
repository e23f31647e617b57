// Library compute that a candidate's compiled code reaches without the dispatcher, where torch's
// profiler (kbv's trace of own against library work) records no op: ATen's kernels called through
// their backend namespaces (at::cpu::addmm, at::cuda::gelu, at::native::..., a redispatch), and the
// math libraries' own APIs (cuBLAS, cuBLASLt, cuDNN, cuFFT, cuSPARSE, cuSOLVER, BLAS, MKL, oneDNN).
// ATen's public functions (at::addmm, tensor methods) go through the dispatcher and are traced.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace kbv::hacks {

// The library `symbol` (a demangled function name, as an extension imports it) is a compute entry
// point of, or nullopt. `is_aten_op("addmm")`: whether aten::addmm is an operator (it tells
// at::cuda::addmm from at::cuda::getCurrentCUDAStream).
std::optional<std::string> library_entry(std::string_view symbol,
                                         const std::function<bool(std::string_view)>& is_aten_op);

}  // namespace kbv::hacks
