// The main thread's routes from an op to code other than its kernel (PROTOCOL.md, "Work outside
// the timed calls"): the thread's local include and exclude sets of dispatch keys (a key added to
// the include set sends every op the thread runs through that key's backend fallback first) and
// torch's mode stacks (__torch_function__ and __torch_dispatch__ modes). kbv's own steps (the draws,
// the copies into the timed sets, the checks) run on that thread between the candidate's calls: a
// route the candidate leaves open there runs its code inside them, where no timer looks. Each is
// remembered before the candidate's import and compared after the import, after each of its calls,
// before each draw and at the end; the key sets are put back as they were, so its code no longer
// runs in kbv's steps.
#pragma once

#include <c10/core/impl/LocalDispatchKeySet.h>
#include <nlohmann/json.hpp>

namespace kbv::worker {

class DispatchRoutes {
 public:
  // Remembers the calling thread's routes as they are now.
  DispatchRoutes();
  // What differs from the remembered routes (an empty array if nothing); the local key sets are
  // put back as they were. On the thread that constructed it.
  nlohmann::json restore() const;

 private:
  c10::impl::LocalDispatchKeySet keys_;
  long function_modes_, dispatch_modes_, infra_modes_;
};

}  // namespace kbv::worker
