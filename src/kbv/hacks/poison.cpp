#include "kbv/hacks/poison.h"

#include <ATen/ATen.h>
#include <c10/cuda/CUDACachingAllocator.h>

#include "kbv/measure/memory.h"

namespace kbv::hacks {
namespace {

constexpr int kBlocksPerSize = 4;  // a few of each size: the call may allocate more than its outputs
constexpr std::uint8_t kPattern = 0xFF;

}  // namespace

Poison::Poison(const std::vector<at::Tensor>& like) {
  for (const at::Tensor& t : like) {
    if (!t.defined()) continue;
    if (!t.is_cuda()) {
      cpu_ = true;
      continue;
    }
    cuda_ = true;
    std::vector<at::Tensor> blocks;  // all alive at once, so each is its own block
    for (int i = 0; i < kBlocksPerSize; ++i) {
      blocks.push_back(at::full({static_cast<std::int64_t>(t.nbytes())}, kPattern, t.options().dtype(at::kByte)));
    }
  }  // freed here: back in the caching allocator's pool, pattern and all
  if (cpu_) measure::set_cpu_allocation_poison(true);
}

Poison::~Poison() {
  if (cpu_) measure::set_cpu_allocation_poison(false);
  if (cuda_) c10::cuda::CUDACachingAllocator::emptyCache();
}

}  // namespace kbv::hacks
