#include "kbv/eval/reference_side.h"

#include <algorithm>

#include "kbv/eval/evaluation.h"
#include "kbv/eval/timing_run.h"
#include "kbv/ipc/commands.h"
#include "kbv/sandbox/explain.h"

namespace kbv::eval {

namespace commands = ipc::commands;
namespace {

using nlohmann::json;
using Seconds = std::chrono::duration<double>;

[[noreturn]] void throw_reference_lost(const WorkerPort& worker, const WorkerLost& lost) {
  throw EvalError("the reference worker " + std::string(lost.what()) + "\n" + worker.log_tail());
}

// Memory that ran out in the reference's worker (torch's words, or its report of the device's
// failing on NVML) is said so, whatever step it hit: never read as the problem's own error or as
// an input family out of its domain (a hidden family skipped for it would weaken the checks).
void throw_if_out_of_memory(const WorkerFailed& failed) {
  if (sandbox::out_of_memory(failed.what())) {
    throw EvalError(std::string("the reference worker ran out of memory (the device is shared with the candidate's "
                                "worker): ") +
                    failed.what());
  }
}

// A reply of the reference worker: any failure is the evaluator's, not the candidate's.
Reply reference_reply(WorkerPort& worker, const std::function<Reply()>& awaited) {
  try {
    return awaited();
  } catch (const WorkerFailed& failed) {
    throw_if_out_of_memory(failed);
    if (failed.kind == ipc::FailureKind::no_device) throw NoDevice(failed.what());
    if (failed.kind == ipc::FailureKind::problem_error) throw EvalError(failed.what());
    throw EvalError("the reference worker failed (" + std::string(ipc::name(failed.kind)) + "): " + failed.what());
  } catch (const WorkerLost& lost) {
    throw_reference_lost(worker, lost);
  }
}

Reply reference_request(WorkerPort& worker, const json& command, double timeout, const Attachments& attachments = {}) {
  return reference_reply(worker,
                         [&] { return worker.request(command, Seconds(timeout), Outputs::owned, attachments); });
}

// The reference's worker as a port whose every failure is the evaluator's (paired timing's
// baseline side: TimedSide asks it as it asks a candidate's).
class EvaluatorsPort : public WorkerPort {
 public:
  explicit EvaluatorsPort(WorkerPort& worker) : worker_(worker) {}
  Reply request(const json& command, std::chrono::duration<double> timeout, Outputs outputs,
                const Attachments& attachments) override {
    return reference_reply(worker_, [&] { return worker_.request(command, timeout, outputs, attachments); });
  }
  void post(const json& command, std::chrono::duration<double> timeout) override { worker_.post(command, timeout); }
  void settle() override { worker_.settle(); }
  Reply collect() override {
    return reference_reply(worker_, [&] { return worker_.collect(); });
  }
  void begin_shutdown() override { worker_.begin_shutdown(); }
  void shutdown() override { worker_.shutdown(); }
  std::string log_tail() const override { return worker_.log_tail(); }
  json containment() const override { return worker_.containment(); }
  std::optional<CpuReading> cpu_time() const override { return worker_.cpu_time(); }
  int region_fd() const override { return worker_.region_fd(); }

