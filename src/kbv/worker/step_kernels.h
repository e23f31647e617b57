// Kernels of the candidate's run inside kbv's own steps (PROTOCOL.md, "Work outside the timed
// calls"). kbv's steps between the model's calls (the draws of the inputs, the copies into the timed
// sets, the sketches of the outputs, the checks) run torch's aten operators in the candidate's
// process. A kernel registered over one of them (torch::Library at run time, torch.library in
// Python) runs the candidate's code there, where no timer looks and before kbv reads what it
// checks; one registered at the end of a call and removed at the start of the next is never there
// when the dispatcher's listing is compared (monitor.py, before and after the import and at the end).
// So every aten operator run outside the model's calls is checked as it starts: its registrations
// counted against those before the import, and where they differ, its listing as it is at that
// moment is kept for the watch to judge (only kernels for the compute keys count: a Meta kernel
// registered by a library the candidate imports is no route). The few operators torch never shows
// its callbacks (sizes, strides) are counted at each take() instead. One per process, on every
// thread.
#pragma once

#include <string>
#include <vector>

#include <ATen/record_function.h>

namespace kbv::worker {

class StepKernels {
 public:
  // Counts every aten operator's registrations, as they are before the candidate's import, and
  // registers the check (idle until arm()).
  StepKernels();
  ~StepKernels();
  StepKernels(const StepKernels&) = delete;
  StepKernels& operator=(const StepKernels&) = delete;

  // From now on every aten operator that starts outside a model's call is checked.
  void arm();

  // Around a call of the model: its own code runs unchecked (its ops are its timed work). With no
  // StepKernels (a worker without the watch), nothing.
  class ModelCall {
   public:
    explicit ModelCall(const StepKernels* kernels);
    ~ModelCall();
    ModelCall(const ModelCall&) = delete;
    ModelCall& operator=(const ModelCall&) = delete;

   private:
    bool was_armed_;
  };

  // An operator run in kbv's steps whose registrations differed from those before the import: its
  // name (with the overload) and the dispatcher's listing of its kernels then (torch's
  // _dispatch_dump format).
  struct Seen {
    std::string op;
    std::string listing;
  };
  // What was seen since the last take(), and (armed) the unobserved operators as they are now.
  std::vector<Seen> take();

 private:
  at::CallbackHandle handle_;
};

}  // namespace kbv::worker
