// The worker's command loop. Each command gets exactly one reply: {"status": "ok", ...} or
// {"status": "error", "kind", "message"}. The parent owns the order of commands, the seeds and
// every judgement; this process only runs what it is told and reports raw results.
#include "kbv/worker/worker_main.h"

#include <unistd.h>

#include <cstdio>
#include <limits>
#include <memory>
#include <optional>
#include <random>

#include <ATen/ATen.h>
#include <c10/util/Exception.h>
#include <pybind11/pybind11.h>

#include "kbv/check/comparison.h"
#include "kbv/check/sketch.h"
#include "kbv/measure/memory.h"
#include "kbv/python/harness.h"
#include "kbv/python/interpreter.h"
#include "kbv/sandbox/enter.h"
#include "kbv/worker/channel.h"
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

// Describes outputs (or their sketches) for the reply into `metas`: each large one placed in the
// output region, the others encoded as blobs appended to `store`.
void attach(std::vector<EncodedTensor>& store, json& metas, const std::vector<at::Tensor>& tensors) {
  metas = json::array();
  for (const at::Tensor& t : tensors) {
    if (std::optional<json> placed = output_region ? output_region->place(t) : std::nullopt) {
      metas.push_back(std::move(*placed));
      continue;
    }
    store.push_back(encode(t));
    metas.push_back(store.back().meta);
  }
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

// `check`: draw one input set, run forward under each mode, return the outputs.
// With `errors_against_first`, a later mode's outputs stay here: its reply holds their scaled
// error against the first mode's (the reference worker's second call and its TF32 baseline are
// judged here, and only the reference crosses to the parent), and the first mode's result says
// whether its outputs are all finite and each one's RMS, measured where they lie (on the device
// when large) instead of in passes of the parent over the copies.
void handle_check(Session& session, Channel& channel, const json& command) {
  const pybind11::list inputs = session.draw(command.at("draw"));
  json header = {{"status", "ok"}, {"checksum", input_checksum(inputs)}, {"results", json::array()}};
  std::vector<EncodedTensor> tensors;
  const bool against_first = command.value("errors_against_first", false);
  std::optional<FirstOutputs> first;
  for (const json& mode : command.at("modes")) {
    const std::string family = command.at("draw").value("family", "standard");
    Forward forward = session.forward(mode.get<std::string>(), inputs, "check on " + family + " inputs");
    json result = {{"mode", mode}};
    if (forward.bad_output) {
      result["bad_output"] = *forward.bad_output;
    } else if (first) {
      result["error"] = first->error_of(forward.outputs);
    } else {
      attach(tensors, result["outputs"], forward.outputs);
    }
    if (against_first && !first) {
      first.emplace(forward.outputs);
      if (!forward.bad_output) {
        result["all_finite"] = first->all_finite;
        result["rms"] = first->rms;
      }
    }
    header["results"].push_back(result);
  }
  reply(channel, header, tensors);
}

// `sketches`: for each of the candidate's timed calls (its content seed and sketch seed), the
// reference's outputs on the same standard draw, sampled at the same positions, with their RMS.
// Many calls per request: one round trip each cost more than the call.
void handle_sketches(Session& session, Channel& channel, const json& command) {
  const int points = command.at("points");
  json header = {{"status", "ok"}, {"results", json::array()}};
  std::vector<EncodedTensor> tensors;
  for (const json& call : command.at("calls")) {
    const pybind11::list inputs = session.draw_standard(call.at("seed").get<std::uint64_t>());
    const Forward forward = session.forward("reference", inputs, "check of a timed call's inputs");
    if (forward.bad_output) throw Failure("internal", "the reference on a timed call's inputs: " + *forward.bad_output);
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
// them (and so its clocks) does not depend on the pipe's round trip. A call may first refill the
// input pool (`fill`: new content in the same buffers). With `points` > 0 each call's outputs are
// sampled at positions drawn here after the call returned: no seed exists while it computes. The
// samples stay on the device until the batch's last call: no copy to or from the host runs
// between two timed calls (the reference's worker copies nothing between its baseline's).
void handle_timed_calls(Session& session, Channel& channel, const json& command) {
  const std::string mode = command.at("mode");
  const int points = command.at("points");
  static std::random_device entropy;
  json header = {{"status", "ok"}, {"results", json::array()}};
  std::vector<std::vector<at::Tensor>> gathered;  // per call, on the device
  for (const json& call : command.at("calls")) {
    if (call.contains("fill")) session.fill_pool(call["fill"].get<std::vector<std::uint64_t>>());
    const size_t set = call.at("set");
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
  reply(channel, header, tensors);
}

void handle(Session& session, Channel& channel, const json& command) {
  const std::string name = command.at("cmd");
  if (output_region) output_region->begin_command(command.value("keep", false), command.value("release_kept", false));
  if (name == "load") {
    json facts = session.load(command);
    facts["status"] = "ok";
    reply(channel, facts);
  } else if (name == "device") {
    session.start_device(command.at("device"), command.value("protocol", json()));
    reply(channel, {{"status", "ok"}});
  } else if (name == "compile") {
    reply(channel, {{"status", "ok"}, {"ahead", session.compile(command)}});
  } else if (name == "check") {
    handle_check(session, channel, command);
  } else if (name == "sketches") {
    handle_sketches(session, channel, command);
  } else if (name == "pool") {
    session.fill_pool(command.at("seeds").get<std::vector<std::uint64_t>>());
    reply(channel, {{"status", "ok"}});
  } else if (name == "warmup") {
    session.warm_up(command.at("calls"), command.at("seconds"), command.at("max_seconds"), command.at("mode"));
    reply(channel, {{"status", "ok"}, {"clock", session.clock()}});
  } else if (name == "flags") {
    reply(channel, {{"status", "ok"}, {"flags", session.apply_flags(command.at("mode"))}});
  } else if (name == "timed_calls") {
    handle_timed_calls(session, channel, command);
  } else if (name == "memory") {
    json memory = session.measure_memory(command.at("mode"));
    memory["status"] = "ok";
    reply(channel, memory);
  } else if (name == "screen") {
    // Before anything of the candidate runs: only its text is read.
    json screened = to_json(python::screen().attr("screen")(command.at("candidate").get<std::string>()));
    screened["status"] = "ok";
    reply(channel, screened);
  } else if (name == "floor") {
    reply(channel, {{"status", "ok"}, {"copy_seconds", session.copy_seconds(command.at("bytes"))}});
  } else if (name == "trace") {
    reply(channel, {{"status", "ok"}, {"trace", session.trace(command.at("draw"), command.at("mode"))}});
  } else if (name == "probe") {
    std::vector<at::Tensor> refreshed;
    json header = {{"status", "ok"}, {"probe", session.probe(command.at("draw"), command.value("refresh", json()), &refreshed)}};
    std::vector<EncodedTensor> tensors;
    attach(tensors, header["outputs"], refreshed);  // the refreshed call's outputs
    reply(channel, header, tensors);
  } else if (name == "audit") {
    reply(channel, {{"status", "ok"}, {"facts", session.audit(command.at("draw"), command.at("other"))}});
  } else if (name == "findings") {
    reply(channel, {{"status", "ok"}, {"findings", session.findings()}, {"ops", session.observed_ops()}});
  } else {
    throw Failure("internal", "unknown worker command '" + name + "'");
  }
}

// An exception no step typed: in the candidate's process it came from the candidate's code or
// its effects (a CUDA fault surfacing in a later call); in the reference's, it is ours.
std::string untyped_failure_kind(Role role, const std::string& text) {
  return role == Role::candidate ? classify_candidate_error(text) : "internal";
}

}  // namespace

int run_worker(Role role, const std::string& python_executable, const std::string& sandbox) {
  if (!sandbox.empty()) sandbox::enter_or_exit(sandbox::spec_from_json(json::parse(sandbox)));
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
    if (message.header.value("cmd", "") == "exit") {
      reply(channel, {{"status", "ok"}});
      std::fflush(nullptr);
      _exit(0);  // skip interpreter and torch teardown
    }
    std::string kind, text;
    try {
      handle(session, channel, message.header);
      continue;
    } catch (const Failure& failure) {
      kind = failure.kind;
      text = failure.what();
      if (role == Role::candidate && kind == "runtime_error") kind = classify_candidate_error(text);
    } catch (const c10::Error& error) {
      text = error.what_without_backtrace();
      kind = untyped_failure_kind(role, text);
    } catch (const std::exception& error) {  // pybind11's error_already_set included
      text = error.what();
      kind = untyped_failure_kind(role, text);
    }
    reply(channel, {{"status", "error"}, {"kind", kind}, {"message", text}});
  }
}

}  // namespace kbv::worker
