#include "kbv/worker/op_recorder.h"

#include <atomic>
#include <mutex>

#include <ATen/ATen.h>

namespace kbv::worker {
namespace {

std::atomic<bool> recording{false};
std::mutex guard;
std::set<std::string> seen;

std::unique_ptr<at::ObserverContext> on_op(const at::RecordFunction& op) {
  if (recording.load(std::memory_order_relaxed)) {
    const std::lock_guard<std::mutex> lock(guard);
    seen.emplace(op.name());
  }
  return nullptr;
}

}  // namespace

OpRecorder::OpRecorder()
    : handle_(at::addGlobalCallback(at::RecordFunctionCallback(&on_op).scopes({at::RecordScope::FUNCTION}))) {}

OpRecorder::~OpRecorder() { at::removeCallback(handle_); }

void OpRecorder::start() {
  {
    const std::lock_guard<std::mutex> lock(guard);
    seen.clear();
  }
  recording = true;
}

std::set<std::string> OpRecorder::stop() {
  recording = false;
  const std::lock_guard<std::mutex> lock(guard);
  return std::move(seen);
}

bool OpRecorder::intact() {
  start();
  at::zeros({1});
  return stop().count("aten::zeros") > 0;
}

}  // namespace kbv::worker
