// Drives one side's timing in a worker (PROTOCOL.md, "Timing"): the input pool, warm-up, flags
// read back, then timed calls until the stopping rule is met, refreshing each call's input set
// just before it and sketching every timed output at positions chosen after the call returned.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "kbv/eval/worker_port.h"
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

// `mode` is baseline or candidate; `sketch` asks for a sketch of every timed output.
TimingRun run_timing(WorkerPort& worker, const std::string& mode, const protocol::Protocol& protocol,
                     std::mt19937_64& rng, double timeout_seconds, bool sketch);

}  // namespace kbv::eval