 private:
  WorkerPort& worker_;
};

// A mode's scaled error against the first mode, as the worker measured it.
double error_of(const json& result) { return protocol::error_from_json(result.value("error", json())); }

}  // namespace

ReferenceSide::ReferenceSide(ReferenceConfig config, Start start)
    : ReferenceSide(config, std::make_unique<WorkerClient>("reference", config.launch), start) {}

ReferenceSide::ReferenceSide(ReferenceConfig config, std::unique_ptr<WorkerPort> worker, Start start)
    : config_(std::move(config)), worker_(std::move(worker)), rng_(make_rng(config_.protocol)) {
  config_.progress("reference: loading the problem");
  worker_->post(commands::message(
                    commands::Load{config_.problem, "", config_.device, protocol::to_json(config_.protocol), nullptr}),
                Seconds(config_.load_timeout_seconds));
  loading_ = true;
  if (start == Start::now) ready();
}

void ReferenceSide::ready() {
  if (!loading_) return;
  loading_ = false;
  const Reply loaded = reference_reply(*worker_, [&] { return worker_->collect(); });
  versions_ = loaded.header.at("versions");
  versions_["kbv"] = KBV_VERSION;
  for (const char* key : {"gpu", "cuda_driver_api"}) {
    if (loaded.header.contains(key)) versions_[key] = loaded.header[key];
  }
  footprint_bytes_ = loaded.header.value("footprint_bytes", 0);
}

ReferenceSide::~ReferenceSide() { shutdown(); }

void ReferenceSide::shutdown() { worker_->shutdown(); }

std::vector<ReferenceDraw> ReferenceSide::draws(const std::vector<Draw>& plan, double& repeat_error) {
  nlohmann::json planned = json::array();
  for (const Draw& draw : plan) planned.push_back(draw.to_json());
  if (planned == last_plan_) {
    repeat_error = last_repeat_error_;
    return last_draws_;
  }
  last_plan_ = nullptr;
  last_draws_.clear();
  const auto& fallback = config_.protocol.fallback_families;
  const auto is_fallback = [&](const Draw& d) {
    return std::find(fallback.begin(), fallback.end(), d.family) != fallback.end();
  };
  config_.progress(
      "reference: " +
      std::to_string(std::count_if(plan.begin(), plan.end(), [&](const Draw& d) { return !is_fallback(d); })) +
      " input draws");
  std::vector<ReferenceDraw> draws;
  repeat_error = 0;
  // The baseline's outputs only set the scaled comparison's tolerance (allclose has a fixed one).
  const bool scaled = config_.protocol.comparison == protocol::Comparison::scaled;
  bool drawing_fallbacks = false;  // decided once, on the hidden families alone; then all are drawn
  for (const Draw& draw : plan) {
    if (is_fallback(draw) && !drawing_fallbacks) {
      if (hidden_families_in_domain(draws) >= config_.protocol.min_hidden_families) break;
      drawing_fallbacks = true;
    }
    ReferenceDraw d;
    d.draw = draw;
    const bool first = draws.empty();
    std::vector<std::string> modes = {"reference"};
    if (first) modes.push_back("reference");
    if (scaled) modes.push_back("baseline");
    try {
      // The outputs stay in the worker: the later modes are judged against the first there, which
      // also measures the first's RMS and finiteness; a candidate's are compared with them there.
      const Reply reply = worker_->request(commands::message(commands::Check{draw.to_json(), modes, true}),
                                           Seconds(config_.timeout_seconds));
      const json& results = reply.header.at("results");
      if (results.front().contains("bad_output")) {
        throw EvalError("the problem's Model returns no tensors: " + results.front()["bad_output"].get<std::string>());
      }
      d.output_bytes = results.front().at("output_bytes");
      d.all_finite = results.front().at("all_finite");
      for (const json& rms : results.front().at("rms")) d.reference_rms.push_back(protocol::error_from_json(rms));
      if (scaled) d.baseline_error = error_of(results.back());
      d.checksum = reply.header.at("checksum");
      if (first) repeat_error = error_of(results[1]);
    } catch (const WorkerFailed& failed) {
      throw_if_out_of_memory(failed);
      if (failed.kind != ipc::FailureKind::reference_error)
        throw EvalError("the reference worker failed: " + std::string(failed.what()));
      if (draw.family == protocol::Family::standard) {
        throw EvalError(std::string("the problem's Model raised on its own inputs: ") + failed.what());
      }
      d.skip_reason = "out of domain: the reference raised under this family";
    } catch (const WorkerLost& lost) {
      throw_reference_lost(*worker_, lost);
    }
    draws.push_back(std::move(d));
  }
  last_plan_ = std::move(planned);
  last_draws_ = draws;
  last_repeat_error_ = repeat_error;
  return draws;
}

void ReferenceSide::measure_baseline() {
  if (baseline_) return;
  config_.progress("reference: timing the baseline");
  try {
    baseline_ = run_timing(*worker_, "baseline", config_.protocol, rng_, config_.timeout_seconds, false).result;
  } catch (const std::exception& error) {
    throw EvalError(std::string("timing the baseline failed: ") + error.what());
  }
  end_baseline_timing(true);
}

TimedSide ReferenceSide::paired_side() {
  if (!evaluators_port_) evaluators_port_ = std::make_unique<EvaluatorsPort>(*worker_);
  return TimedSide(*evaluators_port_, "baseline", config_.protocol, rng_, config_.timeout_seconds, false);
}

void ReferenceSide::end_baseline_timing(bool completed) {
  if (completed && !memory_measured_) {
    const Reply memory =
        reference_request(*worker_, commands::message(commands::Memory{"baseline"}), config_.timeout_seconds);
    baseline_memory_.footprint_bytes = footprint_bytes_;
    protocol::read_memory(memory.header, baseline_memory_);
    memory_measured_ = true;
  }
  reference_request(*worker_, commands::message(commands::DropPool{}), config_.timeout_seconds);
}

void ReferenceSide::trace_once(const ReferenceDraw& draw) {
  if (traced()) return;
  trace_ = reference_request(*worker_, commands::message(commands::Trace{draw.draw.to_json(), "baseline"}),
                             config_.timeout_seconds)
               .header.at("trace");
}

double ReferenceSide::copy_seconds(std::int64_t bytes) {
  if (auto known = copy_seconds_.find(bytes); known != copy_seconds_.end()) return known->second;
  const double seconds =
      reference_request(*worker_, commands::message(commands::Floor{static_cast<std::int64_t>(bytes)}),
                        config_.timeout_seconds)
          .header.at("copy_seconds");
  copy_seconds_[bytes] = seconds;
  return seconds;
}

Reply ReferenceSide::request(const json& command) {
  return reference_request(*worker_, command, config_.timeout_seconds);
}

check::OutputComparison ReferenceSide::compare(const ReferenceDraw& draw, const json& metas, const Reply& reply,
                                               int region_fd) {
  commands::Compare command{
      draw.draw.to_json(),   draw.reference_rms,    config_.protocol.comparison == protocol::Comparison::scaled,
      config_.protocol.atol, config_.protocol.rtol, json::array()};
  Attachments attachments;
  std::optional<size_t> region_file;
  size_t next_device_file = 0;
  for (size_t i = 0; i < metas.size() && i < reply.tensors.size(); ++i) {
    json meta = metas[i];
    if (meta.contains("region")) {
      // Stays where the candidate put it: the reference's worker maps the region read-only.
      if (!region_file) {
        region_file = attachments.files.size();
        attachments.files.push_back(region_fd);
      }
      meta["file"] = *region_file;
    } else if (meta.contains("device")) {
      meta["file"] = attachments.files.size();
      attachments.files.push_back(reply.files.at(next_device_file++).get());
    } else {
      attachments.tensors.push_back(ipc::encode(reply.tensors[i]));
      meta = attachments.tensors.back().meta;
    }
    command.outputs.push_back(std::move(meta));
  }
  return check::comparison_from_json(
      reference_request(*worker_, commands::message(command), config_.timeout_seconds, attachments)
          .header.at("comparison"));
}

}  // namespace kbv::eval
