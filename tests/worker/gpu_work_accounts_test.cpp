// The GPU ledger's accounts (worker/gpu_work_accounts.h) over records laid out as CUPTI gives
// them for one timed call: kbv refills, flushes and spins (the launch cover), the call runs; then
// the ways work escapes the call's window on the device.
#include "kbv/worker/gpu_work_accounts.h"

#include <gtest/gtest.h>

#include <vector>

namespace kbv::worker {
namespace {

constexpr std::uint32_t kMain = 100, kOther = 200;
constexpr std::uint64_t us = 1000;  // ns

// One timed call at CPU time [150, 160] us: kbv's fill (1), flush (2) and spin (3) launched
// before it, the spin running [120, 220] us on the device; the call's own kernel (4) [221, 260].
struct TimedCall {
  std::vector<Launch> launches = {
      {1, kMain, 100 * us}, {2, kMain, 110 * us}, {3, kMain, 140 * us}, {4, kMain, 152 * us}};
  std::vector<DeviceWork> work = {
      {1, 100 * us, 110 * us}, {2, 110 * us, 120 * us}, {3, 120 * us, 220 * us}, {4, 221 * us, 260 * us}};
  CallMark call{150 * us, 160 * us, 40e-6};
};

nlohmann::json settle(TimedCall& t, bool covered = true) {
  GpuWorkAccounts accounts(kMain, covered);
  accounts.add_launches(t.launches);
  accounts.add_call(t.call);
  accounts.settle(t.work);
  return accounts.totals();
}

TEST(GpuWorkAccounts, AnHonestCallLeavesNothingOutside) {
  TimedCall t;
  const nlohmann::json totals = settle(t);
  EXPECT_EQ(totals["timed_calls"], 1);
  EXPECT_DOUBLE_EQ(totals["outside_seconds"].get<double>(), 0);
  EXPECT_NEAR(totals["kbv_seconds"].get<double>(), 120e-6, 1e-12);
  EXPECT_NEAR(totals["timed_calls_seconds"].get<double>(), 39e-6, 1e-12);
  EXPECT_NEAR(totals["windows_seconds"].get<double>(), 40e-6, 1e-12);
  EXPECT_EQ(totals["covers_missing"], 0);
  EXPECT_EQ(totals["unknown_launches"], 0);
}

TEST(GpuWorkAccounts, TheCallsWorkRunningUnderTheCoverIsOutside) {
  TimedCall t;  // a side stream that does not wait for the spin: [150, 215] us, before the start
  t.launches.push_back({5, kMain, 151 * us});
  t.work.push_back({5, 150 * us, 215 * us});
  EXPECT_NEAR(settle(t)["outside_seconds"].get<double>(), 65e-6, 1e-12);
}

TEST(GpuWorkAccounts, TheCallsWorkAfterItsEndIsOutside) {
  TimedCall t;  // queued behind an event another thread records later: [300, 350] us
  t.launches.push_back({5, kMain, 155 * us});
  t.work.push_back({5, 300 * us, 350 * us});
  EXPECT_NEAR(settle(t)["outside_seconds"].get<double>(), 50e-6, 1e-12);
}

TEST(GpuWorkAccounts, AnotherThreadsWorkCountsOutsideTheWindowsOnly) {
  TimedCall t;  // a thread replaying the draw: [130, 230] us, 10 us of it inside the window
  t.launches.push_back({5, kOther, 125 * us});
  t.work.push_back({5, 130 * us, 230 * us});
  const nlohmann::json totals = settle(t);
  EXPECT_NEAR(totals["outside_seconds"].get<double>(), 90e-6, 1e-12);
  EXPECT_NEAR(totals["foreign_seconds"].get<double>(), 100e-6, 1e-12);
  EXPECT_EQ(totals["foreign_records"], 1);
}

TEST(GpuWorkAccounts, WorkWhoseLaunchWasNotSeenIsForeign) {
  TimedCall t;  // launched through an API the ledger does not trace, by kbv's main thread or not
  t.work.push_back({9, 20 * us, 70 * us});
  const nlohmann::json totals = settle(t);
  EXPECT_EQ(totals["unknown_launches"], 1);
  EXPECT_NEAR(totals["outside_seconds"].get<double>(), 50e-6, 1e-12);
}

TEST(GpuWorkAccounts, AnUntimedCallsWorkIsItsOwn) {
  GpuWorkAccounts accounts(kMain, true);
  const std::vector<Launch> launches = {{1, kMain, 10 * us}};
  accounts.add_launches(launches);
  accounts.add_call({5 * us, 20 * us, std::nullopt});  // a warm-up call
  const std::vector<DeviceWork> work = {{1, 12 * us, 80 * us}};
  accounts.settle(work);
  const nlohmann::json totals = accounts.totals();
  EXPECT_EQ(totals["timed_calls"], 0);
  EXPECT_DOUBLE_EQ(totals["outside_seconds"].get<double>(), 0);
  EXPECT_NEAR(totals["untimed_calls_seconds"].get<double>(), 68e-6, 1e-12);
}

TEST(GpuWorkAccounts, ATimedCallWithoutItsCoverIsCounted) {
  TimedCall t;  // the ledger lost kbv's launches (CUPTI's API records switched off)
  t.launches = {{4, kMain, 152 * us}};
  const nlohmann::json totals = settle(t);
  EXPECT_EQ(totals["covers_missing"], 1);
  EXPECT_EQ(totals["unknown_launches"], 3);
}

TEST(GpuWorkAccounts, WithoutACoverTheWindowOpensAtTheCall) {
  TimedCall t;
  t.work[3] = {4, 150 * us, 190 * us};
  const nlohmann::json totals = settle(t, false);
  EXPECT_EQ(totals["covers_missing"], 0);
  EXPECT_DOUBLE_EQ(totals["outside_seconds"].get<double>(), 0);
}

TEST(GpuWorkAccounts, EveryRecordOfOneLaunchIsCharged) {
  TimedCall t;  // a graph launched from another thread: two kernels, one launch
  t.launches.push_back({5, kOther, 125 * us});
  t.work.push_back({5, 130 * us, 140 * us});
  t.work.push_back({5, 140 * us, 150 * us});
  const nlohmann::json totals = settle(t);
  EXPECT_EQ(totals["foreign_records"], 2);
  EXPECT_EQ(totals["unknown_launches"], 0);
  EXPECT_NEAR(totals["outside_seconds"].get<double>(), 20e-6, 1e-12);
}

TEST(GpuWorkAccounts, ALaunchSeenInOneFlushChargesWorkInTheNext) {
  GpuWorkAccounts accounts(kMain, true);
  const std::vector<Launch> launches = {{7, kOther, 10 * us}};
  accounts.add_launches(launches);
  accounts.settle({});
  const std::vector<DeviceWork> work = {{7, 30 * us, 45 * us}};
  accounts.settle(work);
  const nlohmann::json totals = accounts.totals();
  EXPECT_EQ(totals["unknown_launches"], 0);
  EXPECT_NEAR(totals["outside_seconds"].get<double>(), 15e-6, 1e-12);
}

TEST(GpuWorkAccounts, LaunchesWithoutWorkAreForgottenASettleLater) {
  GpuWorkAccounts accounts(kMain, true);
  // A launch that put nothing on the device (it failed) before the first settle's call...
  const std::vector<Launch> first = {{1, kMain, 10 * us}};
  accounts.add_launches(first);
  accounts.add_call({20 * us, 30 * us, std::nullopt});
  accounts.settle({});
  // ...is still known through the next settle, gone after it: work bearing its correlation later
  // has no launch (a correlation CUPTI reused would otherwise charge it to kbv).
  accounts.add_call({40 * us, 50 * us, std::nullopt});
  accounts.settle({});
  accounts.add_call({60 * us, 70 * us, std::nullopt});
  const std::vector<DeviceWork> late = {{1, 80 * us, 90 * us}};
  accounts.settle(late);
  EXPECT_EQ(accounts.totals()["unknown_launches"], 1);
}

}  // namespace
}  // namespace kbv::worker
