// Poisoned memory for one candidate call (PROTOCOL.md, uninitialized_output): while a Poison is
// alive, memory the allocator hands out holds all-ones bytes (NaN in every floating-point type),
// so an output element the call never wrote shows up as NaN instead of a plausible leftover.
#pragma once

#include <vector>

#include <ATen/core/Tensor.h>

namespace kbv::hacks {

class Poison {
 public:
  // CPU: the counting allocator fills every new block. GPU: the caching allocator is handed back
  // blocks the size of `like` (the call's earlier outputs) filled with the pattern, which it
  // gives out again to requests of that size.
  explicit Poison(const std::vector<at::Tensor>& like);
  // GPU: the poisoned blocks the call left unused go back to the device (four per output size:
  // 24 GiB for a 6 GiB output, which later requests of other sizes would split and pin).
  ~Poison();
  Poison(const Poison&) = delete;
  Poison& operator=(const Poison&) = delete;

 private:
  bool cpu_ = false;
  bool cuda_ = false;
};

}  // namespace kbv::hacks
