// `kbv run`: its options on the command line and what it prints.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "kbv/eval/worker_client.h"

namespace kbv::cli {

struct RunOptions {
  std::string problems, samples, run_name, manifest, db = "results.sqlite", device = "cpu";
  std::string protocols = "verified,kernelbench", gpus = "0";
  int jobs = 0;  // 0: chosen from the cores and the GPU lanes
  double timeout = 120, compile_timeout = 1800;
  bool no_audit = false;
  std::string ray, ray_python = "python3";  // --ray ADDRESS: evaluate on a Ray cluster (docs/serve.md)
  std::vector<std::string> ray_serve_args;  // with --ray: the sandbox and zygote options, for every node
};

CLI::App* add_run_command(CLI::App& app, RunOptions& options);

// Exit 0 when every pending evaluation ran (whatever the verdicts), 1 when some could not be
// carried out (they are in the store's `failures` and a rerun tries them again).
int run_command(const RunOptions& options, const std::string& cache_dir, const eval::WorkerLaunch& launch);

}  // namespace kbv::cli
