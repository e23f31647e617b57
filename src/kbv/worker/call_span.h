#pragma once

namespace kbv::worker {

// A call of the model as a ledger's span (CpuLedger: with kbv's checks around it, other threads'
// time in it is the call's; GpuLedger: the model's own code alone, what it launches is the call's).
// Left on every way out: a call that raises ends the evaluation.
template <typename Ledger>
class CallSpan {
 public:
  explicit CallSpan(Ledger& ledger) : ledger_(ledger) { ledger_.enter_call(); }
  ~CallSpan() { ledger_.leave_call(); }
  CallSpan(const CallSpan&) = delete;
  CallSpan& operator=(const CallSpan&) = delete;

 private:
  Ledger& ledger_;
};

}  // namespace kbv::worker
