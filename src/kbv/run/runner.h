// `kbv run`: many candidates, one or more protocols, into the store. Candidates are built ahead on
// every core (the content-keyed extension cache); evaluation runs in one lane per GPU (one lane on
// the CPU), each lane taking a whole (problem, protocol) group so the problem's reference worker
// and its baseline serve all of the group's candidates. What is in the store already is skipped,
// so rerunning an interrupted command finishes it.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kbv/eval/worker_client.h"
#include "kbv/run/discovery.h"
#include "kbv/run/ray_driver.h"
#include "kbv/store/store.h"

namespace kbv::run {

struct RunRequest {
  Discovery discovery;
  std::vector<std::string> protocols = {"verified"};
  std::string device = "cpu";
  std::vector<std::string> gpus = {"0"};  // cuda: one lane per entry, each seeing only that GPU
  int compile_jobs = 1;
  double timeout_seconds = 120, compile_timeout_seconds = 1800;
  std::string cache_dir;
  eval::WorkerLaunch launch;
  bool terminal = false;  // progress redrawn in place rather than logged line by line
  bool audit = true;      // audit each problem (kbv audit) once per content and device, into the store
  // Set: every evaluation goes to kbv serve on the nodes of a Ray cluster (ray_driver.h), which
  // build the candidates; records come back into this store. No audit then.
  std::optional<RayLaunch> ray;
};

struct RunTotals {
  size_t evaluated = 0;             // records written now
  size_t already = 0;               // records found in the store, not redone
  size_t failed = 0;                // evaluations that could not be carried out (in `failures`)
  size_t other_device = 0;          // manifest rows for another device, left out
  size_t audited = 0, uncured = 0;  // problems audited now, and those with a defect verified does not cure
  std::map<std::string, size_t> verdicts;
  std::map<std::string, double> stage_seconds;  // summed over the records written now
  // Per lane (its GPU; "cpu" on the CPU): its wall from start to end, and the seconds of its
  // records' device stages (protocol::device_stage) in it: the lane's device busy share.
  struct Lane {
    double wall_seconds = 0, device_seconds = 0;
    std::size_t evaluations = 0;
  };
  std::map<std::string, Lane> lanes;
  double build_seconds = 0, evaluate_seconds = 0, wall_seconds = 0;
};

// Writes each record as it finishes and, when any was written, the invocation's lanes (the
// store's `sessions`). Throws eval::NoDevice (after the builds and lanes stop) when the device is
// not there.
RunTotals run(const RunRequest& request, store::Store& store);

}  // namespace kbv::run
