#include "kbv/measure/stability.h"

#include <gtest/gtest.h>

#include <vector>

#include "kbv/measure/host_load.h"

namespace kbv::measure {
namespace {

using nlohmann::json;

std::vector<double> around(double seconds, int count) {
  std::vector<double> samples;
  for (int i = 0; i < count; ++i) samples.push_back(seconds * (1.0 + 0.01 * (i % 5)));
  return samples;
}

json quiet_host() { return {{"other_cores", 0.05}, {"steal_share", 0.0}}; }

std::vector<std::string> ids(const json& judgement) {
  std::vector<std::string> out;
  for (const json& reason : judgement.at("reasons"))
    out.push_back(reason.at("id").get<std::string>() + "/" + reason.at("side").get<std::string>());
  return out;
}

TEST(Stability, QuietTightSamplesAreReliable) {
  const std::vector<double> b = around(1e-3, 100), c = around(2e-4, 100);
  const json judged = judge_stability({b, {}, quiet_host()}, {c, {}, quiet_host()}, {});
  EXPECT_TRUE(judged.at("reliable"));
  EXPECT_TRUE(judged.at("reasons").empty());
}

// A new user's busy machine: the baseline's samples in two groups (0.1 ms and 12 ms) and a core
// and more of other work beside it; the candidate timed quietly.
TEST(Stability, ANoisyNeighbourAndTwoGroupsOfSamplesAreNamed) {
  std::vector<double> b = around(1e-4, 60);
  const std::vector<double> slow = around(12e-3, 40);
  b.insert(b.end(), slow.begin(), slow.end());
  const std::vector<double> c = around(2e-4, 100);
  const json judged = judge_stability({b, {}, {{"other_cores", 1.4}, {"steal_share", 0.0}}}, {c, {}, quiet_host()}, {});
  EXPECT_FALSE(judged.at("reliable"));
  EXPECT_EQ(ids(judged),
            (std::vector<std::string>{"host_contention/baseline", "scattered_samples/baseline", "drift/baseline"}));
}

// kernelbench's 100 calls of a small kernel fill ~15 ms: a clock tick more or less is most of a
// core over that window, and what the counters cannot resolve is not contention.
TEST(Stability, AWindowOfAFewTicksIsNotContention) {
  const std::vector<double> b = around(1e-4, 100);
  const json short_window = {{"other_cores", 0.64}, {"resolution_cores", 1.9}, {"steal_share", 0.0}};
  EXPECT_TRUE(judge_stability({b, {}, short_window}, {b, {}, short_window}, {}).at("reliable"));
  const json long_window = {{"other_cores", 0.64}, {"resolution_cores", 0.1}, {"steal_share", 0.0}};
  EXPECT_FALSE(judge_stability({b, {}, long_window}, {b, {}, quiet_host()}, {}).at("reliable"));
}

// The machine slowed down while the candidate was timed: its last third of calls 40% slower than
// its first, every sample within twice the median (not two groups), no other process seen.
TEST(Stability, ASideThatEndsAtAnotherSpeedDrifted) {
  const std::vector<double> b = around(1e-3, 90);
  std::vector<double> c = around(1e-3, 45);
  const std::vector<double> slower = around(1.4e-3, 45);
  c.insert(c.end(), slower.begin(), slower.end());
  const json judged = judge_stability({b, {}, quiet_host()}, {c, {}, quiet_host()}, {});
  EXPECT_EQ(ids(judged), (std::vector<std::string>{"drift/candidate"}));
  EXPECT_NEAR(judged.at("reasons").at(0).at("change").get<double>(), 0.4, 0.03);
}

// The quiet H100's honest candidates moved by 0-11% between their first and last thirds
// (2026-12-07, docs/runs/2026-12-07-h100-fc8fd30): under the limit. Fewer than nine samples say
// nothing of a trend.
TEST(Stability, ASmallTrendOrAFewSamplesAreNotDrift) {
  std::vector<double> c = around(1e-3, 60);
  const std::vector<double> slower = around(1.11e-3, 30);
  c.insert(c.end(), slower.begin(), slower.end());
  EXPECT_TRUE(judge_stability({c, {}, quiet_host()}, {c, {}, quiet_host()}, {}).at("reliable"));
  const std::vector<double> few = {1e-3, 1e-3, 1e-3, 1e-3, 3e-3, 3e-3, 3e-3, 3e-3};
  EXPECT_TRUE(judge_stability({few, {}, quiet_host()}, {few, {}, quiet_host()}, {.scatter_share = 1.0}).at("reliable"));
}

TEST(Stability, StealIsNamed) {
  const std::vector<double> b = around(1e-3, 50), c = around(1e-3, 50);
  const json judged = judge_stability({b, {}, quiet_host()}, {c, {}, {{"other_cores", 0.0}, {"steal_share", 0.2}}}, {});
  EXPECT_EQ(ids(judged), (std::vector<std::string>{"steal/candidate"}));
}

// A tail (16% of the samples at 2.5-10x the median, as a small kernel's on the quiet 2-core CPU
// machine) leaves the median where it was: not two groups.
TEST(Stability, ATailIsNotScatter) {
  std::vector<double> b = around(1e-3, 84);
  for (int i = 0; i < 16; ++i) b.push_back(2.5e-3 + 0.5e-3 * i);
  const json judged = judge_stability({b, {}, quiet_host()}, {b, {}, quiet_host()}, {});
  EXPECT_TRUE(judged.at("reliable"));
}

// On a GPU, a side whose host path outgrows its launch cover has the device wait inside the timed
// region; a cover sized to the side's host path, or none (the CPU, the kernelbench protocol), not.
TEST(Stability, AHostPathBeyondItsLaunchCoverIsHostBound) {
  const std::vector<double> b = around(1e-3, 50), c = around(1e-4, 50);
  const std::vector<double> slow_launch = around(203e-6, 50), quick_launch = around(56e-6, 50);
  EXPECT_EQ(ids(judge_stability({b, slow_launch, quiet_host(), 100e-6}, {c, quick_launch, quiet_host(), 100e-6}, {})),
            (std::vector<std::string>{"host_bound/baseline"}));
  EXPECT_TRUE(judge_stability({b, slow_launch, quiet_host(), 260e-6}, {c, quick_launch, quiet_host(), 100e-6}, {})
                  .at("reliable"));
  EXPECT_TRUE(judge_stability({b, slow_launch, quiet_host()}, {c, quick_launch, quiet_host()}, {}).at("reliable"));
}

// Without the host's reading (no /proc/stat) only the samples are judged.
TEST(Stability, NoHostReadingJudgesTheSamplesAlone) {
  const std::vector<double> b = around(1e-3, 50);
  EXPECT_TRUE(judge_stability({b, {}, nullptr}, {b, {}, nullptr}, {}).at("reliable"));
}

// Paired rounds: ratios that agree leave the figure reliable; ratios from 0.25 to 3.6 (the CPU
// machine's quiet ReLU, 2026-12-08) do not.
TEST(Stability, PairedRoundsThatDisagreeAreNamed) {
  const std::vector<double> b = around(1e-3, 100), c = around(2e-4, 100);
  const std::vector<double> agree = {5.0, 5.1, 4.9, 5.05, 4.95, 5.0, 5.02, 4.98, 5.1, 4.9};
  EXPECT_TRUE(judge_stability({b, {}, quiet_host()}, {c, {}, quiet_host()}, {}, agree).at("reliable"));
  const std::vector<double> disagree = {1.7, 0.29, 1.1, 1.42, 3.59, 0.51, 1.0, 1.69, 1.14, 1.66};
  const json judged = judge_stability({b, {}, quiet_host()}, {c, {}, quiet_host()}, {}, disagree);
  EXPECT_FALSE(judged.at("reliable"));
  EXPECT_EQ(ids(judged), (std::vector<std::string>{"rounds_disagree/both"}));
}

TEST(HostLoad, OtherCoresAreTheBusyCoresLessTheWorkersOwn) {
  CpuCounters before{100, 400, 1}, after{103, 406, 1.3};  // 3 s busy, 0.3 s steal over 2 s of two cores
  const json load = host_load(before, after, 2.0, 1.0);
  EXPECT_DOUBLE_EQ(load.at("busy_cores"), 1.5);
  EXPECT_DOUBLE_EQ(load.at("other_cores"), 1.0);
  EXPECT_NEAR(load.at("steal_share").get<double>(), 0.05, 1e-12);
  EXPECT_GT(load.at("resolution_cores").get<double>(), 0.0);
  EXPECT_LT(load.at("resolution_cores").get<double>(), 0.1);  // 3 ticks over 2 s
}

TEST(HostLoad, ThisMachinesCountersReadAndGrow) {
  const auto first = read_cpu_counters();
  ASSERT_TRUE(first.has_value());
  volatile double spin = 0;
  for (int i = 0; i < 20'000'000; ++i) spin = spin + 1.0;
  const auto second = read_cpu_counters();
  ASSERT_TRUE(second.has_value());
  EXPECT_GT(second->total_seconds, first->total_seconds);
  EXPECT_GE(second->busy_seconds, first->busy_seconds);
  EXPECT_LE(second->busy_seconds, second->total_seconds);
}

// A window over this machine: the figures where the timed workers' time was read, null where not.
TEST(HostLoad, AWindowGivesTheLoadOnlyWithTheWorkersTime) {
  const HostWindow window;
  volatile double spin = 0;
  for (int i = 0; i < 20'000'000; ++i) spin = spin + 1.0;
  EXPECT_TRUE(window.load(std::nullopt).is_null());
  const json load = window.load(0.0);
  ASSERT_TRUE(load.is_object()) << load.dump();
  EXPECT_GT(load.at("wall_seconds").get<double>(), 0);
  EXPECT_GT(load.at("busy_cores").get<double>(), 0);
}

}  // namespace
}  // namespace kbv::measure
