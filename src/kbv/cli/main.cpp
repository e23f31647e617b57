// kbv: the command line. `main` holds the single top-level catch; every subcommand returns its
// exit code: 0 when the work ran (whatever the verdict), 1 for an evaluation that could not be
// carried out, 2 for a usage error.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <set>
#include <string_view>
#include <thread>
#include <utility>

#include <CLI/CLI.hpp>

#include "kbv/cli/audit_command.h"
#include "kbv/cli/run_command.h"
#include "kbv/cli/serve_command.h"
#include "kbv/common/cache_dir.h"
#include "kbv/eval/compile.h"
#include "kbv/eval/evaluation.h"
#include "kbv/eval/summary.h"
#include "kbv/process/zygote.h"
#include "kbv/protocol/record.h"
#include "kbv/python/interpreter.h"
#include "kbv/report/aggregate.h"
#include "kbv/report/report_command.h"
#include "kbv/run/discovery.h"
#include "kbv/sandbox/spec.h"
#include "kbv/worker/worker_main.h"

namespace {

std::string self_executable() { return std::filesystem::canonical("/proc/self/exe").string(); }

// Workers forked from a zygote (process/zygote.h) or started afresh. auto is kbv's choice: on, on
// both devices since the CUDA demo (with its device fault) gave the same verdicts forked
// (docs/gpu-runs.md, 2026-12-01).
CLI::Option* add_zygote_option(CLI::App* command, std::string& zygote) {
  return command
      ->add_option("--zygote", zygote,
                   "Fork workers from one process that has imported torch (on), or start each afresh (off); "
                   "auto: kbv's choice (on)")
      ->envname("KBV_ZYGOTE")
      ->check(CLI::IsMember({"auto", "on", "off"}))
      ->capture_default_str();
}

// The sandbox around candidates' workers (docs/SECURITY.md): on by default; off for debugging.
struct SandboxOptions {
  std::string mode = "on";
  std::vector<std::string> limits;  // NAME=VALUE
};

void add_sandbox_options(CLI::App* command, SandboxOptions& options) {
  command
      ->add_option("--sandbox", options.mode,
                   "Run each candidate's code in an OS sandbox (own process table, network, filesystem view, "
                   "no privileges, a system-call filter, limits); off only to debug")
      ->check(CLI::IsMember({"on", "off"}))
      ->capture_default_str();
  command
      ->add_option("--limit", options.limits,
                   "A limit of the sandbox, NAME=VALUE, repeatable: memory=SIZE (per process), processes=N, "
                   "cpu=SECONDS (per process), file=SIZE, scratch=SIZE (/tmp, $HOME, /dev/shm together); "
                   "sizes with K, M, G or T")
      ->check([](const std::string& assignment) {
        kbv::sandbox::Limits limits;
        try {
          kbv::sandbox::set_limit(limits, assignment);
        } catch (const std::invalid_argument& bad) {
          return std::string(bad.what());
        }
        return std::string();
      });
}

// Overwrites the command line's strings, which /proc/PID/cmdline reads and a forked process keeps.
void clear_command_line(int argc, char** argv) {
  for (int i = 0; i < argc; ++i) std::memset(argv[i], 0, std::strlen(argv[i]));
}

// The subcommands that start workers (and so a zygote, and their OpenMP policy).
bool runs_workers(int argc, char** argv) {
  static const std::set<std::string_view> kRunsWorkers = {"eval", "compile", "run", "serve", "audit"};
  return argc >= 2 && kRunsWorkers.contains(argv[1]);
}

// Workers' OpenMP threads sleep when they have no work (OMP_WAIT_POLICY=passive) rather than spin
// for a while after each parallel region: a spinning thread burns CPU time after every call, where
// the timing's ledger counts work no timer saw (PROTOCOL.md, "Work outside the timed calls"), and
// takes a core a timed call could have had. OpenMP reads it when its library loads, before main,
// in kbv itself and so in the zygote forked from it: kbv starts itself again with it set.
void openmp_threads_sleep_when_idle(char** argv) {
  const char* policy = std::getenv("OMP_WAIT_POLICY");
  if (policy && std::string_view(policy) == "passive") return;
  setenv("OMP_WAIT_POLICY", "passive", 1);
  execv("/proc/self/exe", argv);
  std::perror("kbv: cannot start itself again with OMP_WAIT_POLICY=passive");
  std::exit(1);
}

// The zygote of a command that runs workers, forked before kbv has read anything but its command
// line, which the zygote clears first: what a candidate forked from it finds in its own memory holds
// nothing of this command's. Its interpreter starts while kbv parses; worker_launch waits for it,
// or ends it for a command that wants none (--zygote off); --help and usage errors end it too.
std::optional<kbv::process::Zygote::Starting> begin_zygote(int argc, char** argv) {
  if (!runs_workers(argc, argv)) return std::nullopt;
  if (const char* chosen = std::getenv("KBV_ZYGOTE"); chosen && std::string_view(chosen) == "off") return std::nullopt;
  try {
    const std::string python = kbv::python::default_python_executable();
    return kbv::process::Zygote::begin(self_executable(), python, [argc, argv, python] {
      clear_command_line(argc, argv);
      return kbv::worker::run_zygote(python);
    });
  } catch (const std::exception&) {
    return std::nullopt;  // worker_launch starts one, and says why should that fail too
  }
}

// `sandbox`: null for a command that runs no candidate (kbv audit). `early`: begin_zygote's.
kbv::eval::WorkerLaunch worker_launch(const std::string& zygote, const SandboxOptions* sandbox,
                                      std::optional<kbv::process::Zygote::Starting>& early) {
  kbv::eval::WorkerLaunch launch{.executable = self_executable(), .python = kbv::python::default_python_executable()};
  launch.sandbox = sandbox && sandbox->mode == "on";
  if (sandbox) {
    for (const std::string& limit : sandbox->limits) kbv::sandbox::set_limit(launch.limits, limit);
  }
  if (sandbox && !launch.sandbox)
    std::cerr << "kbv: warning: --sandbox off: candidates' code runs with kbv's own rights\n";
  if (launch.sandbox && geteuid() != 0) {
    throw kbv::eval::EvalError(
        "the sandbox around candidates' code needs kbv to run as root (docs/SECURITY.md); "
        "--sandbox off runs them with your own rights instead");
  }
  if (zygote == "off") {
    early.reset();
    return launch;
  }
  try {
    std::optional<kbv::process::Zygote::Starting> starting = std::exchange(early, std::nullopt);
    launch.zygote = starting ? kbv::process::Zygote::ready(std::move(*starting))
                             : kbv::process::Zygote::start(launch.executable, launch.python);
  } catch (const std::exception& failed) {
    std::cerr << "kbv: no zygote (" << failed.what() << "); starting workers afresh\n";
  }
  return launch;
}

struct EvalOptions {
  std::string problem, candidate, device = "cpu", protocol = "verified", json_path;
  double timeout = 120, compile_timeout = 1800;
  bool quiet = false, paired = false;
};

int run_eval(const EvalOptions& options, const std::string& zygote, const SandboxOptions& sandbox,
             std::optional<kbv::process::Zygote::Starting>& early_zygote) {
  kbv::eval::EvalRequest request;
  request.problem = std::filesystem::absolute(options.problem).lexically_normal().string();
  request.candidate = std::filesystem::absolute(options.candidate).lexically_normal().string();
  request.device = options.device;
  request.protocol = kbv::protocol::preset(options.protocol);
  request.protocol.timing.paired = options.paired;
  request.timeout_seconds = options.timeout;
  request.compile_timeout_seconds = options.compile_timeout;
  request.cache_dir = kbv::cache_dir();
  request.launch = worker_launch(zygote, &sandbox, early_zygote);
  if (!options.quiet) {
    const auto started = std::chrono::steady_clock::now();
    request.progress = [started](std::string_view stage) {
      const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
      char stamp[32];
      std::snprintf(stamp, sizeof stamp, "[%6.1fs] ", elapsed);
      std::cerr << "kbv: " << stamp << stage << "\n";
    };
  }

  const kbv::protocol::Record record = kbv::eval::evaluate(request);
  std::cout << kbv::eval::summarize(record);
  if (!options.json_path.empty()) {
    std::ofstream out(options.json_path);
    out << kbv::protocol::to_json(record).dump(2) << "\n";
    if (!out) throw std::runtime_error("cannot write " + options.json_path);
  }
  return 0;
}

struct CompileOptions {
  std::vector<std::string> candidates;
  std::string device = "cpu";
  int jobs = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  double timeout = 1800;
};

// Exit 0 when every candidate was built (or found built); 3 when some failed to build.
int run_compile(const CompileOptions& options, const std::string& zygote, const SandboxOptions& sandbox,
                std::optional<kbv::process::Zygote::Starting>& early_zygote) {
  kbv::eval::CompileRequest request;
  for (const std::string& c : options.candidates)
    request.candidates.push_back(std::filesystem::absolute(c).lexically_normal().string());
  request.device = options.device;
  request.jobs = options.jobs;
  request.timeout_seconds = options.timeout;
  request.cache_dir = kbv::cache_dir();
  request.launch = worker_launch(zygote, &sandbox, early_zygote);
  size_t finished = 0;
  request.done = [&](const kbv::eval::CompileResult& r) {
    char seconds[32];
    std::snprintf(seconds, sizeof seconds, "%.1fs", r.seconds);
    std::cout << "[" << ++finished << "/" << request.candidates.size() << "] " << r.outcome << "  " << seconds << "  "
              << r.candidate << (r.published_before ? "  (built before)" : "") << std::endl;
    // Build calls in its source beyond its import's (harness.build_ahead): made, failed, or not
    // made here because their arguments exist only at run time (the evaluation builds those).
    for (const auto& failed : r.ahead.value("failed", nlohmann::json::array())) {
      std::cout << "    build at line " << failed.at("line") << " failed: " << failed.at("error").get<std::string>()
                << std::endl;
    }
    for (const auto& missed : r.ahead.value("missed", nlohmann::json::array())) {
      std::cout << "    build at line " << missed.at("line")
                << " not made ahead: " << missed.at("why").get<std::string>() << std::endl;
    }
  };
  const auto results = kbv::eval::compile_candidates(request);
  int failed = 0;
  for (const auto& r : results) failed += r.outcome != "ok";
  std::cout << (results.size() - failed) << " built, " << failed << " failed" << std::endl;
  return failed == 0 ? 0 : 3;
}

}  // namespace

