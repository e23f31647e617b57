#include "kbv/eval/timing_run.h"

#include <algorithm>
#include <numeric>

#include "kbv/ipc/commands.h"
#include "kbv/measure/host_load.h"
#include "kbv/measure/statistics.h"

namespace kbv::eval {

namespace commands = ipc::commands;
namespace {

std::unique_ptr<measure::StoppingCriterion> make_criterion(const protocol::Timing& t) {
  if (t.fixed_samples > 0) return std::make_unique<measure::FixedCountCriterion>(t.fixed_samples);
  return std::make_unique<measure::MedianPrecisionCriterion>(measure::MedianPrecisionSettings{
      t.min_samples, t.min_seconds, t.max_relative_half_width, t.max_samples, t.max_seconds});
}

// Timed calls go to the worker in batches of about this much measured time (kMaxBatch calls at
// most): between two calls of a batch the GPU waits for nothing but the worker itself. One
// step's timeout covers a whole batch, which is sized from the calls already measured.
constexpr double kBatchSeconds = 0.05;
constexpr int kMaxBatch = 32;

std::vector<std::uint64_t> fresh_seeds(std::mt19937_64& rng, int count) {
  std::vector<std::uint64_t> seeds;
  for (int i = 0; i < count; ++i) seeds.push_back(rng() >> 1);
  return seeds;
}

}  // namespace

TimedSide::TimedSide(WorkerPort& worker, std::string mode, const protocol::Protocol& protocol, std::mt19937_64& rng,
                     double timeout_seconds, bool sketch)
    : worker_(worker),
      mode_(std::move(mode)),
      timing_(protocol.timing),
      rng_(rng),
      timeout_(timeout_seconds),
      sketch_(sketch),
      criterion_(make_criterion(protocol.timing)),
      most_(protocol.timing.fixed_samples > 0 ? protocol.timing.fixed_samples : protocol.timing.max_samples),
      order_(protocol.timing.pool_sets) {
  std::iota(order_.begin(), order_.end(), 0);
}

void TimedSide::start() {
  const protocol::Timing& t = timing_;
  seeds_ = fresh_seeds(rng_, t.pool_sets);
  cpu_before_ = worker_.cpu_time();
  worker_.request(commands::message(commands::Pool{seeds_}), timeout_);
  fills_ = t.pool_sets;
  const Reply warmed = worker_.request(
      commands::message(commands::Warmup{t.warmup_calls, t.warmup_seconds, t.warmup_max_seconds, mode_}), timeout_);
  run_.result.clock = warmed.header.at("clock");
  run_.result.flags = worker_.request(commands::message(commands::Flags{mode_}), timeout_).header.at("flags");
}

bool TimedSide::finished() const { return criterion_->is_finished() || made_ >= most_; }

std::vector<double> TimedSide::batch(double seconds) {
  const protocol::Timing& t = timing_;
  // Each round times every set once, in an order drawn for the round (a candidate cannot tell which
  // set comes next); each call's set gets new content just before it, so that no call's inputs
  // exist before their call's turn (PROTOCOL.md, "Work outside the timed calls").
  const int size = made_ == 0
                       ? 1
                       : std::clamp(static_cast<int>(seconds / std::max(measure::median(criterion_->samples()), 1e-9)),
                                    1, std::max(1, std::min(kMaxBatch, most_ - made_)));
  nlohmann::json calls = nlohmann::json::array();
  std::vector<std::uint64_t> content;  // each call's content seed, for its sketch
  for (int i = 0; i < size; ++i, ++made_) {
    const int position = made_ % t.pool_sets;
    if (position == 0) std::shuffle(order_.begin(), order_.end(), rng_);
    const int set = order_[position];
    nlohmann::json call = {{"set", set}};
    if (t.refresh_inputs) {
      seeds_[set] = fresh_seeds(rng_, 1).front();
      call["fill"] = seeds_[set];
      ++fills_;
    }
    content.push_back(seeds_[set]);
    calls.push_back(std::move(call));
  }
  const Reply timed =
      worker_.request(commands::message(commands::TimedCalls{mode_, calls, sketch_ ? t.sketch_points : 0}), timeout_);
  protocol::TimingResult& result = run_.result;
  result.cpu = timed.header.at("cpu");
  result.gpu = timed.header.value("gpu", nlohmann::json());
  std::vector<double> samples;
  size_t next = 0;
  for (size_t i = 0; i < calls.size(); ++i) {
    const nlohmann::json& call = timed.header.at("results").at(i);
    samples.push_back(call.at("seconds").get<double>());
    criterion_->add_measurement(samples.back());
    result.stream_samples.push_back(call.at("stream_seconds").get<double>());
    result.launch_samples.push_back(call.at("launch_seconds").get<double>());
    if (call.contains("host_wait_seconds")) {
      result.host_wait_samples.push_back(call["host_wait_seconds"].get<double>());
      result.end_on_device_samples += call.at("end_on_device").get<bool>();
    }
    if (!sketch_) continue;
    std::vector<at::Tensor> values;
    for (size_t k = 0; k < call.at("outputs").size(); ++k) values.push_back(timed.tensors.at(next++));
    run_.sketches.push_back({content[i], call.at("sketch_seed").get<std::uint64_t>(), std::move(values)});
  }
  return samples;
}

TimingRun TimedSide::finish() {
  // Read now, before anything else runs in the worker: the last reply was its last step of the timing.
  cpu_after_ = worker_.cpu_time();
  protocol::TimingResult& result = run_.result;
  if (result.cpu.is_object()) {
    result.cpu["fills"] = fills_;
    if (const std::optional<double> seconds = worker_cpu_seconds()) {
      result.cpu["outside_seconds"] = *seconds;
      result.cpu["source"] = cpu_after_->source;
    }
  }
  const auto samples = criterion_->samples();
  result.samples.assign(samples.begin(), samples.end());
  result.seconds = timing_.use_median ? measure::median(samples) : measure::mean(samples);
  const measure::Interval ci = measure::median_ci(samples);
  result.ci_low = ci.low;
  result.ci_high = ci.high;
  result.criterion = criterion_->describe();
  return std::move(run_);
}

std::optional<double> TimedSide::worker_cpu_seconds() const {
  if (!cpu_before_ || !cpu_after_ || cpu_before_->source != cpu_after_->source) return std::nullopt;
  return cpu_after_->seconds - cpu_before_->seconds;
}

TimingRun run_timing(WorkerPort& worker, const std::string& mode, const protocol::Protocol& protocol,
                     std::mt19937_64& rng, double timeout_seconds, bool sketch) {
  TimedSide side(worker, mode, protocol, rng, timeout_seconds, sketch);
  const measure::HostWindow host;
  side.start();
  while (!side.finished()) side.batch(kBatchSeconds);
  TimingRun run = side.finish();
  run.result.host = host.load(side.worker_cpu_seconds());
  return run;
}

}  // namespace kbv::eval
