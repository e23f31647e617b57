#include "kbv/eval/compile.h"

#include <algorithm>
#include <chrono>
#include <iostream>
#include <mutex>
#include <thread>

#include "kbv/eval/extension_cache.h"
#include "kbv/eval/published_build.h"
#include "kbv/eval/sandbox_plan.h"
#include "kbv/ipc/commands.h"
#include "kbv/sandbox/explain.h"

namespace kbv::eval {
namespace {

// The harness's log of a build that failed with the compiler's own diagnostic (harness.py's
// FAILED_BUILD_LOG): the same content fails the same way, and its evaluations find it there.
constexpr const char* kFailedBuildLog = "kbv-build-failed.log";

// Publishes what a sandboxed build left, or says why not (the result then says so too).
void settle(const sandbox::BuildFolder& folder, const std::string& published, CompileResult& result) {
  if (folder.full()) {
    result.outcome = "compile_error";
    result.over_limit = true;
    result.message = sandbox::explain_full_build_folder(folder.size_bytes()) + "\n" + result.message;
    return;
  }
  const bool lasting = result.outcome == "ok" || (result.outcome == "compile_error" && folder.holds(kFailedBuildLog));
  if (!lasting) return;  // built again next time
  try {
    publish(folder, published, {result.outcome, result.message, result.ahead, result.seconds, {}});
  } catch (const std::exception& failed) {
    std::cerr << "kbv: the build of " << result.candidate << " is not kept: " << failed.what() << std::endl;
  }
}

}  // namespace

CompileResult compile_candidate(const CompileRequest& request, const std::string& candidate) {
  const auto started = std::chrono::steady_clock::now();
  const auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  };
  CompileResult result{candidate, "ok", "", 0};
  WorkerLaunch launch = request.launch;
  add_build_environment(launch, request.cache_dir, candidate, request.device);
  std::optional<sandbox::Spec> sandbox;
  std::optional<sandbox::BuildFolder> folder;
  std::string published;
  if (launch.sandbox) {
    published = published_dir(request.cache_dir, candidate, request.device, launch.python);
    if (const std::optional<PublishedBuild> found = find_published(published)) {
      result.outcome = found->outcome;
      result.message = found->message;
      result.ahead = found->ahead;
      result.published_before = true;
      result.seconds = elapsed();
      return result;
    }
    sandbox = plan_sandbox(launch, request.cache_dir, {candidate});
    folder.emplace(launch.limits.build_bytes);
  }
  request.building(candidate);
  {
    WorkerClient worker("candidate", launch, sandbox ? &*sandbox : nullptr, folder ? folder->fd() : -1);
    try {
      const Reply reply =
          worker.request(ipc::commands::message(ipc::commands::Compile{candidate, request.device, request.background}),
                         std::chrono::duration<double>(request.timeout_seconds));
      result.ahead = reply.header.value("ahead", nlohmann::json::object());
    } catch (const WorkerFailed& failed) {
      result.outcome = ipc::name(failed.kind);
      result.message = failed.what();
    } catch (const WorkerLost& lost) {
      result.outcome = lost.kind;
      result.message = std::string(lost.what()) + "\n" + worker.log_tail();
    }
    worker.shutdown();  // every process of its sandbox gone: what the folder holds is final
    result.containment = worker.containment();
  }
  result.seconds = elapsed();
  if (folder) settle(*folder, published, result);
  return result;
}

std::vector<CompileResult> compile_candidates(const CompileRequest& request) {
  std::vector<CompileResult> results(request.candidates.size());
  std::mutex mutex;
  size_t next = 0;
  // Each thread starts and reaps its own workers (a worker dies with the thread that started it).
  auto work = [&] {
    for (;;) {
      size_t mine;
      {
        std::lock_guard lock(mutex);
        if (next == request.candidates.size() || request.cancelled()) return;
        mine = next++;
      }
      CompileResult result = compile_candidate(request, request.candidates[mine]);
      std::lock_guard lock(mutex);
      request.done(result);
      results[mine] = std::move(result);
    }
  };
  std::vector<std::thread> threads;
  const int jobs = std::clamp<int>(request.jobs, 1, static_cast<int>(std::max<size_t>(request.candidates.size(), 1)));
  for (int i = 0; i < jobs; ++i) threads.emplace_back(work);
  for (std::thread& t : threads) t.join();
  return results;
}

}  // namespace kbv::eval
