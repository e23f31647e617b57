// `kbv compile`: builds candidates' kernels ahead of their evaluation, several at a time, each
// in its own candidate worker, into the content-keyed extension cache that `kbv eval` then finds.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "kbv/eval/worker_client.h"

namespace kbv::eval {

struct CompileResult {
  std::string candidate;
  std::string outcome;  // ok, compile_error, runtime_error, crash, timeout
  std::string message;  // the build log or error, when not ok
  double seconds = 0;
  // The extensions it would build later (in __init__, on a first forward, in a try), built here:
  // {"built": [names], "failed": [{line, error}], "missed": [{line, why}]} (harness.build_ahead).
  nlohmann::json ahead = nlohmann::json::object();
};

struct CompileRequest {
  std::vector<std::string> candidates;
  std::string device = "cpu";
  int jobs = 1;
  // Builds at the lowest CPU priority (SCHED_IDLE, inherited by the compilers they start): on the
  // GPU, evaluations time calls while builds run, and a timed call's host side must not wait for a
  // core behind a compiler.
  bool background = false;
  double timeout_seconds = 1800;
  std::string cache_dir;
  WorkerLaunch launch;
  std::function<void(const CompileResult&)> done = [](const CompileResult&) {};
  std::function<bool()> cancelled = [] { return false; };  // asked before each build starts
};

std::vector<CompileResult> compile_candidates(const CompileRequest& request);

}  // namespace kbv::eval
