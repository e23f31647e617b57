// The worker's side of a reply (worker_main.h): the command's nonce echoed, tensors placed in the
// parent's output region when large (shared_region.h) or sent as blobs, and device outputs the
// reference's worker compares handed over as files (device_handoff.h) before the reply that
// describes them.
#pragma once

#include <vector>

#include <ATen/core/Tensor.h>
#include <nlohmann/json.hpp>

#include "kbv/ipc/channel.h"
#include "kbv/ipc/fd_passing.h"
#include "kbv/ipc/shared_region.h"
#include "kbv/ipc/tensor_codec.h"

namespace kbv::worker {

class Replies {
 public:
  // `region`: the parent's region for large outputs; null without one.
  Replies(ipc::Channel& channel, ipc::SharedRegion* region) : channel_(channel), region_(region) {}

  // A new command: its nonce is echoed in the reply; the outputs placed for the last one are done.
  void begin(const nlohmann::json& header);
  // Describes `tensors` (outputs or their sketches) into `metas`, blobs appended to `store`.
  void attach(std::vector<ipc::EncodedTensor>& store, nlohmann::json& metas, const std::vector<at::Tensor>& tensors);
  // As attach(), for outputs the reference's worker compares: a large device output is handed over
  // on the device, its file kept in `files` for send_files().
  void attach_for_comparison(std::vector<ipc::EncodedTensor>& store, nlohmann::json& metas,
                             const std::vector<at::Tensor>& tensors, std::vector<ipc::UniqueFd>& files);
  // The files of device outputs to the parent, before the reply that describes them.
  void send_files(std::vector<ipc::UniqueFd>& files);
  void send(nlohmann::json header, const std::vector<ipc::EncodedTensor>& tensors = {});

 private:
  nlohmann::json attach_one(std::vector<ipc::EncodedTensor>& store, const at::Tensor& t);

  ipc::Channel& channel_;
  ipc::SharedRegion* region_;
  nlohmann::json nonce_;
};

}  // namespace kbv::worker
