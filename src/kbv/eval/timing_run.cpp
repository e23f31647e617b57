#include "kbv/eval/timing_run.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <numeric>

#include "kbv/ipc/commands.h"
#include "kbv/measure/host_load.h"
#include "kbv/measure/statistics.h"
#include "kbv/measure/stopping_criterion.h"

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

TimingRun run_timing(WorkerPort& worker, const std::string& mode, const protocol::Protocol& protocol,
                     std::mt19937_64& rng, double timeout_seconds, bool sketch) {
  const protocol::Timing& t = protocol.timing;
  const std::chrono::duration<double> timeout(timeout_seconds);
  std::vector<std::uint64_t> seeds = fresh_seeds(rng, t.pool_sets);
  const std::optional<CpuReading> cpu_before = worker.cpu_time();
  const std::optional<measure::CpuCounters> host_before = measure::read_cpu_counters();
  const auto began = std::chrono::steady_clock::now();
  worker.request(commands::message(commands::Pool{seeds}), timeout);
  int fills = t.pool_sets;
  const Reply warmed = worker.request(
      commands::message(commands::Warmup{t.warmup_calls, t.warmup_seconds, t.warmup_max_seconds, mode}), timeout);

  TimingRun run;
  run.result.clock = warmed.header.at("clock");
  run.result.flags = worker.request(commands::message(commands::Flags{mode}), timeout).header.at("flags");
  auto criterion = make_criterion(t);
  const int most = t.fixed_samples > 0 ? t.fixed_samples : t.max_samples;
  // Calls made. Each round times every set once, in an order drawn for the round (a candidate
  // cannot tell which set comes next); each call's set gets new content just before it, so that no
  // call's inputs exist before their call's turn (PROTOCOL.md, "Work outside the timed calls").
  int made = 0;
  std::vector<int> order(t.pool_sets);
  std::iota(order.begin(), order.end(), 0);
  while (!criterion->is_finished() && made < most) {
    // One call first; then as many as fill kBatchSeconds at the median so far.
    const int batch =
        made == 0 ? 1
                  : std::clamp(static_cast<int>(kBatchSeconds / std::max(measure::median(criterion->samples()), 1e-9)),
                               1, std::min(kMaxBatch, most - made));
    nlohmann::json calls = nlohmann::json::array();
    std::vector<std::uint64_t> content;  // each call's content seed, for its sketch
    for (int i = 0; i < batch; ++i, ++made) {
      const int position = made % t.pool_sets;
      if (position == 0) std::shuffle(order.begin(), order.end(), rng);
      const int set = order[position];
      nlohmann::json call = {{"set", set}};
      if (t.refresh_inputs) {
        seeds[set] = fresh_seeds(rng, 1).front();
        call["fill"] = seeds[set];
        ++fills;
      }
      content.push_back(seeds[set]);
      calls.push_back(std::move(call));
    }
    const Reply timed =
        worker.request(commands::message(commands::TimedCalls{mode, calls, sketch ? t.sketch_points : 0}), timeout);
    run.result.cpu = timed.header.at("cpu");
    run.result.gpu = timed.header.value("gpu", nlohmann::json());
    size_t next = 0;
    for (size_t i = 0; i < calls.size(); ++i) {
      const nlohmann::json& result = timed.header.at("results").at(i);
      criterion->add_measurement(result.at("seconds").get<double>());
      run.result.stream_samples.push_back(result.at("stream_seconds").get<double>());
      run.result.launch_samples.push_back(result.at("launch_seconds").get<double>());
      if (result.contains("host_wait_seconds")) {
        run.result.host_wait_samples.push_back(result["host_wait_seconds"].get<double>());
        run.result.end_on_device_samples += result.at("end_on_device").get<bool>();
      }
      if (!sketch) continue;
      std::vector<at::Tensor> values;
      for (size_t k = 0; k < result.at("outputs").size(); ++k) values.push_back(timed.tensors.at(next++));
      run.sketches.push_back({content[i], result.at("sketch_seed").get<std::uint64_t>(), std::move(values)});
    }
  }
  // The worker's CPU time read now, before anything else runs in it: the last reply was its
  // last step of the timing.
  const std::optional<CpuReading> cpu_after = worker.cpu_time();
  const std::optional<measure::CpuCounters> host_after = measure::read_cpu_counters();
  const bool worker_read = cpu_before && cpu_after && cpu_before->source == cpu_after->source;
  if (worker_read && host_before && host_after) {
    run.result.host = measure::host_load(
        *host_before, *host_after, std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count(),
        cpu_after->seconds - cpu_before->seconds);
  }
  if (run.result.cpu.is_object()) {
    run.result.cpu["fills"] = fills;
    if (worker_read) {
      run.result.cpu["outside_seconds"] = cpu_after->seconds - cpu_before->seconds;
      run.result.cpu["source"] = cpu_after->source;
    }
  }
  const auto samples = criterion->samples();
  run.result.samples.assign(samples.begin(), samples.end());
  run.result.seconds = t.use_median ? measure::median(samples) : measure::mean(samples);
  const measure::Interval ci = measure::median_ci(samples);
  run.result.ci_low = ci.low;
  run.result.ci_high = ci.high;
  run.result.criterion = criterion->describe();
  return run;
}

}  // namespace kbv::eval
