// A noisy neighbour (PROTOCOL.md, "Stability"): the same honest candidate evaluated on a quiet
// machine and with busy threads on every core beside it. Loaded, its speedup either stays within
// 10% of the quiet figure or is marked unreliable with the contention named: never a confident
// wrong figure.
#include <algorithm>
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

// Paired timing (--paired): the baseline timed in the candidate's rounds, the speedup the median
// of the rounds' ratios, inside its interval, said so in the summary.
TEST(Stability, PairedRoundsGiveTheSpeedupAsTheirMedian) {
  const Outcome r = kbv_eval({(kExamples / "problems/1_ReLU.py").string(),
                              (kExamples / "candidates/1_ReLU/cpu_honest.py").string(), "--paired"},
                             "paired");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_EQ(r.record.at("verdict"), "pass") << r.record.at("verdict_reason");
  EXPECT_TRUE(r.record.at("protocol").at("timing").at("paired").get<bool>());
  const json& timing = r.record.at("timing");
  std::vector<double> ratios = timing.at("round_ratios").get<std::vector<double>>();
  ASSERT_GE(ratios.size(), 10u);
  std::sort(ratios.begin(), ratios.end());
  const size_t n = ratios.size();
  const double median = n % 2 ? ratios[n / 2] : (ratios[n / 2 - 1] + ratios[n / 2]) / 2;
  EXPECT_DOUBLE_EQ(timing.at("speedup").get<double>(), median);
  EXPECT_LE(timing.at("speedup_ci")[0].get<double>(), median);
  EXPECT_GE(timing.at("speedup_ci")[1].get<double>(), median);
  EXPECT_FALSE(timing.at("baseline").at("samples_seconds").empty());
  EXPECT_FALSE(r.record.at("stage_seconds").contains("baseline")) << "timed in the rounds, not before the import";
  EXPECT_NE(r.out.find("paired rounds"), std::string::npos) << r.out;
}

}  // namespace
