#include "kbv/worker/step_kernels.h"

#include <atomic>
#include <memory>
#include <mutex>
#include <string_view>
#include <unordered_map>

#include <ATen/core/dispatch/Dispatcher.h>

namespace kbv::worker {
namespace {

// c10 keeps each operator's count of registrations (Dispatcher::OperatorDef::def_and_impl_count:
// one for its schema and one per kernel, less those removed) but shows it to no one: the listing
// (dumpState) takes ~10 us an operator, a count one load. It is read through the private member
// OperatorHandle::operatorDef_, named in an explicit instantiation, where access is not checked
// ([temp.spec.general]/6): a layout change in torch fails this build, not the check.
struct OperatorDefKey {
  friend constexpr auto operator_def_member(OperatorDefKey);
};
template <auto Member>
struct ExposeOperatorDef {
  friend constexpr auto operator_def_member(OperatorDefKey) { return Member; }
};
template struct ExposeOperatorDef<&c10::OperatorHandle::operatorDef_>;

auto& operator_def(c10::OperatorHandle& handle) { return *(handle.*operator_def_member(OperatorDefKey{})); }

size_t registrations(c10::OperatorHandle& handle) {
  // Written by the dispatcher under its own lock, on whichever thread registers.
  return std::atomic_ref<size_t>(operator_def(handle).def_and_impl_count).load(std::memory_order_relaxed);
}

struct Overload {
  c10::OperatorHandle handle;
  size_t known;  // index into known_counts
};

// The process's one check (RecordFunction's callbacks are global).
std::atomic<bool> armed{false};
std::unordered_map<std::string_view, std::vector<Overload>> operators;  // by name, no overload: RecordFunction's
std::unique_ptr<std::atomic<size_t>[]> known_counts;                    // before the import, or as last kept
// Operators torch never shows its callbacks (ObservedOperators: sizes, strides and a few more):
// counted at each take() instead.
std::vector<Overload> unobserved;
std::mutex seen_mutex;
std::vector<StepKernels::Seen> seen;

void count(Overload& overload) {
  std::atomic<size_t>& known = known_counts[overload.known];
  if (registrations(overload.handle) == known.load(std::memory_order_relaxed)) return;
  const std::lock_guard lock(seen_mutex);
  const size_t now = registrations(overload.handle);
  if (now == known.load(std::memory_order_relaxed)) return;
  // The listing as it is while the op starts: a kernel that removes itself when it has run is in it.
  seen.push_back({c10::toString(overload.handle.operator_name()), overload.handle.dumpState()});
  known.store(now, std::memory_order_relaxed);  // seen once per change, not on every later run
}

std::unique_ptr<at::ObserverContext> on_op(const at::RecordFunction& fn) {
  if (!armed.load(std::memory_order_relaxed)) return nullptr;
  const auto found = operators.find(fn.name());
  if (found == operators.end()) return nullptr;
  for (Overload& overload : found->second) count(overload);
  return nullptr;
}

}  // namespace

StepKernels::StepKernels() {
  armed.store(false);
  operators.clear();
  unobserved.clear();
  seen.clear();
  c10::Dispatcher& dispatcher = c10::Dispatcher::singleton();
  std::vector<c10::OperatorHandle> handles;
  for (const c10::OperatorName& name : dispatcher.getAllOpNames()) {
    if (!name.name.starts_with("aten::")) continue;
    if (std::optional<c10::OperatorHandle> handle = dispatcher.findOp(name)) handles.push_back(*handle);
  }
  known_counts = std::make_unique<std::atomic<size_t>[]>(handles.size());
  for (size_t i = 0; i < handles.size(); ++i) {
    known_counts[i].store(registrations(handles[i]));
    // The operator's own name string lives as long as the operator: aten's are never removed.
    operators[handles[i].operator_name().name].push_back({handles[i], i});
    if (!operator_def(handles[i]).op.isObserved()) unobserved.push_back({handles[i], i});
  }
  handle_ = at::addGlobalCallback(at::RecordFunctionCallback(&on_op).scopes({at::RecordScope::FUNCTION}));
}

StepKernels::~StepKernels() {
  armed.store(false);
  at::removeCallback(handle_);
}

void StepKernels::arm() { armed.store(true); }

StepKernels::ModelCall::ModelCall(const StepKernels* kernels) : was_armed_(kernels && armed.exchange(false)) {}

StepKernels::ModelCall::~ModelCall() {
  if (was_armed_) armed.store(true);
}

std::vector<StepKernels::Seen> StepKernels::take() {
  if (armed.load()) {
    for (Overload& overload : unobserved) count(overload);
  }
  const std::lock_guard lock(seen_mutex);
  std::vector<Seen> taken;
  taken.swap(seen);
  return taken;
}

}  // namespace kbv::worker
