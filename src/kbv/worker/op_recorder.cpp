#include "kbv/worker/op_recorder.h"

#include <array>
#include <atomic>

#include <ATen/ATen.h>

namespace kbv::worker {
namespace {

// The callback runs on every op of the process; while recording it only claims a slot and stores
// the op's name pointer (the operator's own string, alive while the op is registered), so the
// timed calls pay one atomic increment per op. Names are copied and made unique at stop().
constexpr size_t kSlots = 1 << 14;
std::atomic<bool> recording{false};
std::atomic<size_t> used{0};
std::array<const char*, kSlots> names;

std::unique_ptr<at::ObserverContext> on_op(const at::RecordFunction& op) {
  if (recording.load(std::memory_order_relaxed)) {
    const size_t slot = used.fetch_add(1, std::memory_order_relaxed);
    if (slot < kSlots) names[slot] = op.name();
  }
  return nullptr;
}

}  // namespace

OpRecorder::OpRecorder()
    : handle_(at::addGlobalCallback(at::RecordFunctionCallback(&on_op).scopes({at::RecordScope::FUNCTION}))) {}

OpRecorder::~OpRecorder() { at::removeCallback(handle_); }

void OpRecorder::start() {
  used.store(0, std::memory_order_relaxed);
  recording.store(true, std::memory_order_release);
}

std::set<std::string> OpRecorder::stop() {
  recording.store(false, std::memory_order_release);
  // A window of more ops than slots keeps its first kSlots: the ops a call runs repeat.
  const size_t count = std::min(used.load(std::memory_order_acquire), kSlots);
  std::set<const char*> distinct(names.begin(), names.begin() + count);
  std::set<std::string> ops;
  for (const char* name : distinct) ops.emplace(name);
  return ops;
}

bool OpRecorder::intact() {
  start();
  at::zeros({1});
  return stop().count("aten::zeros") > 0;
}

}  // namespace kbv::worker
