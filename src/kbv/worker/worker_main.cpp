// The worker's command loop. Each command gets exactly one reply: {"status": "ok", ...} or
// {"status": "error", "kind", "message"}. The parent owns the order of commands, the seeds and
// every judgement; this process only runs what it is told and reports raw results. The commands
// over outputs to be checked are output_checks.h's; a reply's transport is reply.h's.
#include "kbv/worker/worker_main.h"

#include <unistd.h>

#include <cstdio>
#include <memory>
#include <random>

#include <ATen/ATen.h>
#include <c10/util/Exception.h>
#include <pybind11/pybind11.h>

#include "kbv/check/sketch.h"
#include "kbv/ipc/channel.h"
#include "kbv/ipc/commands.h"
#include "kbv/ipc/shared_region.h"
#include "kbv/ipc/worker_fds.h"
#include "kbv/measure/memory.h"
#include "kbv/python/harness.h"
#include "kbv/python/interpreter.h"
#include "kbv/sandbox/enter.h"
#include "kbv/sandbox/environment.h"
#include "kbv/sandbox/explain.h"
#include "kbv/worker/output_checks.h"
#include "kbv/worker/reply.h"
#include "kbv/worker/session.h"

namespace kbv::worker {
namespace {

using nlohmann::json;

// `timed_calls`: a batch of timed calls back to back, so that what the GPU does between two of
// them (and so its clocks) does not depend on the pipe's round trip. A call may first refill its
// input set (`fill`: the seed of new content for the same buffers). With `points` > 0 each call's outputs are
// sampled at positions drawn here after the call returned: no seed exists while it computes. The
// samples stay on the device until the batch's last call: no copy to or from the host runs
// between two timed calls (the reference's worker copies nothing between its baseline's).
void handle_timed_calls(Session& session, Replies& replies, const ipc::commands::TimedCalls& command) {
  const std::string& mode = command.mode;
  const int points = command.points;
  static std::random_device entropy;
  json header = {{"status", "ok"}, {"results", json::array()}};
  std::vector<std::vector<at::Tensor>> gathered;  // per call, on the device
  for (const json& call : command.calls) {
    const size_t set = call.at("set");
    if (call.contains("fill")) session.fill_set(set, call["fill"].get<std::uint64_t>());
    const measure::TimedCall timed = session.timed_call(set, mode);
    json result = {
        {"seconds", timed.seconds}, {"stream_seconds", timed.stream_seconds}, {"launch_seconds", timed.launch_seconds}};
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
  std::vector<ipc::EncodedTensor> tensors;
  for (size_t i = 0; i < gathered.size(); ++i)
    replies.attach(tensors, header["results"][i]["outputs"], check::to_host(gathered[i]));
  header["cpu"] = session.cpu_totals();
  if (nlohmann::json gpu = session.gpu_totals(); !gpu.is_null()) header["gpu"] = std::move(gpu);
  replies.send(header, tensors);
}

void handle(Session& session, Replies& replies, ipc::Message& message) {
  const json& header = message.header;
  const std::string name = header.at("cmd");
  using namespace ipc::commands;
  // The timing's commands, in its order; any other ends it.
  if (name != Pool::kName && name != Warmup::kName && name != Flags::kName && name != TimedCalls::kName)
    session.end_timing();
  if (name == Load::kName) {
    json facts = session.load(read<Load>(header));
    facts["status"] = "ok";
    replies.send(facts);
  } else if (name == Device::kName) {
    const Device command = read<Device>(header);
    session.start_device(command.device, command.protocol);
    replies.send({{"status", "ok"}});
  } else if (name == Compile::kName) {
    replies.send({{"status", "ok"}, {"ahead", session.compile(read<Compile>(header))}});
  } else if (name == Check::kName) {
    handle_check(session, replies, read<Check>(header));
  } else if (name == Compare::kName) {
    handle_compare(session, replies, header, message.blobs);
  } else if (name == Sketches::kName) {
    handle_sketches(session, replies, read<Sketches>(header));
  } else if (name == Pool::kName) {
    session.begin_timing();
    session.fill_pool(read<Pool>(header).seeds);
    replies.send({{"status", "ok"}});
  } else if (name == DropPool::kName) {
    session.drop_pool();
    release_cached_device_memory(session);
    replies.send({{"status", "ok"}});
  } else if (name == Warmup::kName) {
    const Warmup command = read<Warmup>(header);
    session.warm_up(command.calls, command.seconds, command.max_seconds, command.mode);
    replies.send({{"status", "ok"}, {"clock", session.clock()}});
  } else if (name == Flags::kName) {
    replies.send({{"status", "ok"}, {"flags", session.apply_flags(read<Flags>(header).mode)}});
  } else if (name == TimedCalls::kName) {
    handle_timed_calls(session, replies, read<TimedCalls>(header));
  } else if (name == Memory::kName) {
    json memory = session.measure_memory(read<Memory>(header).mode);
    memory["status"] = "ok";
    replies.send(memory);
  } else if (name == Screen::kName) {
    // Before anything of the candidate runs: only its text is read.
    json screened = to_json(python::screen().attr("screen")(read<Screen>(header).candidate));
    screened["status"] = "ok";
    replies.send(screened);
  } else if (name == Floor::kName) {
    const double seconds = session.copy_seconds(read<Floor>(header).bytes);
    release_cached_device_memory(session);  // two buffers of the outputs' size
    replies.send({{"status", "ok"}, {"copy_seconds", seconds}});
  } else if (name == Trace::kName) {
    const Trace command = read<Trace>(header);
    const json trace = session.trace(command.draw, command.mode);
    release_cached_device_memory(session);
    replies.send({{"status", "ok"}, {"trace", trace}});
  } else if (name == Probe::kName) {
    const Probe command = read<Probe>(header);
    std::vector<at::Tensor> refreshed;
    json reply_header = {{"status", "ok"}, {"probe", session.probe(command.draw, command.refresh, &refreshed)}};
    std::vector<ipc::EncodedTensor> tensors;
    std::vector<ipc::UniqueFd> files;
    replies.attach_for_comparison(tensors, reply_header["outputs"], refreshed, files);  // the refreshed call's outputs
    refreshed.clear();
    release_cached_device_memory(session);
    replies.send_files(files);
    replies.send(reply_header, tensors);
  } else if (name == Audit::kName) {
    const Audit command = read<Audit>(header);
    const json facts = session.audit(command.draw, command.other);
    release_cached_device_memory(session);  // audits of other problems may share the device (kbv audit --jobs)
    replies.send({{"status", "ok"}, {"facts", facts}});
  } else if (name == Findings::kName) {
    replies.send({{"status", "ok"}, {"findings", session.findings()}, {"ops", session.observed_ops()}});
  } else {
    throw ipc::Failure(ipc::FailureKind::internal, "unknown worker command '" + name + "'");
  }
}

// An exception no step typed: in the candidate's process it came from the candidate's code or
// its effects (a CUDA fault surfacing in a later call); in the reference's, it is ours.
ipc::FailureKind untyped_failure_kind(Role role, const std::string& text) {
  return role == Role::candidate ? classify_candidate_error(text) : ipc::FailureKind::internal;
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
  ipc::Channel channel = ipc::open_worker_channel();
  static const std::unique_ptr<ipc::SharedRegion> region = ipc::SharedRegion::open_inherited(ipc::kInheritedFd);
  Replies replies(channel, region.get());
  Session session(role);
  for (;;) {
    ipc::Message message;
    try {
      message = channel.receive();
    } catch (const ipc::ChannelClosed&) {
      return 0;  // the parent is gone or done
    }
    replies.begin(message.header);
    if (message.header.value("cmd", "") == ipc::commands::Exit::kName) {
      replies.send({{"status", "ok"}});
      std::fflush(nullptr);
      _exit(0);  // skip interpreter and torch teardown
    }
    ipc::FailureKind kind = ipc::FailureKind::internal;
    std::string text;
    try {
      handle(session, replies, message);
      continue;
    } catch (const ipc::Failure& failure) {
      kind = failure.kind;
      text = failure.what();
      if (role == Role::candidate && kind == ipc::FailureKind::runtime_error) kind = classify_candidate_error(text);
    } catch (const c10::Error& error) {
      text = error.what_without_backtrace();
      kind = untyped_failure_kind(role, text);
    } catch (const std::exception& error) {  // pybind11's error_already_set included
      text = error.what();
      kind = untyped_failure_kind(role, text);
    }
    if (sandbox::out_of_memory(text)) text += session.memory_in_words();
    replies.send({{"status", "error"}, {"kind", ipc::name(kind)}, {"message", text}});
  }
}

}  // namespace kbv::worker