int main(int argc, char** argv) {
  if (runs_workers(argc, argv)) openmp_threads_sleep_when_idle(argv);
  std::optional<kbv::process::Zygote::Starting> early_zygote = begin_zygote(argc, argv);
  CLI::App app{"kbv: verified evaluation of KernelBench kernel candidates"};
  app.require_subcommand(1);
  app.set_version_flag("--version", KBV_VERSION);

  std::string zygote = "auto";     // one subcommand runs: every --zygote option writes here
  SandboxOptions sandbox_options;  // the same for --sandbox and --limit
  EvalOptions eval;
  CLI::App* eval_cmd = app.add_subcommand("eval", "Evaluate one candidate against one problem");
  eval_cmd->add_option("problem", eval.problem, "KernelBench problem file (Model, get_inputs, get_init_inputs)")
      ->required()
      ->check(CLI::ExistingFile);
  eval_cmd->add_option("candidate", eval.candidate, "Candidate file (ModelNew)")->required()->check(CLI::ExistingFile);
  eval_cmd->add_option("--device", eval.device, "cpu or cuda")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  eval_cmd->add_option("--protocol", eval.protocol, "verified or kernelbench")
      ->check(CLI::IsMember({"verified", "kernelbench"}))
      ->capture_default_str();
  eval_cmd->add_option("--json", eval.json_path, "Write the record as JSON to this file");
  eval_cmd->add_option("--timeout", eval.timeout, "Seconds any one step of the candidate may take")
      ->capture_default_str();
  eval_cmd->add_option("--compile-timeout", eval.compile_timeout, "Seconds the candidate's import (and build) may take")
      ->capture_default_str();
  eval_cmd->add_flag("--paired", eval.paired,
                     "Time baseline and candidate in alternating rounds; the speedup is the median of the rounds' "
                     "ratios");
  eval_cmd->add_flag("--quiet", eval.quiet, "No progress lines on stderr");
  add_zygote_option(eval_cmd, zygote);
  add_sandbox_options(eval_cmd, sandbox_options);

  CompileOptions compile;
  CLI::App* compile_cmd = app.add_subcommand("compile", "Build candidates' kernels ahead of evaluation, in parallel");
  compile_cmd->add_option("candidates", compile.candidates, "Candidate files")->required()->check(CLI::ExistingFile);
  compile_cmd->add_option("--device", compile.device, "cpu or cuda")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  compile_cmd->add_option("-j,--jobs", compile.jobs, "Builds at a time")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  compile_cmd->add_option("--timeout", compile.timeout, "Seconds one build may take")->capture_default_str();
  add_zygote_option(compile_cmd, zygote);
  add_sandbox_options(compile_cmd, sandbox_options);

  kbv::cli::RunOptions run;
  CLI::App* run_cmd = kbv::cli::add_run_command(app, run);
  add_zygote_option(run_cmd, zygote);
  add_sandbox_options(run_cmd, sandbox_options);

  kbv::cli::ServeOptions serve;
  CLI::App* serve_cmd = kbv::cli::add_serve_command(app, serve);
  add_zygote_option(serve_cmd, zygote);
  add_sandbox_options(serve_cmd, sandbox_options);

  kbv::report::ReportOptions report;
  report.out_dir = "report";
  CLI::App* report_cmd =
      app.add_subcommand("report", "Write report.html, report.md and summary.json from a kbv run store");
  report_cmd->add_option("--db", report.db, "SQLite store written by kbv run")->required();
  report_cmd->add_option("--out", report.out_dir, "Folder for the three files (created if needed)")
      ->capture_default_str();
  report_cmd->add_flag(
      "--exclude-uncured", report.exclude_uncured,
      "Leave out candidates on problems whose audit found a defect the verified protocol does not cure");
  CLI::Option_group* rows = report_cmd->add_option_group("candidates", "Print records instead of writing the report");
  rows->add_flag(
      "--candidates", report.candidates,
      "Print one row per record (problem, candidate, protocol, verdict, speedup and CI, peak ratio, findings, "
      "reason) and write nothing");
  rows->add_option("--run", report.query.run, "With --candidates: only this run's records");
  rows->add_option("--verdict", report.query.verdict, "With --candidates: only records of this verdict")
      ->check(CLI::IsMember(std::vector<std::string>(kbv::report::kVerdicts.begin(), kbv::report::kVerdicts.end())));
  rows->add_option("--protocol", report.query.protocol, "With --candidates: only records under this protocol")
      ->check(CLI::IsMember({"verified", "kernelbench"}));
  rows->add_option("--device", report.query.device, "With --candidates: only records on this device")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  rows->add_flag("--json", report.json, "With --candidates: the rows as JSON");

  kbv::cli::AuditOptions audit;
  CLI::App* audit_cmd = kbv::cli::add_audit_command(app, audit);
  add_zygote_option(audit_cmd, zygote);

  std::string role, python, sandbox;  // the worker's own --sandbox: its spec, as JSON
  CLI::App* worker_cmd = app.add_subcommand("worker", "(internal) a reference, candidate or zygote worker process");
  worker_cmd->group("");  // hidden from help
  worker_cmd->add_option("--role", role)->required()->check(CLI::IsMember({"reference", "candidate", "zygote"}));
  worker_cmd->add_option("--python", python)->required();
  worker_cmd->add_option("--sandbox", sandbox);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    // --help and --version exit 0; every other parse or validation error is a usage error.
    return app.exit(error) == 0 ? 0 : 2;
  }
  try {
    if (*eval_cmd) return run_eval(eval, zygote, sandbox_options, early_zygote);
    if (*compile_cmd) return run_compile(compile, zygote, sandbox_options, early_zygote);
    if (*run_cmd) {
      // With --ray, each node's kbv serve runs the candidates as this command would have.
      run.ray_serve_args = {"--sandbox=" + sandbox_options.mode, "--zygote=" + zygote};
      for (const std::string& limit : sandbox_options.limits) run.ray_serve_args.push_back("--limit=" + limit);
      kbv::eval::WorkerLaunch launch = worker_launch(zygote, &sandbox_options, early_zygote);
      launch.hidden = {run.db, run.db + "-wal", run.db + "-shm", run.db + "-journal"};
      return kbv::cli::run_command(run, kbv::cache_dir(), launch);
    }
    if (*serve_cmd)
      return kbv::cli::serve_command(serve, kbv::cache_dir(), worker_launch(zygote, &sandbox_options, early_zygote));
    if (*report_cmd) return kbv::report::run_report(report);
    if (*audit_cmd) return kbv::cli::audit_command(audit, worker_launch(zygote, nullptr, early_zygote));
    if (*worker_cmd) {
      if (role == "zygote") return kbv::worker::run_zygote(python);
      return kbv::worker::run_worker(role == "reference" ? kbv::worker::Role::reference : kbv::worker::Role::candidate,
                                     python, sandbox);
    }
  } catch (const kbv::eval::EvalError& error) {
    std::cerr << "kbv: error: " << error.what() << "\n";
    return 1;
  } catch (const kbv::run::InputError& error) {
    std::cerr << "kbv: error: " << error.what() << "\n";
    return 1;
  } catch (const std::exception& error) {
    std::cerr << "kbv: internal error: " << error.what() << "\n";
    return 1;
  }
  return 0;
}
