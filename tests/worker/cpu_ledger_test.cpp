// The timing's CPU ledger (worker/cpu_ledger.h) with real threads: time other threads spend during
// a call is the call's; time they spend between calls is what the parent finds left over.
#include "kbv/worker/cpu_ledger.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

namespace kbv::worker {
namespace {

double process_seconds() {
  timespec now{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);  // brings the process's count up to date (cpu_ledger.cpp)
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

// Under a CPU time limit, as in the sandbox, the process's clock lags a running thread's; the calls'
// other threads' time must still come out whole, with nothing left over.
TEST(CpuLedger, UnderACpuLimitTheCallsOtherThreadsAreCountedWhole) {
  rlimit before_limit{};
  ASSERT_EQ(getrlimit(RLIMIT_CPU, &before_limit), 0);
  rlimit limit = before_limit;
  limit.rlim_cur = std::min<rlim_t>(limit.rlim_max, 3600 + static_cast<rlim_t>(process_seconds()));
  ASSERT_EQ(setrlimit(RLIMIT_CPU, &limit), 0);
  CpuLedger ledger;
  const double before = process_seconds();
  ledger.open();
  constexpr int kCalls = 200;
  for (int i = 0; i < kCalls; ++i) {
    ledger.enter_call();
    std::thread helper([] { spin(200e-6); });
    helper.join();
    spin(300e-6);  // the main thread's own share, last, as a call's tail is
    ledger.leave_call();
  }
  const nlohmann::json totals = ledger.totals();
  const double outside = process_seconds() - before;
  ASSERT_EQ(setrlimit(RLIMIT_CPU, &before_limit), 0);
  EXPECT_GT(totals["other_threads_in_calls_seconds"].get<double>(), 0.8 * kCalls * 200e-6);
  EXPECT_LT(untimed(totals, outside), 0.004);
}

}  // namespace
}  // namespace kbv::worker
