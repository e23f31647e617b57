// `kbv compile`: builds candidates' kernels ahead of their evaluation, several at a time, each
// in its own candidate worker. In a sandbox each build is made in a private build folder and kbv
// publishes what it left (published_build.h), where every later worker of the same content finds
// a copy; with the sandbox off, builds are made in the content-keyed extension folder itself.
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
  bool published_before = false;         // found published: no worker ran
  bool over_limit = false;               // its build folder filled up (the `build` limit): nothing of it kept
  nlohmann::json containment = nullptr;  // its worker's (WorkerClient::containment), where one ran
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
  std::function<void(const std::string&)> building = [](const std::string&) {};  // a build starts: none was published
  std::function<void(const CompileResult&)> done = [](const CompileResult&) {};
  std::function<bool()> cancelled = [] { return false; };  // asked before each build starts
};

std::vector<CompileResult> compile_candidates(const CompileRequest& request);

// One candidate's build under `request`'s settings (its `candidates` unused): found published, or
// made now and, in a sandbox, published unless it failed in a way that the same content need not
// fail again (a build without the compiler's own diagnostic, a crash, a timeout, the build limit).
CompileResult compile_candidate(const CompileRequest& request, const std::string& candidate);

}  // namespace kbv::eval
