#include "kbv/eval/timing_run.h"

#include <memory>

#include "kbv/measure/statistics.h"
#include "kbv/measure/stopping_criterion.h"

namespace kbv::eval {
namespace {

std::unique_ptr<measure::StoppingCriterion> make_criterion(const protocol::Timing& t) {
  if (t.fixed_samples > 0) return std::make_unique<measure::FixedCountCriterion>(t.fixed_samples);
  return std::make_unique<measure::MedianPrecisionCriterion>(
      measure::MedianPrecisionSettings{t.min_samples, t.min_seconds, t.max_relative_half_width, t.max_samples, t.max_seconds});
}

std::vector<std::uint64_t> fresh_seeds(std::mt19937_64& rng, int count) {
  std::vector<std::uint64_t> seeds;
  for (int i = 0; i < count; ++i) seeds.push_back(rng() >> 1);
  return seeds;
}

}  // namespace

TimingRun run_timing(WorkerClient& worker, const std::string& mode, const protocol::Protocol& protocol,
                     std::mt19937_64& rng, double timeout_seconds, bool sketch) {
  const protocol::Timing& t = protocol.timing;
  const std::chrono::duration<double> timeout(timeout_seconds);
  std::vector<std::uint64_t> seeds = fresh_seeds(rng, t.pool_sets);
  worker.request({{"cmd", "pool"}, {"seeds", seeds}}, timeout);
  worker.request({{"cmd", "warmup"}, {"calls", t.warmup_calls}, {"mode", mode}}, timeout);

  TimingRun run;
  run.result.flags = worker.request({{"cmd", "flags"}, {"mode", mode}}, timeout).header.at("flags");
  auto criterion = make_criterion(t);
  while (!criterion->is_finished()) {
    for (int set = 0; set < t.pool_sets && !criterion->is_finished(); ++set) {
      const Reply timed = worker.request({{"cmd", "timed_call"}, {"set", set}, {"mode", mode}}, timeout);
      criterion->add_measurement(timed.header.at("seconds").get<double>());
      run.result.stream_samples.push_back(timed.header.at("stream_seconds").get<double>());
      if (sketch) {
        const std::uint64_t sketch_seed = rng() >> 1;
        Reply values = worker.request(
            {{"cmd", "sketch"}, {"set", set}, {"seed", sketch_seed}, {"points", t.sketch_points}}, timeout);
        run.sketches.push_back({seeds[set], sketch_seed, std::move(values.tensors)});
      }
    }
    if (t.refresh_inputs && !criterion->is_finished()) {
      seeds = fresh_seeds(rng, t.pool_sets);
      worker.request({{"cmd", "pool"}, {"seeds", seeds}}, timeout);
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
