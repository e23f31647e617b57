// `kbv audit`: each problem's reference, on its own inputs and on every verified family, probed
// for the defects that let a cheat pass (audit_judge). One reference worker per problem, `jobs`
// problems at once (one that runs out of memory beside the others is audited again by itself at
// the end); the problem's code never runs in the parent.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "kbv/audit/audit_judge.h"
#include "kbv/eval/worker_client.h"
#include "kbv/store/store.h"

namespace kbv::audit {

struct ProblemAudit {
  store::ProblemInfo problem;
  std::vector<AuditFinding> findings;
  std::vector<FamilyFacts> families;  // the raw facts, for --json
  std::string error;                  // non-empty: the problem could not be audited
  double seconds = 0;
  bool retried_alone = false;  // ran out of memory beside other audits (--jobs), audited again by itself
};

struct AuditRequest {
  std::vector<store::ProblemInfo> problems;
  std::string device = "cpu";
  double memory_share = 0.25;  // huge_memory: one draw's inputs + outputs above this share of the device
  double timeout_seconds = 120, load_timeout_seconds = 600;
  int jobs = 1;  // problems audited at once
  eval::WorkerLaunch launch;
  std::function<void(const ProblemAudit&)> done = [](const ProblemAudit&) {};  // one call at a time
};

// In the problems' order. Throws eval::NoDevice when the device is not there (every problem would
// fail alike).
std::vector<ProblemAudit> audit_problems(const AuditRequest& request);

nlohmann::json to_json(const ProblemAudit& audit);

}  // namespace kbv::audit
