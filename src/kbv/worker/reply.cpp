#include "kbv/worker/reply.h"

#include <optional>

#include "kbv/ipc/device_handoff.h"
#include "kbv/ipc/worker_fds.h"

namespace kbv::worker {

using nlohmann::json;

void Replies::begin(const json& header) {
  nonce_ = header.value(ipc::kNonceField, json());
  if (region_) region_->begin_command();
}

// Placed in the output region when large, else encoded as a blob appended to `store`.
json Replies::attach_one(std::vector<ipc::EncodedTensor>& store, const at::Tensor& t) {
  if (std::optional<json> placed = region_ ? region_->place(t) : std::nullopt) return std::move(*placed);
  store.push_back(ipc::encode(t));
  return store.back().meta;
}

void Replies::attach(std::vector<ipc::EncodedTensor>& store, json& metas, const std::vector<at::Tensor>& tensors) {
  metas = json::array();
  for (const at::Tensor& t : tensors) metas.push_back(attach_one(store, t));
}

void Replies::attach_for_comparison(std::vector<ipc::EncodedTensor>& store, json& metas,
                                    const std::vector<at::Tensor>& tensors, std::vector<ipc::UniqueFd>& files) {
  metas = json::array();
  for (const at::Tensor& t : tensors) {
    if (t.is_cuda() && static_cast<std::int64_t>(t.nbytes()) >= ipc::kDeviceHandoffBytes) {
      if (auto handed = ipc::export_to_device_file(t)) {
        metas.push_back(std::move(handed->first));
        files.push_back(std::move(handed->second));
        continue;
      }
    }
    metas.push_back(attach_one(store, t));
  }
}

void Replies::send_files(std::vector<ipc::UniqueFd>& files) {
  for (size_t first = 0; first < files.size(); first += ipc::kMaxPassedFds) {
    std::vector<int> fds;
    for (size_t i = first; i < files.size() && i < first + ipc::kMaxPassedFds; ++i) fds.push_back(files[i].get());
    ipc::send_fds(ipc::kFileSocketFd, "outputs", fds);
  }
  files.clear();
}

void Replies::send(json header, const std::vector<ipc::EncodedTensor>& tensors) {
  if (!nonce_.is_null()) header[ipc::kNonceField] = nonce_;
  std::vector<ipc::Bytes> blobs;
  for (const ipc::EncodedTensor& t : tensors) blobs.push_back(t.bytes());
  channel_.send(header, blobs);
}

}  // namespace kbv::worker
