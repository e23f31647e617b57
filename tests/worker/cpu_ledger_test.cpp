// The timing's CPU ledger (worker/cpu_ledger.h) with real threads: time other threads spend during
// a call is the call's; time they spend between calls is what the parent finds left over.
#include "kbv/worker/cpu_ledger.h"

#include <gtest/gtest.h>
#include <time.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace kbv::worker {
namespace {

double process_seconds() {
  timespec now{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
}

// Keeps a core busy for `seconds` of wall time.
void spin(double seconds) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < end) {
  }
}

double untimed(const nlohmann::json& totals, double outside) {
  return outside - totals["main_thread_seconds"].get<double>() - totals["other_threads_in_calls_seconds"].get<double>();
}

TEST(CpuLedger, ClosedItCountsNothing) {
  CpuLedger ledger;
  ledger.enter_call();
  ledger.leave_call();
  EXPECT_TRUE(ledger.totals().is_null());
}

TEST(CpuLedger, AThreadWorkingDuringTheCallIsTheCalls) {
  CpuLedger ledger;
  const double before = process_seconds();
  ledger.open();
  ledger.enter_call();
  std::thread helper([] { spin(0.1); });
  helper.join();
  ledger.leave_call();
  const nlohmann::json totals = ledger.totals();
  EXPECT_EQ(totals["calls"], 1);
  EXPECT_GT(totals["other_threads_in_calls_seconds"].get<double>(), 0.05);
  EXPECT_LT(totals["main_thread_in_calls_seconds"].get<double>(), 0.05);  // it waited for the helper
  EXPECT_LT(untimed(totals, process_seconds() - before), 0.01);
}

TEST(CpuLedger, AThreadWorkingBetweenCallsIsLeftOver) {
  CpuLedger ledger;
  const double before = process_seconds();
  ledger.open();
  ledger.enter_call();
  ledger.leave_call();
  std::thread ahead([] { spin(0.1); });  // the next call's work, done before it
  ahead.join();
  ledger.enter_call();
  ledger.leave_call();
  const nlohmann::json totals = ledger.totals();
  EXPECT_EQ(totals["calls"], 2);
  EXPECT_GT(untimed(totals, process_seconds() - before), 0.05);
  EXPECT_NEAR(totals["process_seconds"].get<double>(), process_seconds() - before, 0.01);
}

}  // namespace
}  // namespace kbv::worker
