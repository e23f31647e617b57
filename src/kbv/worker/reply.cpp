#include "kbv/worker/reply.h"

#include <optional>

#include "kbv/worker/device_handoff.h"
#include "kbv/worker/worker_process.h"

namespace kbv::worker {

using nlohmann::json;

void Replies::begin(const json& header) {
  nonce_ = header.value(kNonceField, json());
  if (region_) region_->begin_command();
}

// Placed in the output region when large, else encoded as a blob appended to `store`.
json Replies::attach_one(std::vector<EncodedTensor>& store, const at::Tensor& t) {
  if (std::optional<json> placed = region_ ? region_->place(t) : std::nullopt) return std::move(*placed);
  store.push_back(encode(t));
  return store.back().meta;
}

void Replies::attach(std::vector<EncodedTensor>& store, json& metas, const std::vector<at::Tensor>& tensors) {
  metas = json::array();
  for (const at::Tensor& t : tensors) metas.push_back(attach_one(store, t));
}

void Replies::attach_for_comparison(std::vector<EncodedTensor>& store, json& metas, const std::vector<at::Tensor>& tensors,
                                    std::vector<UniqueFd>& files) {
  metas = json::array();
  for (const at::Tensor& t : tensors) {
    if (t.is_cuda() && static_cast<std::int64_t>(t.nbytes()) >= kDeviceHandoffBytes) {
      if (auto handed = export_to_device_file(t)) {
        metas.push_back(std::move(handed->first));
        files.push_back(std::move(handed->second));
        continue;
      }
    }
    metas.push_back(attach_one(store, t));
  }
}

void Replies::send_files(std::vector<UniqueFd>& files) {
  for (size_t first = 0; first < files.size(); first += kMaxPassedFds) {
    std::vector<int> fds;
    for (size_t i = first; i < files.size() && i < first + kMaxPassedFds; ++i) fds.push_back(files[i].get());
    send_fds(kFileSocketFd, "outputs", fds);
  }
  files.clear();
}

void Replies::send(json header, const std::vector<EncodedTensor>& tensors) {
  if (!nonce_.is_null()) header[kNonceField] = nonce_;
  std::vector<Bytes> blobs;
  for (const EncodedTensor& t : tensors) blobs.push_back(t.bytes());
  channel_.send(header, blobs);
}

}  // namespace kbv::worker
