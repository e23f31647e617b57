// What the timing's GPU ledger (worker/gpu_ledger.h) costs, and what it finds of honest calls: for
// a ReLU over 1 MiB (a few microseconds) and a 4096^2 TF32 matmul (~0.3 ms), timed calls in kbv's
// pattern (the input refilled from a fresh draw, cache flush, launch cover, device-wide end, a
// sample of the output gathered) in blocks with the ledger closed and open in turns, in one
// process. Per side: the median device seconds of a call (the timed figure; CUPTI's kernel records
// must not move it), the host seconds per cycle from the refill to the gather (the launches CUPTI
// traces), and, open, what charging the records costs per cycle and what lies outside the windows
// (nothing, for honest calls); then what opening and closing the ledger take. Needs a GPU.
// Prints a table; the figures go to docs/performance.md with machine, date and commit.
// Usage: build/kbv_gpu_ledger_cost [BLOCKS]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <ATen/Context.h>
#include <c10/cuda/CUDAFunctions.h>

#include "kbv/measure/statistics.h"
#include "kbv/measure/timer.h"
#include "kbv/protocol/protocol.h"
#include "kbv/worker/gpu_ledger.h"

namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point begun) { return std::chrono::duration<double>(Clock::now() - begun).count(); }

struct Side {
  std::vector<double> device, host, charge;  // per call: medians of blocks (charge: open only)
  double outside = 0, windows = 0;
  long covers_missing = 0, unknown = 0, calls = 0;
};

void run(const char* name, const at::Tensor& input, const std::function<at::Tensor()>& call, int blocks) {
  constexpr int kCalls = 50;
  const c10::Device device(c10::kCUDA, 0);
  const kbv::protocol::Timing timing = kbv::protocol::verified().timing;
  const auto timer = kbv::measure::make_cuda_timer(device, timing);
  kbv::worker::GpuLedger ledger;
  Side closed, open;
  for (int i = 0; i < 20; ++i) (void)call();  // warm: cuBLAS's handle, the clocks
  for (int block = 0; block < 2 * blocks; ++block) {
    const bool recording = block % 2 == 1;
    Side& side = recording ? open : closed;
    c10::cuda::device_synchronize();
    if (recording) ledger.open(true);
    std::vector<double> device_seconds, host_seconds;
    const at::Tensor positions = at::randint(input.numel(), {4096}, input.options().dtype(at::kLong));
    for (int i = 0; i < kCalls; ++i) {
      const auto begun = Clock::now();
      input.copy_(at::rand(input.sizes(), input.options()));  // kbv's refill: a draw, copied into the set
      c10::cuda::device_synchronize();
      timer->flush_cache();
      at::Tensor output;
      const kbv::measure::TimedCall timed = timer->time(
          [&] {
            ledger.enter_call();
            output = call();
            ledger.leave_call();
          },
          "kbv gpu ledger cost");
      ledger.timed(timed.seconds);
      (void)output.flatten().index_select(0, positions);  // the timed output's sketch
      host_seconds.push_back(since(begun));
      device_seconds.push_back(timed.seconds);
    }
    side.device.push_back(kbv::measure::median(device_seconds));
    side.host.push_back(kbv::measure::median(host_seconds));
    if (!recording) continue;
    const auto charging = Clock::now();
    const nlohmann::json totals = ledger.totals();
    side.charge.push_back(since(charging) / kCalls);
    ledger.close();
    if (totals.contains("unavailable")) {
      std::printf("%s: the ledger could not record: %s\n", name, totals["unavailable"].get<std::string>().c_str());
      return;
    }
    open.outside = totals["outside_seconds"];
    open.windows = totals["windows_seconds"];
    open.covers_missing = totals["covers_missing"];
    open.unknown = totals["unknown_launches"];
    open.calls = totals["timed_calls"];
  }
  using kbv::measure::median;
  std::printf(
      "%-8s device %.2f us closed, %.2f us open (%+.2f%%); host per cycle %.1f us closed, %.1f us open (%+.1f us); "
      "charging %.2f us per cycle; last block: %ld calls, outside %.2f us of %.1f us of windows, %ld covers missing, "
      "%ld launches unseen\n",
      name, median(closed.device) * 1e6, median(open.device) * 1e6,
      100 * (median(open.device) / median(closed.device) - 1), median(closed.host) * 1e6, median(open.host) * 1e6,
      (median(open.host) - median(closed.host)) * 1e6, median(open.charge) * 1e6, open.calls, open.outside * 1e6,
      open.windows * 1e6, open.covers_missing, open.unknown);
}

}  // namespace

int main(int argc, char** argv) {
  const int blocks = argc > 1 ? std::atoi(argv[1]) : 15;
  if (!at::hasCUDA() || c10::cuda::device_count() == 0) {
    std::printf("kbv_gpu_ledger_cost needs a GPU\n");
    return 1;
  }
  const auto cuda = at::TensorOptions().device(at::kCUDA, 0);
  const at::Tensor x = at::rand({16, 16384}, cuda);  // the device's context made
  // Opening and closing: the first open of a process starts CUPTI's activity API.
  {
    kbv::worker::GpuLedger ledger;
    std::vector<double> opens, closes;
    for (int i = 0; i < 5; ++i) {
      const auto opening = Clock::now();
      ledger.open(true);
      opens.push_back(since(opening));
      const auto closing = Clock::now();
      ledger.close();
      closes.push_back(since(closing));
    }
    std::printf("open   first %.1f ms, then %.1f ms (median); close %.1f ms (median)\n", opens[0] * 1e3,
                kbv::measure::median(std::vector<double>(opens.begin() + 1, opens.end())) * 1e3,
                kbv::measure::median(closes) * 1e3);
  }
  run(
      "relu", x, [&] { return at::relu(x); }, blocks);
  at::globalContext().setAllowTF32CuBLAS(true);
  const at::Tensor a = at::rand({4096, 4096}, cuda), b = at::rand({4096, 4096}, cuda);
  run(
      "matmul", a, [&] { return at::matmul(a, b); }, blocks);
  return 0;
}
