// Where a worker's CPU time went while it was timed (PROTOCOL.md, "Work outside the timed calls").
// From the timing's first command on it adds up, in this process, the CPU time of its main thread
// (kbv's own steps and the calls of the model) and the CPU time every other thread spent while a
// call of the model was under way (torch's intra-op threads, an OpenMP team, the candidate's own
// threads working inside the call). The parent reads the sandbox's whole CPU time from outside;
// what remains of it beyond these two was spent by other threads or processes while no call was
// under way: work for the timed calls that no timer saw.
#pragma once

#include <nlohmann/json.hpp>

namespace kbv::worker {

class CpuLedger {
 public:
  // Starts the count (again) from now.
  void open();
  bool is_open() const { return open_; }
  // Around each call of the model while open: the span whose other threads' time is the call's.
  void enter_call();
  void leave_call();
  // {"main_thread_seconds", "main_thread_in_calls_seconds", "other_threads_in_calls_seconds",
  // "process_seconds", "calls"} since open(): process_seconds is this process's own total, which
  // the parent trusts only for the reference's worker.
  nlohmann::json totals() const;

 private:
  bool open_ = false;
  double main_opened_ = 0, process_opened_ = 0;
  double main_entered_ = 0, process_entered_ = 0;
  double main_in_calls_ = 0, other_in_calls_ = 0;
  long calls_ = 0;
};

}  // namespace kbv::worker
