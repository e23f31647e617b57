// A noisy neighbour (PROTOCOL.md, "Stability"): the same honest candidate evaluated on a quiet
// machine and with busy threads on every core beside it. Loaded, its speedup either stays within
// 10% of the quiet figure or is marked unreliable with the contention named: never a confident
// wrong figure.
#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "kbv_runner.h"

namespace {

namespace fs = std::filesystem;
using kbv::testing::kbv_eval;
using kbv::testing::Outcome;
using nlohmann::json;

const fs::path kExamples = KBV_EXAMPLES_DIR;

Outcome evaluate(const std::string& tag) {
  return kbv_eval({(kExamples / "problems/2_SumReduction.py").string(),
                   (kExamples / "candidates/2_SumReduction/cpu_honest.py").string(), "--quiet"},
                  tag);
}

TEST(Stability, ANoisyNeighbourNeverGivesAConfidentWrongSpeedup) {
  const Outcome quiet = evaluate("quiet");
  ASSERT_EQ(quiet.exit_code, 0) << quiet.err;
  const json& quiet_timing = quiet.record.at("timing");
  ASSERT_TRUE(quiet_timing.contains("stability")) << quiet_timing.dump();
  EXPECT_TRUE(quiet_timing.at("baseline").contains("host")) << "the host's counters were not read";

  // Busy threads on every core, for as long as the loaded evaluation runs (they stop with it).
  std::atomic<bool> stop = false;
  std::vector<std::thread> hogs;
  for (unsigned i = 0; i < std::max(1u, std::thread::hardware_concurrency()); ++i) {
    hogs.emplace_back([&stop] {
      volatile double sink = 0;
      while (!stop.load(std::memory_order_relaxed)) sink = sink + 1.0;
    });
  }
  const Outcome loaded = evaluate("loaded");
  stop = true;
  for (std::thread& hog : hogs) hog.join();
  ASSERT_EQ(loaded.exit_code, 0) << loaded.err;

  const json& timing = loaded.record.at("timing");
  const double quiet_speedup = quiet_timing.at("speedup"), loaded_speedup = timing.at("speedup");
  const json& stability = timing.at("stability");
  const bool within = std::abs(loaded_speedup / quiet_speedup - 1) <= 0.10;
  EXPECT_TRUE(within || !stability.at("reliable").get<bool>())
      << "loaded " << loaded_speedup << "x against quiet " << quiet_speedup
      << "x, and called reliable: " << stability.dump();
  if (!stability.at("reliable").get<bool>()) {
    EXPECT_NE(stability.dump().find("host_contention"), std::string::npos) << stability.dump();
    EXPECT_NE(loaded.out.find("UNRELIABLE"), std::string::npos) << "the summary does not say so";
  }
  std::printf("quiet %.3fx (%s), loaded %.3fx (%s)\n", quiet_speedup, quiet_timing.at("stability").dump().c_str(),
              loaded_speedup, stability.dump().c_str());
}

}  // namespace
