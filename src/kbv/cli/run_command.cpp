#include "kbv/cli/run_command.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <thread>

#include "kbv/cli/list_option.h"
#include "kbv/run/discovery.h"
#include "kbv/run/runner.h"

namespace kbv::cli {

CLI::App* add_run_command(CLI::App& app, RunOptions& o) {
  CLI::App* cmd = app.add_subcommand("run", "Evaluate many candidates into a SQLite store (resumes where it stopped)");
  cmd->footer(
      "Inputs: --problems (a KernelBench problem tree, level{L}/{id}_{Name}.py) with --samples (generated files named\n"
      "level_{L}_problem_{id}_sample_{s}_kernel.py), or --manifest (CSV/TSV with a header naming problem and "
      "candidate,\n"
      "optionally run, sample and device; or JSON Lines with those keys). Files that cannot be used are listed.\n"
      "Rerunning the same command skips every record already in --db.");
  auto* problems = cmd->add_option("--problems", o.problems, "KernelBench problem folder, or one problem file")
                       ->check(CLI::ExistingPath);
  auto* samples = cmd->add_option("--samples", o.samples, "Folder of generated samples")->check(CLI::ExistingDirectory);
  auto* manifest = cmd->add_option("--manifest", o.manifest, "CSV, TSV or JSONL manifest")->check(CLI::ExistingFile);
  problems->needs(samples);
  samples->needs(problems);
  manifest->excludes(problems)->excludes(samples);
  cmd->add_option("--run-name", o.run_name, "Name of the run (default: the samples folder's name, or the manifest's)");
  cmd->add_option("--db", o.db, "SQLite store to write (created if missing)")->capture_default_str();
  cmd->add_option("--device", o.device, "cpu or cuda")->check(CLI::IsMember({"cpu", "cuda"}))->capture_default_str();
  cmd->add_option("--protocols", o.protocols, "Comma-separated: verified, kernelbench")->capture_default_str();
  cmd->add_option("--gpus", o.gpus, "Comma-separated GPU indices, one evaluation lane each (cuda)")
      ->capture_default_str();
  cmd->add_option("-j,--jobs", o.jobs,
                  "Candidate builds at a time (0: every core; on cuda two cores per GPU lane are left to the timing)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--timeout", o.timeout, "Seconds any one step of a candidate may take")->capture_default_str();
  cmd->add_option("--compile-timeout", o.compile_timeout, "Seconds one candidate's build may take")
      ->capture_default_str();
  cmd->add_flag("--no-audit", o.no_audit, "Do not audit the problems (kbv audit, once per problem content and device)");
  cmd->add_option(
      "--ray", o.ray,
      "Evaluate on a Ray cluster at this address: kbv serve on each node offering the resource kbv_node, with "
      "as many GPUs as --gpus names, the records back into --db (docs/serve.md)");
  cmd->add_option("--ray-python", o.ray_python, "With --ray: a Python with ray and kbv_client (pip install ./python)")
      ->capture_default_str();
  return cmd;
}

int run_command(const RunOptions& o, const std::string& cache_dir, const eval::WorkerLaunch& launch) {
  if (o.manifest.empty() && o.samples.empty()) {
    std::cerr << "kbv run: name the candidates: --problems DIR --samples DIR, or --manifest FILE\n";
    return 2;
  }
  run::RunRequest request;
  request.protocols = split_list(o.protocols);
  for (const std::string& p : request.protocols) {
    if (p != "verified" && p != "kernelbench") {
      std::cerr << "kbv run: --protocols: " << p << " is not verified or kernelbench\n";
      return 2;
    }
  }
  request.gpus = split_list(o.gpus);
  if (request.protocols.empty() || request.gpus.empty()) {
    std::cerr << "kbv run: --protocols and --gpus need at least one entry\n";
    return 2;
  }
  namespace fs = std::filesystem;
  if (o.manifest.empty()) {
    const std::string name =
        o.run_name.empty() ? fs::absolute(o.samples).lexically_normal().filename().string() : o.run_name;
    request.discovery = run::discover_samples(o.problems, o.samples, name.empty() ? "samples" : name);
  } else {
    request.discovery =
        run::read_manifest(o.manifest, o.run_name.empty() ? fs::path(o.manifest).stem().string() : o.run_name);
  }
  request.device = o.device;
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int lanes = o.device == "cuda" ? static_cast<int>(request.gpus.size()) : 0;  // the CPU times after the builds
  request.compile_jobs = o.jobs > 0 ? o.jobs : std::max(1, cores - 2 * lanes);
  request.timeout_seconds = o.timeout;
  request.compile_timeout_seconds = o.compile_timeout;
  request.cache_dir = cache_dir;
  request.launch = launch;
  request.terminal = isatty(STDERR_FILENO);
  request.audit = !o.no_audit;
  if (!o.ray.empty()) {
    request.ray = run::RayLaunch{
        o.ray_python,
        o.ray,
        launch.executable,
        o.device == "cuda" ? static_cast<int>(request.gpus.size()) : 0,
        {"--timeout=" + std::to_string(o.timeout), "--compile-timeout=" + std::to_string(o.compile_timeout)}};
    request.ray->serve_args.insert(request.ray->serve_args.end(), o.ray_serve_args.begin(), o.ray_serve_args.end());
  }

  const auto& unmatched = request.discovery.unmatched;
  std::cerr << "kbv run: " << request.discovery.jobs.size() << " candidates, " << unmatched.size()
            << " files unmatched, protocols " << o.protocols << ", device " << o.device << ", store " << o.db << "\n";
  for (size_t i = 0; i < unmatched.size() && i < 10; ++i)
    std::cerr << "  unmatched: " << unmatched[i].path << ": " << unmatched[i].reason << "\n";
  if (unmatched.size() > 10)
    std::cerr << "  ... and " << unmatched.size() - 10 << " more (table `unmatched` in the store)\n";

  store::Store store(o.db);
  run::RunTotals totals;
  try {
    totals = run::run(request, store);
  } catch (const run::RayDriverFailed& failed) {  // what was answered is in the store; a rerun does the rest
    std::cerr << "kbv run: error: " << failed.what() << "\n";
    return 1;
  }

  std::ostringstream verdicts;
  for (const auto& [verdict, count] : totals.verdicts)
    verdicts << (verdicts.tellp() ? ", " : "") << verdict << " " << count;
  char times[160];
  std::snprintf(times, sizeof times, "builds %.0f s, evaluations %.0f s, wall %.0f s", totals.build_seconds,
                totals.evaluate_seconds, totals.wall_seconds);
  std::cout << "kbv run: " << totals.evaluated << " evaluated (" << (totals.evaluated ? verdicts.str() : "none")
            << "), " << totals.already << " already in the store, " << totals.failed << " could not be evaluated";
  if (totals.other_device) std::cout << ", " << totals.other_device << " manifest rows for another device left out";
  if (totals.audited) {
    std::cout << "; " << totals.audited << " problems audited, " << totals.uncured
              << " with a defect the verified protocol does not cure (kbv report marks them)";
  }
  std::cout << "\nkbv run: " << times << "; results in " << o.db << "\n";
  if (!totals.stage_seconds.empty()) {
    std::cout << "kbv run: evaluation stages (s):";
    for (const auto& [stage, seconds] : totals.stage_seconds) {
      char text[64];
      std::snprintf(text, sizeof text, " %s %.1f", stage.c_str(), seconds);
      std::cout << text;
    }
    std::cout << "\n";
  }
  if (!totals.lanes.empty() && totals.evaluated) {  // none on a Ray cluster: each node's kbv serve keeps its own
    std::cout << "kbv run: busy share by lane (device stages' seconds / lane wall):";
    for (const auto& [gpu, lane] : totals.lanes) {
      char text[96];
      std::snprintf(text, sizeof text, " %s%s %.0f%% (%.1f of %.1f s)", gpu == "cpu" ? "" : "GPU ", gpu.c_str(),
                    lane.wall_seconds > 0 ? 100 * lane.device_seconds / lane.wall_seconds : 0.0, lane.device_seconds,
                    lane.wall_seconds);
      std::cout << text;
    }
    std::cout << "\n";
  }
  return totals.failed ? 1 : 0;
}

}  // namespace kbv::cli
