// What the timing's CPU ledger (worker/cpu_ledger.h) costs: the host time of one call's span
// (enter_call + leave_call: four CPU-clock reads), measured over blocks in one process, and, given
// a kbv eval record, that cost times the record's calls against its timing stage.
// Prints a table; the figures go to docs/performance.md with machine, date and commit.
// Usage: build/kbv_cpu_ledger_cost [RECORD.json]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "kbv/measure/statistics.h"
#include "kbv/worker/cpu_ledger.h"

int main(int argc, char** argv) {
  constexpr int kSpans = 20000, kBlocks = 15;
  kbv::worker::CpuLedger ledger;
  ledger.open();
  std::vector<double> per_span_ns;
  for (int block = 0; block < kBlocks; ++block) {
    const auto begun = std::chrono::steady_clock::now();
    for (int i = 0; i < kSpans; ++i) {
      ledger.enter_call();
      ledger.leave_call();
    }
    per_span_ns.push_back(std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - begun).count() /
                          kSpans);
  }
  const double span_ns = kbv::measure::median(per_span_ns);
  std::printf("cpu ledger: one call's span %.0f ns (median of %d blocks of %d; fastest %.0f)\n", span_ns, kBlocks,
              kSpans, *std::min_element(per_span_ns.begin(), per_span_ns.end()));
  if (argc < 2) return 0;
  std::ifstream in(argv[1]);
  const nlohmann::json record = nlohmann::json::parse(in);
  const long calls = record.at("timing").at("candidate").at("cpu").at("calls");
  const double stage = record.at("stage_seconds").at("timing");
  std::printf("%s: %ld calls in a timing stage of %.3f s: the spans %.3f ms, %.3f%% of it\n", argv[1], calls, stage,
              calls * span_ns * 1e-6, 100.0 * calls * span_ns * 1e-9 / stage);
  return 0;
}
