#include "kbv/audit/auditor.h"

#include <algorithm>
#include <chrono>
#include <exception>
#include <mutex>
#include <random>
#include <thread>

#include "kbv/eval/evaluation.h"
#include "kbv/eval/plan.h"
#include "kbv/ipc/commands.h"
#include "kbv/sandbox/explain.h"

namespace kbv::audit {
namespace {

using nlohmann::json;
using Seconds = std::chrono::duration<double>;

constexpr std::uint64_t kAuditSeed = 20261130;  // an audit is not adversarial: reproducible draws

ProblemAudit audit_one(const AuditRequest& request, const store::ProblemInfo& problem,
                       const std::vector<eval::Draw>& plan, const protocol::Protocol& verified,
                       const protocol::Protocol& kernelbench) {
  const auto started = std::chrono::steady_clock::now();
  ProblemAudit audit{problem, {}, {}, "", 0};
  eval::WorkerClient reference("reference", request.launch);
  try {
    reference.request(ipc::commands::message(
                          ipc::commands::Load{problem.path, "", request.device, protocol::to_json(verified), nullptr}),
                      Seconds(request.load_timeout_seconds));
    // The plan holds draws_per_family draws of each family in turn: the first of each is audited,
    // the second is the "other draw" its inputs are swapped with. The fallback families come
    // last, audited only where an evaluation would draw them.
    const auto& fallback = verified.fallback_families;
    bool auditing_fallbacks = false;  // decided once, on the hidden families alone; then all are audited
    for (size_t i = 0; i + 1 < plan.size(); i += verified.draws_per_family) {
      if (std::find(fallback.begin(), fallback.end(), plan[i].family) != fallback.end() && !auditing_fallbacks) {
        if (judged_hidden_families(audit.families) >= verified.min_hidden_families) break;
        auditing_fallbacks = true;
      }
      const json facts =
          reference
              .request(ipc::commands::message(ipc::commands::Audit{plan[i].to_json(), plan[i + 1].to_json()}),
                       Seconds(request.timeout_seconds))
              .header.at("facts");
      audit.families.push_back({std::string(protocol::name(plan[i].family)), facts});
    }
    const json& standard = audit.families.at(0).facts;
    if (!standard.contains("outputs")) {
      audit.error = "the reference fails on its own inputs: " +
                    standard.value("raised", standard.value("bad_output", std::string("?")));
    } else {
      audit.findings = judge_audit(audit.families, verified, kernelbench, request.memory_share);
    }
  } catch (const eval::WorkerFailed& failed) {
    if (failed.kind == ipc::FailureKind::no_device) throw eval::NoDevice(failed.what());
    audit.error = failed.what();
  } catch (const eval::WorkerLost& lost) {
    audit.error = std::string("the reference worker ") + lost.what() + "\n" + reference.log_tail();
  }
  reference.shutdown();
  if (sandbox::out_of_memory(audit.error)) audit.error = "out of " + request.device + " memory: " + audit.error;
  audit.seconds = Seconds(std::chrono::steady_clock::now() - started).count();
  return audit;
}

}  // namespace

std::vector<ProblemAudit> audit_problems(const AuditRequest& request) {
  const protocol::Protocol verified = protocol::verified(), kernelbench = protocol::kernelbench();
  std::mt19937_64 rng(kAuditSeed);
  const std::vector<eval::Draw> plan = eval::plan_draws(verified, rng);
  std::vector<ProblemAudit> audits(request.problems.size());
  const int jobs = std::clamp<int>(request.jobs, 1, static_cast<int>(std::max<size_t>(request.problems.size(), 1)));
  std::mutex mutex;  // guards `next`, `failure`, `alone` and request.done
  size_t next = 0;
  std::exception_ptr failure;  // a fault every problem would meet (no device): stops the others
  std::vector<size_t> alone;   // ran out of memory beside other audits: audited again by itself
  // Each thread starts and reaps its own reference workers (a worker dies with the thread that
  // started it). Nothing is timed, so audits may share a device; only its memory is shared out.
  auto work = [&] {
    for (;;) {
      size_t mine;
      {
        std::lock_guard lock(mutex);
        if (next == request.problems.size() || failure) return;
        mine = next++;
      }
      try {
        ProblemAudit audit = audit_one(request, request.problems[mine], plan, verified, kernelbench);
        std::lock_guard lock(mutex);
        if (jobs > 1 && sandbox::out_of_memory(audit.error)) {
          alone.push_back(mine);
          continue;
        }
        request.done(audit);
        audits[mine] = std::move(audit);
      } catch (...) {
        std::lock_guard lock(mutex);
        if (!failure) failure = std::current_exception();
      }
    }
  };
  std::vector<std::thread> threads;
  for (int i = 0; i < jobs; ++i) threads.emplace_back(work);
  for (std::thread& t : threads) t.join();
  if (failure) std::rethrow_exception(failure);
  std::sort(alone.begin(), alone.end());
  for (const size_t i : alone) {
    audits[i] = audit_one(request, request.problems[i], plan, verified, kernelbench);
    audits[i].retried_alone = true;
    request.done(audits[i]);
  }
  return audits;
}

json to_json(const ProblemAudit& a) {
  json findings = json::array(), families = json::object();
  for (const AuditFinding& f : a.findings)
    findings.push_back({{"id", f.id}, {"cured_by_verified", f.cured}, {"evidence", f.evidence}});
  for (const FamilyFacts& f : a.families) families[f.family] = f.facts;
  json out = {{"problem", a.problem.path},
              {"name", a.problem.name},
              {"findings", findings},
              {"families", families},
              {"seconds", a.seconds}};
  if (a.problem.level) out["level"] = *a.problem.level;
  if (a.problem.number) out["number"] = *a.problem.number;
  if (!a.error.empty()) out["error"] = a.error;
  if (a.retried_alone) out["retried_alone"] = true;
  return out;
}

}  // namespace kbv::audit
