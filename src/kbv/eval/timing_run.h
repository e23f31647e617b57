// Drives one side's timing in a worker (PROTOCOL.md, "Timing"): the input pool, warm-up, flags
// read back, then timed calls until the stopping rule is met, refreshing each call's input set
// just before it and sketching every timed output at positions chosen after the call returned.
// TimedSide holds those as steps; run_timing walks them for one side alone.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "kbv/eval/worker_port.h"
#include "kbv/measure/stopping_criterion.h"
#include "kbv/protocol/protocol.h"
#include "kbv/protocol/record.h"

namespace kbv::eval {

// A timed output, reduced to sampled positions, with what it must be checked against.
struct TimedOutputSketch {
  std::uint64_t content_seed = 0;  // the standard draw the call's inputs held
  std::uint64_t sketch_seed = 0;
  std::vector<at::Tensor> values;
};

struct TimingRun {
  protocol::TimingResult result;
  std::vector<TimedOutputSketch> sketches;
};

// One side's timing as steps. `mode` is baseline or candidate; `sketch` asks for a sketch of every
// timed output.
class TimedSide {
 public:
  TimedSide(WorkerPort& worker, std::string mode, const protocol::Protocol& protocol, std::mt19937_64& rng,
            double timeout_seconds, bool sketch);

  // The worker's CPU time read, the input pool drawn, the warm-up, the flags read back.
  void start();
  // The stopping rule met, or the most samples taken.
  bool finished() const;
  // One request of timed calls: one at first, then as many as fill about `seconds` at the median
  // so far (32 at most). Returns that batch's samples. A finished side may go on (paired rounds).
  std::vector<double> batch(double seconds);
  // The worker's CPU time read again (before anything else runs in it); the statistic and its
  // interval. The host's load over the span is the caller's to add (measure/host_load.h).
  TimingRun finish();
  // The worker's CPU time from start() to finish(), where read from outside it.
  std::optional<double> worker_cpu_seconds() const;

 private:
  WorkerPort& worker_;
  const std::string mode_;
  const protocol::Timing& timing_;
  std::mt19937_64& rng_;
  const std::chrono::duration<double> timeout_;
  const bool sketch_;
  std::unique_ptr<measure::StoppingCriterion> criterion_;
  const int most_;                    // samples at most (fixed_samples, else max_samples)
  std::vector<std::uint64_t> seeds_;  // each input set's content
  std::vector<int> order_;            // the round's order of the sets
  int made_ = 0, fills_ = 0;
  std::optional<CpuReading> cpu_before_, cpu_after_;
  TimingRun run_;
};

TimingRun run_timing(WorkerPort& worker, const std::string& mode, const protocol::Protocol& protocol,
                     std::mt19937_64& rng, double timeout_seconds, bool sketch);

}  // namespace kbv::eval
