// Which aten ops a call ran, seen from the C++ side: a global RecordFunction callback registered
// before the candidate is imported and left in place for the worker's life, so that every call
// (timed, checked, traced) runs under it alike -- unlike torch's profiler or a sys.setprofile hook,
// it is not a state the candidate's Python can query to tell an observed call from a timed one.
// Recording itself is a flag the callback reads; the ops it collects are names only. One recorder
// per process (the callback's state is the process's).
#pragma once

#include <set>
#include <string>

#include <ATen/record_function.h>

namespace kbv::worker {

class OpRecorder {
 public:
  OpRecorder();  // registers the callback
  ~OpRecorder();
  OpRecorder(const OpRecorder&) = delete;
  OpRecorder& operator=(const OpRecorder&) = delete;

  // Ops run between start() and stop() (any thread) are added to the set stop() returns.
  void start();
  std::set<std::string> stop();

  // Whether the callback still sees ops on this thread: torch's op recording not switched off
  // (at::enableRecordFunction, torch.autograd._enable_record_function), the callback not removed or
  // disabled. Runs one aten op to find out.
  bool intact();

 private:
  at::CallbackHandle handle_;
};

}  // namespace kbv::worker
