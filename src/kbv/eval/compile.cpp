#include "kbv/eval/compile.h"

#include <algorithm>
#include <chrono>
#include <mutex>
#include <thread>

#include "kbv/eval/extension_cache.h"
#include "kbv/eval/sandbox_plan.h"

namespace kbv::eval {
namespace {

CompileResult compile_one(const CompileRequest& request, const std::string& candidate) {
  const auto started = std::chrono::steady_clock::now();
  CompileResult result{candidate, "ok", "", 0};
  WorkerLaunch launch = request.launch;
  add_build_environment(launch, request.cache_dir, candidate, request.device);
  std::optional<sandbox::Spec> sandbox;
  if (launch.sandbox) sandbox = plan_sandbox(launch, request.cache_dir, {candidate});
  WorkerClient worker("candidate", launch, sandbox ? &*sandbox : nullptr);
  try {
    const Reply reply = worker.request({{"cmd", "compile"}, {"candidate", candidate}, {"device", request.device},
                                        {"background", request.background}},
                                       std::chrono::duration<double>(request.timeout_seconds));
    result.ahead = reply.header.value("ahead", nlohmann::json::object());
  } catch (const WorkerFailed& failed) {
    result.outcome = failed.kind;
    result.message = failed.what();
  } catch (const WorkerLost& lost) {
    result.outcome = lost.kind;
    result.message = std::string(lost.what()) + "\n" + worker.log_tail();
  }
  worker.shutdown();
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return result;
}

}  // namespace

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
      CompileResult result = compile_one(request, request.candidates[mine]);
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
