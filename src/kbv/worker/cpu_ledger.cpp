#include "kbv/worker/cpu_ledger.h"

#include <time.h>

namespace kbv::worker {
namespace {

double cpu_seconds(clockid_t clock) {
  timespec now{};
  clock_gettime(clock, &now);
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
}

// Always the thread's clock first, then the process's. Under a CPU time limit (the sandbox sets
// one) the kernel keeps a group timer and the process's clock reads that, which holds a running
// thread's time only up to its last scheduler update; reading this thread's own clock makes that
// update. Read the other way round, a call's main-thread time not yet in the process's count makes
// the other threads' time in the call come out short, and the ledger charges it to no call:
// ~100 us a call, untimed_work on honest candidates.
double main_thread() { return cpu_seconds(CLOCK_THREAD_CPUTIME_ID); }
double whole_process() { return cpu_seconds(CLOCK_PROCESS_CPUTIME_ID); }

}  // namespace

void CpuLedger::open() {
  open_ = true;
  main_in_calls_ = other_in_calls_ = 0;
  calls_ = 0;
  main_opened_ = main_thread();
  process_opened_ = whole_process();
}

void CpuLedger::enter_call() {
  if (!open_) return;
  main_entered_ = main_thread();
  process_entered_ = whole_process();
}

void CpuLedger::leave_call() {
  if (!open_) return;
  const double main = main_thread() - main_entered_;
  const double process = whole_process() - process_entered_;
  main_in_calls_ += main;
  other_in_calls_ += process > main ? process - main : 0;
  ++calls_;
}

nlohmann::json CpuLedger::totals() const {
  if (!open_) return nullptr;
  const double main = main_thread() - main_opened_;
  return {{"main_thread_seconds", main},
          {"main_thread_in_calls_seconds", main_in_calls_},
          {"other_threads_in_calls_seconds", other_in_calls_},
          {"process_seconds", whole_process() - process_opened_},
          {"calls", calls_}};
}

}  // namespace kbv::worker
