// Large output tensors from a worker to the parent through shared memory instead of the pipe.
//
// A 512 MiB output crossing the pipe cost ~2 s per draw on the H200 machine: a fresh host buffer
// in the worker (page faults), the pipe's two copies, a fresh buffer in the parent (page faults
// again). Through the region it is one copy into pages the worker reuses, read in place.
//
// The parent creates one region per worker: a memfd of kCapacity bytes (sparse: pages exist once
// written), sealed against growing and shrinking before the worker sees it, so that nothing the
// worker does can make the parent's reads fault (a shrunk file would SIGBUS them). The parent maps
// it read-only; the worker, which may be the untrusted candidate, maps it read-write and can change
// any byte at any time, so the parent trusts its content exactly as much as a blob's: bounds are
// checked against the sealed size, and a candidate that rewrites its own outputs while they are
// compared gains nothing it could not have sent.
//
// Placement (worker side): each command's outputs are written from the region's start, valid
// until the next command (a candidate's checks, compared at once: by the reference's worker,
// which maps the candidate's region read-only as the parent does). Tensors under kMinBytes
// travel as blobs.
//
// A device tensor's copy goes to pages the worker has registered with CUDA (page-locked, from the
// start of the region up to the highest byte placed so far): a DMA at the link's speed instead of
// the driver's copy through its own staging buffer. Placements reuse the same offsets command
// after command, so each page is registered once per worker.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include <ATen/core/Tensor.h>
#include <nlohmann/json.hpp>

#include "kbv/ipc/channel.h"

namespace kbv::ipc {

class SharedRegion {
 public:
  static constexpr std::uint64_t kCapacity = 64ull << 30;
  static constexpr std::uint64_t kMinBytes = 1ull << 20;
  static constexpr std::uint64_t kAlignment = 4096;

  // Parent side: a sealed memfd, mapped read-only. Throws std::system_error.
  static std::shared_ptr<SharedRegion> create();
  // Worker side: the region the parent passed at `fd`, mapped read-write, or nullptr when `fd` is
  // not one (a worker started without a region sends every tensor as a blob).
  static std::unique_ptr<SharedRegion> open_inherited(int fd);
  // The reference's worker: a candidate's region the parent handed over (ipc/fd_passing.h),
  // mapped read-only as the parent maps it. Throws std::runtime_error when `fd` is not a region.
  static std::shared_ptr<const SharedRegion> open_received(UniqueFd fd);

  ~SharedRegion();
  SharedRegion(const SharedRegion&) = delete;
  SharedRegion& operator=(const SharedRegion&) = delete;

  int fd() const { return fd_.get(); }
  std::uint64_t size() const { return size_; }

  // Worker side. Starts a command's placement, from the region's start.
  void begin_command();
  // Copies `tensor` (any device, any layout) into the region and returns its description (dtype,
  // shape, "region": {offset, bytes}), or nullopt when it is under kMinBytes or does not fit.
  std::optional<nlohmann::json> place(const at::Tensor& tensor);

  // Parent side (and the reference's worker, over a candidate's region): the tensor that `meta` describes, a view into
  // the region that keeps the region mapped while it lives. Throws std::runtime_error when the description is out of
  // bounds.
  static at::Tensor view(const std::shared_ptr<const SharedRegion>& region, const nlohmann::json& meta);

 private:
  SharedRegion(UniqueFd fd, std::uint64_t size, bool writable);
  // Registers the region with CUDA up to `end` (rounded up to kPinStep); false when it is not (the
  // copy then goes through pageable memory).
  bool pin_through(std::uint64_t end);
  // Copies a device tensor into registered pages at `offset`, a part per registration it spans.
  void copy_pinned(const at::Tensor& tensor, std::uint64_t offset);

  static constexpr std::uint64_t kPinStep = 2ull << 20;

  UniqueFd fd_;
  std::uint64_t size_ = 0;
  std::byte* base_ = nullptr;
  bool writable_ = false;
  std::uint64_t next_ = 0;
  std::vector<std::uint64_t> pin_ends_;  // where each registration ends; each starts where the last ended
  bool pin_failed_ = false;
};

}  // namespace kbv::ipc
