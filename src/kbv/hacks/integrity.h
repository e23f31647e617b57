// Integrity checks around one candidate call (PROTOCOL.md, "Findings"): did it change its inputs,
// do its outputs share storage with its inputs or with earlier outputs, did poisoned memory leak
// into its outputs. Plain tensor comparisons; the worker reports what they find.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>

namespace kbv::hacks {

// Clones, to tell later whether a call changed the originals.
std::vector<at::Tensor> snapshot(const std::vector<at::Tensor>& tensors);

struct Mutation {
  size_t index;          // which tensor
  std::int64_t changed;  // elements that differ (NaN equals NaN)
  std::int64_t elements;
};
// Tensors of `now` whose content differs from `before` (or whose shape changed).
std::vector<Mutation> mutations(const std::vector<at::Tensor>& before, const std::vector<at::Tensor>& now);

// Index pairs (i in a, j in b) whose storages overlap.
std::vector<std::pair<size_t, size_t>> overlaps(const std::vector<at::Tensor>& a, const std::vector<at::Tensor>& b);

// Outputs (their indices) whose memory kbv cannot vouch for: storage not allocated by the allocator
// kbv counts and poisons -- on the CPU the counting allocator, on a GPU torch's caching allocator
// (from_blob over the candidate's own buffer, a foreign mapping, managed or host-mapped memory,
// memory released by a deleter of its own). Such memory escapes the poison and memory checks, its
// content may be produced when kbv first reads it (after the timer stopped), and its deleter runs
// the candidate's code between timed calls.
std::vector<size_t> foreign_outputs(const std::vector<at::Tensor>& outputs);

// Elements that are NaN in `poisoned` where `clean` holds a number: values the call never wrote.
std::int64_t nan_introduced(const std::vector<at::Tensor>& clean, const std::vector<at::Tensor>& poisoned);

}  // namespace kbv::hacks
