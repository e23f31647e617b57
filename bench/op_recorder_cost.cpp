// What kbv's RecordFunction callbacks cost an aten op: the host time of a small op dispatched with
// none, with the op recorder's (worker/op_recorder.h) registered but not recording, and recording;
// then with the check of kbv's steps (worker/step_kernels.h) in a model's call (idle) and armed
// (every op looked up and its registrations counted), in alternating blocks of one process (CPU
// ops; CUDA launches where a GPU is present).
// Prints a table; the figures go to docs/performance.md with machine, date and commit.
// Usage: build/kbv_op_recorder_cost [ops per block]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>

#include "kbv/measure/statistics.h"
#include "kbv/worker/op_recorder.h"
#include "kbv/worker/step_kernels.h"

namespace {

// Nanoseconds per op over one block.
double block_ns(const std::function<void()>& op, int ops) {
  const auto begun = std::chrono::steady_clock::now();
  for (int i = 0; i < ops; ++i) op();
  return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - begun).count() / ops;
}

void measure(const char* what, const std::function<void()>& op, const std::function<void()>& drain, int ops) {
  constexpr int kRounds = 15;
  std::vector<double> off, registered, recording, idle, armed;
  for (int round = 0; round < kRounds; ++round) {
    drain();
    off.push_back(block_ns(op, ops));
    {
      kbv::worker::OpRecorder recorder;
      drain();
      registered.push_back(block_ns(op, ops));
      recorder.start();
      recording.push_back(block_ns(op, ops));
      recorder.stop();
    }
    {
      kbv::worker::StepKernels kernels;
      kernels.arm();
      drain();
      {
        const kbv::worker::StepKernels::ModelCall call(&kernels);
        idle.push_back(block_ns(op, ops));
      }
      drain();
      armed.push_back(block_ns(op, ops));
    }
    drain();
  }
  const double base = kbv::measure::median(off);
  const auto more = [&](const std::vector<double>& ns) { return kbv::measure::median(ns) - base; };
  std::printf("| %s | %.0f | +%.0f | +%.0f | +%.0f | +%.0f |\n", what, base, more(registered), more(recording),
              more(idle), more(armed));
}

}  // namespace

int main(int argc, char** argv) {
  const int ops = argc > 1 ? std::atoi(argv[1]) : 20000;
  std::printf("ns per op, median of 15 blocks of %d ops each\n\n", ops);
  std::printf(
      "| op | no callback | recorder registered | recording | step check in a model's call | step check armed "
      "|\n|---|---|---|---|---|---|\n");
  at::Tensor a = at::ones({4}), b = at::ones({4}), out = at::empty({4});
  measure(
      "CPU at::add_out, 4 floats", [&] { at::add_out(out, a, b); }, [] {}, ops);
  measure(
      "CPU at::empty, 4 floats", [&] { at::empty({4}); }, [] {}, ops);
  if (at::hasCUDA()) {
    at::Tensor ga = a.cuda(), gb = b.cuda(), gout = out.cuda();
    const auto drain = [] { at::cuda::getCurrentCUDAStream().synchronize(); };
    measure(
        "CUDA at::add_out launch, 4 floats", [&] { at::add_out(gout, ga, gb); }, drain, ops);
  }
  return 0;
}
