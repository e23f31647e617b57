// The worker's side of a reply (worker_main.h): the command's nonce echoed, tensors placed in the
// parent's output region when large (shared_region.h) or sent as blobs, and device outputs the
// reference's worker compares handed over as files (device_handoff.h) before the reply that
// describes them.
#pragma once

#include <vector>

#include <ATen/core/Tensor.h>
#include <nlohmann/json.hpp>

#include "kbv/worker/channel.h"
#include "kbv/worker/fd_passing.h"
#include "kbv/worker/shared_region.h"
#include "kbv/worker/tensor_codec.h"

namespace kbv::worker {

class Replies {
 public:
  // `region`: the parent's region for large outputs; null without one.
  Replies(Channel& channel, SharedRegion* region) : channel_(channel), region_(region) {}

  // A new command: its nonce is echoed in the reply; the outputs placed for the last one are done.
  void begin(const nlohmann::json& header);
  // Describes `tensors` (outputs or their sketches) into `metas`, blobs appended to `store`.
  void attach(std::vector<EncodedTensor>& store, nlohmann::json& metas, const std::vector<at::Tensor>& tensors);
  // As attach(), for outputs the reference's worker compares: a large device output is handed over
  // on the device, its file kept in `files` for send_files().
  void attach_for_comparison(std::vector<EncodedTensor>& store, nlohmann::json& metas,
                             const std::vector<at::Tensor>& tensors, std::vector<UniqueFd>& files);
  // The files of device outputs to the parent, before the reply that describes them.
  void send_files(std::vector<UniqueFd>& files);
  void send(nlohmann::json header, const std::vector<EncodedTensor>& tensors = {});

 private:
  nlohmann::json attach_one(std::vector<EncodedTensor>& store, const at::Tensor& t);

  Channel& channel_;
  SharedRegion* region_;
  nlohmann::json nonce_;
};

}  // namespace kbv::worker
