// kbv run's builds ahead of the evaluations: every candidate's kernels built on every core, in the
// order the lanes will want them, while the lanes evaluate what is ready. A lane waits for a
// candidate's build by its path; a build given up, or a builder that stopped, releases its waiters
// all the same (the candidate then builds when it is evaluated).
#pragma once

#include <atomic>
#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "kbv/eval/compile.h"

namespace kbv::run {

class BuildsAhead {
 public:
  // Starts the builds of `compile.candidates` (its `done` and `cancelled` are this class's); `done`
  // is told of each finished build, one at a time, and `note` of a builder that stopped. Unless
  // `compile.background` (the CPU: builds would share the cores the timing measures), returns once
  // every build is done.
  BuildsAhead(eval::CompileRequest compile, std::function<void(const eval::CompileResult&)> done,
              std::function<void(const std::string&)> note);
  ~BuildsAhead() { join(); }
  BuildsAhead(const BuildsAhead&) = delete;
  BuildsAhead& operator=(const BuildsAhead&) = delete;

  // Whether the build of `candidate` (one of compile.candidates) is over, and a wait until it is.
  bool ready(const std::string& candidate) const;
  void wait(const std::string& candidate) const;
  // No build starts after this (no device: the builds would serve no one).
  void stop() { stopped_ = true; }
  void join();

 private:
  std::map<std::string, std::shared_future<void>> built_;  // filled before the builder starts: read-only
  std::map<std::string, std::promise<void>> building_;     // the builds not over yet
  std::mutex mutex_;                                       // building_, the done callback
  std::atomic<bool> stopped_ = false;
  std::thread builder_;
};

}  // namespace kbv::run
