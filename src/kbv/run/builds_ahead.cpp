#include "kbv/run/builds_ahead.h"

#include <chrono>
#include <exception>
#include <utility>

namespace kbv::run {

BuildsAhead::BuildsAhead(eval::CompileRequest compile, std::function<void(const eval::CompileResult&)> done,
                         std::function<void(const std::string&)> note) {
  for (const std::string& path : compile.candidates) built_[path] = building_[path].get_future().share();
  compile.cancelled = [this] { return stopped_.load(); };
  compile.done = [this, done = std::move(done)](const eval::CompileResult& result) {
    std::lock_guard lock(mutex_);
    done(result);
    if (auto waiting = building_.extract(result.candidate)) waiting.mapped().set_value();
  };
  const bool background = compile.background;
  builder_ = std::thread([this, compile = std::move(compile), note = std::move(note)] {
    try {
      eval::compile_candidates(compile);
    } catch (const std::exception& error) {
      note(std::string("kbv: building ahead stopped: ") + error.what() + " (candidates build when evaluated)");
    }
    std::lock_guard lock(mutex_);  // no lane waits for a build that will not come
    for (auto& [path, promise] : building_) promise.set_value();
    building_.clear();
  });
  if (!background) join();
}

bool BuildsAhead::ready(const std::string& candidate) const {
  return built_.at(candidate).wait_for(std::chrono::seconds(0)) == std::future_status::ready;
}

void BuildsAhead::wait(const std::string& candidate) const { built_.at(candidate).wait(); }

void BuildsAhead::join() {
  if (builder_.joinable()) builder_.join();
}

}  // namespace kbv::run
