#include "kbv/check/sketch.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

namespace kbv::check {

std::vector<at::Tensor> sketch(const std::vector<at::Tensor>& outputs, std::uint64_t seed, int points) {
  at::Generator generator = at::detail::createCPUGenerator(seed);
  std::vector<at::Tensor> sketches;
  for (const at::Tensor& output : outputs) {
    if (output.numel() == 0) {
      sketches.push_back(at::empty({0}, at::kDouble));
      continue;
    }
    const at::Tensor positions = at::randint(output.numel(), {points}, generator, at::TensorOptions().dtype(at::kLong));
    sketches.push_back(output.reshape({-1}).index_select(0, positions.to(output.device())).to(at::kCPU).to(at::kDouble));
  }
  return sketches;
}

}  // namespace kbv::check
