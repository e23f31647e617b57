// Where a worker's GPU time went while it was timed (PROTOCOL.md, "Work outside the timed calls").
// From the timing's first command to its last, CUPTI's activity records of every kernel, copy and
// set this process runs on the device, and of the launches behind them (which thread, when), are
// charged to kbv's own steps, to the calls of the model or to nobody's window by
// GpuWorkAccounts (worker/gpu_work_accounts.h). CUPTI is the library torch's profiler uses, already
// loaded in the process; the ledger is closed before anything else may use it (the probe's trace).
// Records a candidate stops or loses are missed launch covers in the totals, never silence.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "kbv/worker/gpu_work_accounts.h"

namespace kbv::worker {

class GpuLedger {
 public:
  GpuLedger();
  ~GpuLedger();
  GpuLedger(const GpuLedger&) = delete;
  GpuLedger& operator=(const GpuLedger&) = delete;

  // Starts recording from now (the device's work so far must be done), on the calling (main)
  // thread; `covered`: each timed call follows a launch cover. Where CUPTI cannot record, the
  // ledger stays closed and totals() says why.
  void open(bool covered);
  // Stops recording; what was recorded stays in the totals.
  void close();
  bool is_open() const { return open_; }
  // Around each call of the model on the main thread; timed(seconds) after a timed one's timer.
  void enter_call();
  void leave_call();
  void timed(double seconds);
  // Charges everything recorded so far (the device's work must be done): the accounts' totals with
  // "dropped" (records CUPTI had no room for) and "launch_records" (the launches' records read), or
  // {"unavailable": why}; null if never opened.
  nlohmann::json totals();

 private:
  void charge();

  bool open_ = false;
  std::optional<std::string> unavailable_;
  std::unique_ptr<GpuWorkAccounts> accounts_;
  CallMark call_;
  std::uint64_t dropped_ = 0, launch_records_ = 0;
};

}  // namespace kbv::worker
