// The worker's command loop. Each command gets exactly one reply: {"status": "ok", ...} or
// {"status": "error", "kind", "message"}. The parent owns the order of commands, the seeds and
// every judgement; this process only runs what it is told and reports raw results.
#include "kbv/worker/worker_main.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <random>

#include <ATen/ATen.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/util/Exception.h>
#include <pybind11/pybind11.h>

#include "kbv/check/comparison.h"
#include "kbv/check/sketch.h"
#include "kbv/measure/memory.h"
#include "kbv/python/harness.h"
#include "kbv/python/interpreter.h"
#include "kbv/sandbox/enter.h"
#include "kbv/sandbox/environment.h"
#include "kbv/sandbox/explain.h"
#include "kbv/worker/channel.h"
#include "kbv/worker/commands.h"
#include "kbv/worker/device_handoff.h"
#include "kbv/worker/fd_passing.h"
#include "kbv/worker/session.h"
#include "kbv/worker/shared_region.h"
#include "kbv/worker/tensor_codec.h"
#include "kbv/worker/worker_process.h"

namespace kbv::worker {
namespace {

using nlohmann::json;

// The parent's shared-memory region for large outputs (shared_region.h); null without one.
SharedRegion* output_region = nullptr;

// The nonce of the command being answered (worker_main.h), echoed in its reply.
json command_nonce;

// Describes `t` for a reply: placed in the output region when large, else encoded as a blob
// appended to `store`.
json attach_one(std::vector<EncodedTensor>& store, const at::Tensor& t) {
  if (std::optional<json> placed = output_region ? output_region->place(t) : std::nullopt) return std::move(*placed);
  store.push_back(encode(t));
  return store.back().meta;
}

// Describes outputs (or their sketches) for the reply into `metas`.
void attach(std::vector<EncodedTensor>& store, json& metas, const std::vector<at::Tensor>& tensors) {
  metas = json::array();
  for (const at::Tensor& t : tensors) metas.push_back(attach_one(store, t));
}

// As attach(), for outputs the reference's worker compares (a check's, a probe's refreshed call's):
// a large device output is handed over on the device (device_handoff.h), its file kept in `files`
// for send_files().
void attach_for_comparison(std::vector<EncodedTensor>& store, json& metas, const std::vector<at::Tensor>& tensors,
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

// The files of device outputs to the parent, before the reply that describes them.
void send_files(std::vector<UniqueFd>& files) {
  for (size_t first = 0; first < files.size(); first += kMaxPassedFds) {
    std::vector<int> fds;
    for (size_t i = first; i < files.size() && i < first + kMaxPassedFds; ++i) fds.push_back(files[i].get());
    send_fds(kFileSocketFd, "outputs", fds);
  }
  files.clear();
}

void reply(Channel& channel, json header, const std::vector<EncodedTensor>& tensors = {}) {
  if (!command_nonce.is_null()) header[kNonceField] = command_nonce;
  std::vector<Bytes> blobs;
  for (const EncodedTensor& t : tensors) blobs.push_back(t.bytes());
  channel.send(header, blobs);
}

// Where a pair of outputs is compared. On the device, a process's first comparison loads its
// kernels (0.13 s on the H200, bench/startup_probe.py), later ones take under a millisecond; on
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

// Each worker gives the device memory its caching allocator holds back to the device after each
// draw, comparison, probe, trace, copy floor and audited draw (never between timed calls): the two
// workers share the device, and what one caches of GiB-sized inputs, copies and outputs the other
// may need next (an honest 6 GiB ReLU ran out of memory on an 80 GB card while the candidate's
// worker held 53 GiB from its checked draws).
void release_cached_device_memory(const Session& session) {
  if (session.device().is_cuda()) c10::cuda::CUDACachingAllocator::emptyCache();
}

// `check`: draw one input set, run forward under each mode, return the outputs.
// With `errors_against_first` (the reference's worker) no output crosses to the parent: a later
// mode's reply holds its scaled error against the first mode's (the reference's second call, the
// TF32 baseline), the first mode's says whether its outputs are all finite, each one's RMS and
// their size, measured where they lie (on the device when large). A candidate's outputs are
// compared with the reference's here too (`compare`).
void check_draw(Session& session, const commands::Check& command, json& header, std::vector<EncodedTensor>& tensors,
                std::vector<UniqueFd>& files) {
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
      attach_for_comparison(tensors, result["outputs"], forward.outputs, files);
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

void handle_check(Session& session, Channel& channel, const commands::Check& command) {
  json header;
  std::vector<EncodedTensor> tensors;
  std::vector<UniqueFd> files;
  check_draw(session, command, header, tensors, files);
  release_cached_device_memory(session);
  send_files(files);
  reply(channel, header, tensors);
}

// `compare`: a candidate's outputs for a draw against the reference's for the same inputs,
// computed again here (between two calls it moves by no more than the repeat error every
// tolerance already holds): only the comparison's numbers go back. The outputs come as blobs, as
// views into the candidate's output region, or as the candidate's device memory (device_handoff.h);
// the parent hands the files over with the command, each output names its own ("file"). A large
// pair is compared on the device, where the reference's output lies.
check::OutputComparison compare_draw(Session& session, const commands::Compare& command, std::size_t file_count,
                                     std::vector<std::vector<std::byte>>& blobs) {
  std::vector<UniqueFd> files;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (files.size() < file_count) {
    PassedFds received = receive_fds(kFileSocketFd, deadline);
    if (received.status != PassedFds::Status::message) throw Failure(FailureKind::internal, "compare: the files did not come with the command");
    for (UniqueFd& fd : received.fds) files.push_back(std::move(fd));
  }
  const auto file = [&](const json& meta) -> UniqueFd& {
    const size_t index = meta.at("file");
    if (index >= files.size() || !files[index]) throw Failure(FailureKind::internal, "compare: an output names no file handed over");
    return files[index];
  };
  std::map<size_t, std::shared_ptr<const SharedRegion>> regions;
  std::vector<at::Tensor> outputs;
  size_t blob = 0;
  for (const json& meta : command.outputs) {
    if (meta.contains("region")) {
      const size_t index = meta.at("file");
      if (!regions.count(index)) regions[index] = SharedRegion::open_received(std::move(file(meta)));
      outputs.push_back(SharedRegion::view(regions[index], meta));
    } else if (meta.contains("device")) {
      try {
        if (!session.device().is_cuda()) throw std::runtime_error("this evaluation has no device");
        outputs.push_back(import_device_file(std::move(file(meta)), meta, std::max<int>(session.device().index(), 0)));
      } catch (const std::runtime_error& failed) {
        // The candidate's worker described and exported it: what cannot be mapped is its doing.
        check::OutputComparison unusable;
        unusable.mismatch = std::string("its output could not be taken over on the device: ") + failed.what();
        return unusable;
      }
    } else {
      if (blob >= blobs.size()) throw Failure(FailureKind::internal, "compare: fewer blobs than outputs");
      outputs.push_back(decode(meta, std::move(blobs[blob++])));
    }
  }
  const pybind11::list inputs = session.draw(command.draw);
  Forward forward = session.forward("reference", inputs, "reference for a candidate's check");
  if (forward.bad_output) throw Failure(FailureKind::internal, "the reference for a checked draw: " + *forward.bad_output);
  std::vector<at::Tensor>& reference = forward.outputs;
  for (size_t i = 0; i < outputs.size() && i < reference.size(); ++i) {
    reference[i] = comparable(reference[i]);
    outputs[i] = outputs[i].to(reference[i].device());
  }
  return check::compare_outputs(outputs, reference, command.rms, command.scaled, command.atol, command.rtol);
}

void handle_compare(Session& session, Channel& channel, const json& header, std::vector<std::vector<std::byte>>& blobs) {
  // "files": the transport's count of the files handed over with the command (eval/worker_client).
  const check::OutputComparison comparison =
      compare_draw(session, commands::read<commands::Compare>(header), header.value("files", std::size_t{0}), blobs);
  release_cached_device_memory(session);
  reply(channel, {{"status", "ok"}, {"comparison", check::to_json(comparison)}});
}

// `sketches`: for each of the candidate's timed calls (its content seed and sketch seed), the
// reference's outputs on the same standard draw, sampled at the same positions, with their RMS.
// Many calls per request: one round trip each cost more than the call.
void handle_sketches(Session& session, Channel& channel, const commands::Sketches& command) {
  const int points = command.points;
  json header = {{"status", "ok"}, {"results", json::array()}};
  std::vector<EncodedTensor> tensors;
  for (const json& call : command.calls) {
    const pybind11::list inputs = session.draw_standard(call.at("seed").get<std::uint64_t>());
    const Forward forward = session.forward("reference", inputs, "check of a timed call's inputs");
    if (forward.bad_output) throw Failure(FailureKind::internal, "the reference on a timed call's inputs: " + *forward.bad_output);
    json rms = json::array();
    for (const at::Tensor& t : forward.outputs) rms.push_back(check::finite_rms(t));
    json result = {{"rms", std::move(rms)}};
    attach(tensors, result["outputs"],
           check::sketch(forward.outputs, call.at("sketch_seed").get<std::uint64_t>(), points, session.device()));
    header["results"].push_back(std::move(result));
  }
  reply(channel, header, tensors);
}

// `timed_calls`: a batch of timed calls back to back, so that what the GPU does between two of
// them (and so its clocks) does not depend on the pipe's round trip. A call may first refill its
// input set (`fill`: the seed of new content for the same buffers). With `points` > 0 each call's outputs are
// sampled at positions drawn here after the call returned: no seed exists while it computes. The
// samples stay on the device until the batch's last call: no copy to or from the host runs
// between two timed calls (the reference's worker copies nothing between its baseline's).
void handle_timed_calls(Session& session, Channel& channel, const commands::TimedCalls& command) {
  const std::string& mode = command.mode;
  const int points = command.points;
  static std::random_device entropy;
  json header = {{"status", "ok"}, {"results", json::array()}};
  std::vector<std::vector<at::Tensor>> gathered;  // per call, on the device
  for (const json& call : command.calls) {
    const size_t set = call.at("set");
    if (call.contains("fill")) session.fill_set(set, call["fill"].get<std::uint64_t>());
    const measure::TimedCall timed = session.timed_call(set, mode);
    json result = {{"seconds", timed.seconds}, {"stream_seconds", timed.stream_seconds}, {"launch_seconds", timed.launch_seconds}};
    if (timed.host_wait_seconds) {
      result["host_wait_seconds"] = *timed.host_wait_seconds;
      result["end_on_device"] = timed.end_on_device;
    }
    if (points > 0) {
      const std::uint64_t seed = ((std::uint64_t{entropy()} << 32) | entropy()) >> 1;
      result["sketch_seed"] = seed;
      gathered.push_back(check::gather_sketch(session.last_outputs(set), seed, points, session.device()));
    }
    header["results"].push_back(std::move(result));
  }
  std::vector<EncodedTensor> tensors;
  for (size_t i = 0; i < gathered.size(); ++i) attach(tensors, header["results"][i]["outputs"], check::to_host(gathered[i]));
  header["cpu"] = session.cpu_totals();
  if (nlohmann::json gpu = session.gpu_totals(); !gpu.is_null()) header["gpu"] = std::move(gpu);
  reply(channel, header, tensors);
}

void handle(Session& session, Channel& channel, Message& message) {
  const json& header = message.header;
  const std::string name = header.at("cmd");
  using namespace commands;
  if (output_region) output_region->begin_command();
  // The timing's commands, in its order; any other ends it.
  if (name != Pool::kName && name != Warmup::kName && name != Flags::kName && name != TimedCalls::kName) session.end_timing();
  if (name == Load::kName) {
    json facts = session.load(read<Load>(header));
    facts["status"] = "ok";
    reply(channel, facts);
  } else if (name == Device::kName) {
    const Device command = read<Device>(header);
    session.start_device(command.device, command.protocol);
    reply(channel, {{"status", "ok"}});
  } else if (name == Compile::kName) {
    reply(channel, {{"status", "ok"}, {"ahead", session.compile(read<Compile>(header))}});
  } else if (name == Check::kName) {
    handle_check(session, channel, read<Check>(header));
  } else if (name == Compare::kName) {
    handle_compare(session, channel, header, message.blobs);
  } else if (name == Sketches::kName) {
    handle_sketches(session, channel, read<Sketches>(header));
  } else if (name == Pool::kName) {
    session.begin_timing();
    session.fill_pool(read<Pool>(header).seeds);
    reply(channel, {{"status", "ok"}});
  } else if (name == DropPool::kName) {
    session.drop_pool();
    release_cached_device_memory(session);
    reply(channel, {{"status", "ok"}});
  } else if (name == Warmup::kName) {
    const Warmup command = read<Warmup>(header);
    session.warm_up(command.calls, command.seconds, command.max_seconds, command.mode);
    reply(channel, {{"status", "ok"}, {"clock", session.clock()}});
  } else if (name == Flags::kName) {
    reply(channel, {{"status", "ok"}, {"flags", session.apply_flags(read<Flags>(header).mode)}});
  } else if (name == TimedCalls::kName) {
    handle_timed_calls(session, channel, read<TimedCalls>(header));
  } else if (name == Memory::kName) {
    json memory = session.measure_memory(read<Memory>(header).mode);
    memory["status"] = "ok";
    reply(channel, memory);
  } else if (name == Screen::kName) {
    // Before anything of the candidate runs: only its text is read.
    json screened = to_json(python::screen().attr("screen")(read<Screen>(header).candidate));
    screened["status"] = "ok";
    reply(channel, screened);
  } else if (name == Floor::kName) {
    const double seconds = session.copy_seconds(read<Floor>(header).bytes);
    release_cached_device_memory(session);  // two buffers of the outputs' size
    reply(channel, {{"status", "ok"}, {"copy_seconds", seconds}});
  } else if (name == Trace::kName) {
    const Trace command = read<Trace>(header);
    const json trace = session.trace(command.draw, command.mode);
    release_cached_device_memory(session);
    reply(channel, {{"status", "ok"}, {"trace", trace}});
  } else if (name == Probe::kName) {
    const Probe command = read<Probe>(header);
    std::vector<at::Tensor> refreshed;
    json reply_header = {{"status", "ok"}, {"probe", session.probe(command.draw, command.refresh, &refreshed)}};
    std::vector<EncodedTensor> tensors;
    std::vector<UniqueFd> files;
    attach_for_comparison(tensors, reply_header["outputs"], refreshed, files);  // the refreshed call's outputs
    refreshed.clear();
    release_cached_device_memory(session);
    send_files(files);
    reply(channel, reply_header, tensors);
  } else if (name == Audit::kName) {
    const Audit command = read<Audit>(header);
    const json facts = session.audit(command.draw, command.other);
    release_cached_device_memory(session);  // audits of other problems may share the device (kbv audit --jobs)
    reply(channel, {{"status", "ok"}, {"facts", facts}});
  } else if (name == Findings::kName) {
    reply(channel, {{"status", "ok"}, {"findings", session.findings()}, {"ops", session.observed_ops()}});
  } else {
    throw Failure(FailureKind::internal, "unknown worker command '" + name + "'");
  }
}

// An exception no step typed: in the candidate's process it came from the candidate's code or
// its effects (a CUDA fault surfacing in a later call); in the reference's, it is ours.
FailureKind untyped_failure_kind(Role role, const std::string& text) {
  return role == Role::candidate ? classify_candidate_error(text) : FailureKind::internal;
}

}  // namespace

int run_worker(Role role, const std::string& python_executable, const std::string& sandbox) {
  if (!sandbox.empty()) {
    sandbox::keep_only_candidate_environment();
    sandbox::enter_or_exit(sandbox::spec_from_json(json::parse(sandbox)));
  }
  measure::install_counting_cpu_allocator();
  python::start_interpreter(python_executable);
  return serve_worker(role);
}

int serve_worker(Role role) {
  Channel channel = open_worker_channel();
  static const std::unique_ptr<SharedRegion> region = SharedRegion::open_inherited(kInheritedFd);
  output_region = region.get();
  Session session(role);
  for (;;) {
    Message message;
    try {
      message = channel.receive();
    } catch (const ChannelClosed&) {
      return 0;  // the parent is gone or done
    }
    command_nonce = message.header.value(kNonceField, json());
    if (message.header.value("cmd", "") == commands::Exit::kName) {
      reply(channel, {{"status", "ok"}});
      std::fflush(nullptr);
      _exit(0);  // skip interpreter and torch teardown
    }
    FailureKind kind = FailureKind::internal;
    std::string text;
    try {
      handle(session, channel, message);
      continue;
    } catch (const Failure& failure) {
      kind = failure.kind;
      text = failure.what();
      if (role == Role::candidate && kind == FailureKind::runtime_error) kind = classify_candidate_error(text);
    } catch (const c10::Error& error) {
      text = error.what_without_backtrace();
      kind = untyped_failure_kind(role, text);
    } catch (const std::exception& error) {  // pybind11's error_already_set included
      text = error.what();
      kind = untyped_failure_kind(role, text);
    }
    if (sandbox::out_of_memory(text)) text += session.memory_in_words();
    reply(channel, {{"status", "error"}, {"kind", name(kind)}, {"message", text}});
  }
}

}  // namespace kbv::worker
