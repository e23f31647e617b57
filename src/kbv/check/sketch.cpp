#include "kbv/check/sketch.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/cuda/CUDAGeneratorImpl.h>

namespace kbv::check {

std::vector<at::Tensor> gather_sketch(const std::vector<at::Tensor>& outputs, std::uint64_t seed, int points,
                                      const c10::Device& device) {
  at::Generator generator;
  if (device.is_cuda()) {
    generator = at::cuda::detail::createCUDAGenerator(device.index());
    generator.set_current_seed(seed);
  } else {
    generator = at::detail::createCPUGenerator(seed);
  }
  std::vector<at::Tensor> sketches;
  for (const at::Tensor& output : outputs) {
    if (output.numel() == 0) {
      sketches.push_back(at::empty({0}, output.options()));
      continue;
    }
    const at::Tensor positions =
        at::randint(output.numel(), {points}, generator, at::TensorOptions().dtype(at::kLong).device(device));
    sketches.push_back(output.reshape({-1}).index_select(0, positions.to(output.device())));
  }
  return sketches;
}

std::vector<at::Tensor> to_host(const std::vector<at::Tensor>& sketches) {
  std::vector<at::Tensor> host;
  for (const at::Tensor& s : sketches) host.push_back(s.to(at::kCPU).to(at::kDouble));
  return host;
}

std::vector<at::Tensor> sketch(const std::vector<at::Tensor>& outputs, std::uint64_t seed, int points,
                               const c10::Device& device) {
  return to_host(gather_sketch(outputs, seed, points, device));
}

}  // namespace kbv::check
