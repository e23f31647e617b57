#include "kbv/worker/op_recorder.h"

#include <array>
#include <atomic>
#include <cstring>

#include <ATen/ATen.h>

namespace kbv::worker {
namespace {

// The callback runs on every op of the process; while recording it claims a slot and copies the
// name there (an operator's name lives as long as the operator, but a record opened with a name of
// its own, as torch.compile's graphs are, owns it only until it ends), so the timed calls pay an
// atomic increment and a short copy per op. Names are made unique at stop().
constexpr size_t kSlots = 1 << 13, kNameBytes = 96;
std::atomic<bool> recording{false};
std::atomic<size_t> used{0};
std::array<std::array<char, kNameBytes>, kSlots> names;

std::unique_ptr<at::ObserverContext> on_op(const at::RecordFunction& op) {
  if (recording.load(std::memory_order_relaxed)) {
    const size_t slot = used.fetch_add(1, std::memory_order_relaxed);
    if (slot < kSlots) {
      const char* name = op.name();
      std::strncpy(names[slot].data(), name ? name : "", kNameBytes - 1);
      names[slot][kNameBytes - 1] = '\0';
    }
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
  std::set<std::string> ops;
  for (size_t i = 0; i < count; ++i) ops.emplace(names[i].data());
  return ops;
}

bool OpRecorder::intact() {
  start();
  at::zeros({1});
  return stop().count("aten::zeros") > 0;
}

}  // namespace kbv::worker
