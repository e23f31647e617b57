#include "kbv/eval/candidate_start.h"

#include <optional>

#include "kbv/eval/compile.h"
#include "kbv/eval/extension_cache.h"
#include "kbv/eval/published_build.h"
#include "kbv/eval/sandbox_plan.h"
#include "kbv/eval/stage.h"
#include "kbv/eval/worker_client.h"
#include "kbv/ipc/commands.h"

namespace kbv::eval {

using Seconds = std::chrono::duration<double>;

// The candidate's worker, started: forked, then (posted, not awaited) its device context made and
// the kernels of kbv's own steps loaded (worker/kernel_warmup.h). In a sandbox it gets a private
// build folder with a checked copy of its content's published build (published_build.h); with
// `only_if_built`, none is started (nullptr) where nothing is published yet.
std::unique_ptr<WorkerPort> start_candidate_worker(const EvalRequest& request, bool only_if_built) {
  WorkerLaunch launch = request.launch;
  add_build_environment(launch, request.cache_dir, request.candidate, request.device);
  std::optional<sandbox::Spec> sandbox;
  std::optional<sandbox::BuildFolder> folder;
  if (launch.sandbox) {
    const std::string published = published_dir(request.cache_dir, request.candidate, request.device, launch.python);
    const std::optional<PublishedBuild> build = find_published(published);
    if (!build && only_if_built) return nullptr;
    folder.emplace(private_copy(published, build, launch.limits.build_bytes));
    sandbox = plan_sandbox(launch, request.cache_dir, {request.problem, request.candidate});
  }
  // The worker holds the folder's mount from here on; this descriptor closes on return.
  auto worker =
      std::make_unique<WorkerClient>("candidate", launch, sandbox ? &*sandbox : nullptr, folder ? folder->fd() : -1);
  worker->post(ipc::commands::message(ipc::commands::Device{request.device, protocol::to_json(request.protocol)}),
               Seconds(request.timeout_seconds));
  return worker;
}

// In a sandbox, the candidate content's build, published before its evaluation's worker starts:
// found, or made now by a build worker of its own (compile.h), so that nothing the evaluation does
// reaches the cache.
bool build_first(const EvalRequest& request, protocol::Record& record) {
  if (!request.launch.sandbox) return true;
  const Stage stage(record, "build");
  CompileRequest compile;
  compile.device = request.device;
  compile.timeout_seconds = request.compile_timeout_seconds;
  compile.cache_dir = request.cache_dir;
  compile.launch = request.launch;
  compile.building = [&](const std::string&) { request.progress("candidate: building its kernels"); };
  const CompileResult built = compile_candidate(compile, request.candidate);
  if (built.outcome == "timeout") {
    record.verdict = protocol::Verdict::timeout;
    record.verdict_reason = "its build took longer than --compile-timeout: " + built.message;
  } else if (built.over_limit) {
    record.verdict = protocol::Verdict::compile_error;
    record.verdict_reason = built.message;
  } else {
    return true;
  }
  if (built.containment.is_object()) record.sandbox.update(built.containment);
  return false;
}

}  // namespace kbv::eval
