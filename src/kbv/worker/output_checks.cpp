#include "kbv/worker/output_checks.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <map>
#include <memory>
#include <optional>

#include <ATen/ATen.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <pybind11/pybind11.h>

#include "kbv/check/comparison.h"
#include "kbv/check/sketch.h"
#include "kbv/ipc/device_handoff.h"
#include "kbv/ipc/worker_fds.h"

namespace kbv::worker {
namespace {

using nlohmann::json;

// Where a pair of outputs is compared. On the device, a process's first comparison loads its
// kernels (0.13 s on the H200, bench/probes/startup_probe.py), later ones take under a millisecond; on
// the host each pays the copy out into fresh pages and a pass. Measured on the H200 over one
// evaluation's draws (1 under kernelbench, 11 under verified): the host was 0.13-0.15 s cheaper
// under kernelbench at 1 and 6 MiB per output, as cheap under verified at 1 MiB and 0.29 s dearer
// at 6 MiB; inside kbv run the first-use cost is paid once per problem. From 4 MiB up, the device.
constexpr std::int64_t kDeviceComparisonBytes = std::int64_t{4} << 20;

at::Tensor comparable(const at::Tensor& t) {
  return t.is_cuda() && static_cast<std::int64_t>(t.nbytes()) < kDeviceComparisonBytes ? t.cpu() : t;
}

// The first mode's outputs as the later modes are judged against them: where they are compared,
// their RMS and whether all are finite, each made once however many modes follow.
struct FirstOutputs {
  explicit FirstOutputs(const std::vector<at::Tensor>& given) {
    for (const at::Tensor& t : given) {
      outputs.push_back(comparable(t));
      rms.push_back(check::finite_rms(outputs.back()));
    }
    all_finite = check::all_finite(outputs);
  }
  // The scaled error of `later` against these (infinity where they cannot be compared).
  double error_of(const std::vector<at::Tensor>& later) const {
    if (check::structure_mismatch(later, outputs)) return std::numeric_limits<double>::infinity();
    std::vector<at::Tensor> xs;
    for (const at::Tensor& t : later) xs.push_back(comparable(t));
    return check::scaled_error(xs, outputs, rms);
  }
  std::vector<at::Tensor> outputs;
  std::vector<double> rms;
  bool all_finite = true;
};

void check_draw(Session& session, Replies& replies, const ipc::commands::Check& command, json& header,
                std::vector<ipc::EncodedTensor>& tensors, std::vector<ipc::UniqueFd>& files) {
  const bool against_first = command.errors_against_first;
  const pybind11::list inputs = session.draw(command.draw);
  header = {{"status", "ok"}, {"checksum", input_checksum(inputs)}, {"results", json::array()}};
  std::optional<FirstOutputs> first;
  for (const std::string& mode : command.modes) {
    const std::string family = command.draw.value("family", "standard");
    Forward forward = session.forward(mode, inputs, "check on " + family + " inputs");
    json result = {{"mode", mode}};
    if (forward.bad_output) {
      result["bad_output"] = *forward.bad_output;
    } else if (first) {
      result["error"] = first->error_of(forward.outputs);
    } else if (!against_first) {
      replies.attach_for_comparison(tensors, result["outputs"], forward.outputs, files);
    }
    if (against_first && !first) {
      first.emplace(forward.outputs);
      if (!forward.bad_output) {
        result["all_finite"] = first->all_finite;
        result["rms"] = first->rms;
        std::int64_t bytes = 0;
        for (const at::Tensor& t : forward.outputs) bytes += static_cast<std::int64_t>(t.nbytes());
        result["output_bytes"] = bytes;
      }
    }
    header["results"].push_back(result);
  }
}

check::OutputComparison compare_draw(Session& session, const ipc::commands::Compare& command, std::size_t file_count,
                                     std::vector<std::vector<std::byte>>& blobs) {
  std::vector<ipc::UniqueFd> files;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (files.size() < file_count) {
    ipc::PassedFds received = ipc::receive_fds(ipc::kFileSocketFd, deadline);
    if (received.status != ipc::PassedFds::Status::message)
      throw ipc::Failure(ipc::FailureKind::internal, "compare: the files did not come with the command");
    for (ipc::UniqueFd& fd : received.fds) files.push_back(std::move(fd));
  }
  const auto file = [&](const json& meta) -> ipc::UniqueFd& {
    const size_t index = meta.at("file");
    if (index >= files.size() || !files[index])
      throw ipc::Failure(ipc::FailureKind::internal, "compare: an output names no file handed over");
    return files[index];
  };
  std::map<size_t, std::shared_ptr<const ipc::SharedRegion>> regions;
  std::vector<at::Tensor> outputs;
  size_t blob = 0;
  for (const json& meta : command.outputs) {
    if (meta.contains("region")) {
      const size_t index = meta.at("file");
      if (!regions.count(index)) regions[index] = ipc::SharedRegion::open_received(std::move(file(meta)));
      outputs.push_back(ipc::SharedRegion::view(regions[index], meta));
    } else if (meta.contains("device")) {
      try {
        if (!session.device().is_cuda()) throw std::runtime_error("this evaluation has no device");
        outputs.push_back(
            ipc::import_device_file(std::move(file(meta)), meta, std::max<int>(session.device().index(), 0)));
      } catch (const std::runtime_error& failed) {
        // The candidate's worker described and exported it: what cannot be mapped is its doing.
        check::OutputComparison unusable;
        unusable.mismatch = std::string("its output could not be taken over on the device: ") + failed.what();
        return unusable;
      }
    } else {
      if (blob >= blobs.size()) throw ipc::Failure(ipc::FailureKind::internal, "compare: fewer blobs than outputs");
      outputs.push_back(ipc::decode(meta, std::move(blobs[blob++])));
    }
  }
  const pybind11::list inputs = session.draw(command.draw);
  Forward forward = session.forward("reference", inputs, "reference for a candidate's check");
  if (forward.bad_output)
    throw ipc::Failure(ipc::FailureKind::internal, "the reference for a checked draw: " + *forward.bad_output);
  std::vector<at::Tensor>& reference = forward.outputs;
  for (size_t i = 0; i < outputs.size() && i < reference.size(); ++i) {
    reference[i] = comparable(reference[i]);
    outputs[i] = outputs[i].to(reference[i].device());
  }
  return check::compare_outputs(outputs, reference, command.rms, command.scaled, command.atol, command.rtol);
}

}  // namespace

void release_cached_device_memory(const Session& session) {
  if (session.device().is_cuda()) c10::cuda::CUDACachingAllocator::emptyCache();
}

// `check`: draw one input set, run forward under each mode, return the outputs.
// With `errors_against_first` (the reference's worker) no output crosses to the parent: a later
// mode's reply holds its scaled error against the first mode's (the reference's second call, the
// TF32 baseline), the first mode's says whether its outputs are all finite, each one's RMS and
// their size, measured where they lie (on the device when large). A candidate's outputs are
// compared with the reference's here too (`compare`).
void handle_check(Session& session, Replies& replies, const ipc::commands::Check& command) {
  json header;
  std::vector<ipc::EncodedTensor> tensors;
  std::vector<ipc::UniqueFd> files;
  check_draw(session, replies, command, header, tensors, files);
  release_cached_device_memory(session);
  replies.send_files(files);
  replies.send(header, tensors);
}

// `compare`: a candidate's outputs for a draw against the reference's for the same inputs,
// computed again here (between two calls it moves by no more than the repeat error every
// tolerance already holds): only the comparison's numbers go back. The outputs come as blobs, as
// views into the candidate's output region, or as the candidate's device memory (device_handoff.h);
// the parent hands the files over with the command, each output names its own ("file"). A large
// pair is compared on the device, where the reference's output lies.
void handle_compare(Session& session, Replies& replies, const json& header,
                    std::vector<std::vector<std::byte>>& blobs) {
  // "files": the transport's count of the files handed over with the command (eval/worker_client).
  const check::OutputComparison comparison = compare_draw(session, ipc::commands::read<ipc::commands::Compare>(header),
                                                          header.value("files", std::size_t{0}), blobs);
  release_cached_device_memory(session);
  replies.send({{"status", "ok"}, {"comparison", check::to_json(comparison)}});
}

// `sketches`: for each of the candidate's timed calls (its content seed and sketch seed), the
// reference's outputs on the same standard draw, sampled at the same positions, with their RMS.
// Many calls per request: one round trip each cost more than the call.
void handle_sketches(Session& session, Replies& replies, const ipc::commands::Sketches& command) {
  const int points = command.points;
  json header = {{"status", "ok"}, {"results", json::array()}};
  std::vector<ipc::EncodedTensor> tensors;
  for (const json& call : command.calls) {
    const pybind11::list inputs = session.draw_standard(call.at("seed").get<std::uint64_t>());
    const Forward forward = session.forward("reference", inputs, "check of a timed call's inputs");
    if (forward.bad_output)
      throw ipc::Failure(ipc::FailureKind::internal, "the reference on a timed call's inputs: " + *forward.bad_output);
    json rms = json::array();
    for (const at::Tensor& t : forward.outputs) rms.push_back(check::finite_rms(t));
    json result = {{"rms", std::move(rms)}};
    replies.attach(
        tensors, result["outputs"],
        check::sketch(forward.outputs, call.at("sketch_seed").get<std::uint64_t>(), points, session.device()));
    header["results"].push_back(std::move(result));
  }
  replies.send(header, tensors);
}

}  // namespace kbv::worker
