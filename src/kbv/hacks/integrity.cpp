#include "kbv/hacks/integrity.h"

#include <mutex>

#include <ATen/ATen.h>

namespace kbv::hacks {
namespace {

// [begin, end) of the bytes a tensor's storage spans; empty when it has none.
std::pair<std::uintptr_t, std::uintptr_t> span(const at::Tensor& t) {
  if (!t.defined() || !t.has_storage() || t.storage().nbytes() == 0) return {0, 0};
  const auto begin = reinterpret_cast<std::uintptr_t>(t.storage().data());
  return {begin, begin + t.storage().nbytes()};
}

// The deleter of the memory torch hands out on `device`: the counting allocator's on the CPU (kbv
// installs it at the worker's start); on a GPU the caching allocator's, read once from a fresh
// tensor rather than assumed, whatever the allocator's configuration (every GPU shares it).
c10::DeleterFnPtr ordinary_deleter(const c10::Device& device) {
  if (device.is_cpu()) return c10::GetAllocator(c10::kCPU)->raw_deleter();
  static std::once_flag probed;
  static c10::DeleterFnPtr caching = nullptr;
  std::call_once(probed, [&] {
    caching = at::empty({1}, at::TensorOptions().dtype(at::kByte).device(device)).storage().data_ptr().get_deleter();
  });
  return caching;
}

}  // namespace

std::vector<at::Tensor> snapshot(const std::vector<at::Tensor>& tensors) {
  std::vector<at::Tensor> copies;
  copies.reserve(tensors.size());
  for (const at::Tensor& t : tensors) copies.push_back(t.defined() ? t.detach().clone() : t);
  return copies;
}

std::vector<Mutation> mutations(const std::vector<at::Tensor>& before, const std::vector<at::Tensor>& now) {
  std::vector<Mutation> found;
  for (size_t i = 0; i < before.size() && i < now.size(); ++i) {
    const at::Tensor& a = before[i];
    const at::Tensor& b = now[i];
    if (!a.defined() || !b.defined()) continue;
    if (a.sizes() != b.sizes() || a.scalar_type() != b.scalar_type()) {
      found.push_back({i, a.numel(), a.numel()});
      continue;
    }
    // NaN != NaN: an entry NaN before and after is counted by ne() and taken off again. Two
    // reductions, so that no more than two masks of the input's size are held at once.
    std::int64_t changed = a.ne(b).sum().item<std::int64_t>();
    if (a.is_floating_point() || a.is_complex())
      changed -= a.isnan().logical_and_(b.isnan()).sum().item<std::int64_t>();
    if (changed > 0) found.push_back({i, changed, a.numel()});
  }
  return found;
}

std::vector<std::pair<size_t, size_t>> overlaps(const std::vector<at::Tensor>& a, const std::vector<at::Tensor>& b) {
  std::vector<std::pair<size_t, size_t>> pairs;
  for (size_t i = 0; i < a.size(); ++i) {
    const auto [a0, a1] = span(a[i]);
    if (a0 == a1) continue;
    for (size_t j = 0; j < b.size(); ++j) {
      const auto [b0, b1] = span(b[j]);
      if (b0 != b1 && a0 < b1 && b0 < a1) pairs.emplace_back(i, j);
    }
  }
  return pairs;
}

std::int64_t nan_introduced(const std::vector<at::Tensor>& clean, const std::vector<at::Tensor>& poisoned) {
  std::int64_t count = 0;
  for (size_t i = 0; i < clean.size() && i < poisoned.size(); ++i) {
    const at::Tensor& c = clean[i];
    const at::Tensor& p = poisoned[i];
    if (!c.defined() || !p.defined() || c.sizes() != p.sizes() || !p.is_floating_point()) continue;
    count += p.isnan().logical_and(c.isnan().logical_not()).sum().item<std::int64_t>();
  }
  return count;
}

std::vector<size_t> foreign_outputs(const std::vector<at::Tensor>& outputs) {
  std::vector<size_t> foreign;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const at::Tensor& t = outputs[i];
    if (!t.defined() || !(t.is_cpu() || t.is_cuda()) || t.layout() != at::kStrided || !t.has_storage() ||
        t.storage().nbytes() == 0) {
      continue;
    }
    if (t.storage().data_ptr().get_deleter() != ordinary_deleter(t.device())) foreign.push_back(i);
  }
  return foreign;
}

}  // namespace kbv::hacks
