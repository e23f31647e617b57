#include "kbv/cli/audit_command.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <tuple>

#include "kbv/audit/auditor.h"
#include "kbv/run/discovery.h"

namespace kbv::cli {
namespace {

std::string label(const store::ProblemInfo& p) {
  std::string name = (p.number ? std::to_string(*p.number) + "_" : "") + p.name;
  return p.level ? "level" + std::to_string(*p.level) + "/" + name : name;
}

std::string shorten(const std::string& text, size_t width) {
  return text.size() <= width ? text : text.substr(0, width - 3) + "...";
}

// Written whole to a side file and renamed over the path, so a reader (or an audit stopped part
// way) always finds a complete array.
void write_json(const std::string& path, const nlohmann::json& audits) {
  const std::string part = path + ".part";
  {
    std::ofstream file(part);
    file << audits.dump(2) << "\n";
    if (!file) throw std::runtime_error("cannot write " + part);
  }
  std::filesystem::rename(part, path);
}

}  // namespace

CLI::App* add_audit_command(CLI::App& app, AuditOptions& o) {
  CLI::App* cmd = app.add_subcommand("audit", "Find problems that cannot tell a correct kernel from a cheat");
  cmd->footer(
      "Findings: identity_under_inputs, near_zero_output, constant_output, unused_input, stochastic_reference,\n"
      "rounding_reference, low_sensitivity, out_of_domain_families, huge_memory; `cured` says whether the verified\n"
      "protocol's "
      "hidden families (or its refusal to score) take away what a cheat would gain. docs/audit.md says how each is "
      "decided.");
  cmd->add_option("--problems", o.problems,
                  "A problem file, or a folder of them (KernelBench's KernelBench/ or level folders, or any .py files)")
      ->required()
      ->check(CLI::ExistingPath);
  cmd->add_option("--device", o.device, "cpu or cuda")->check(CLI::IsMember({"cpu", "cuda"}))->capture_default_str();
  cmd->add_option("--json", o.json_path, "Write every problem's findings and raw facts as JSON to this file");
  cmd->add_option("--memory-share", o.memory_share,
                  "huge_memory: one draw's inputs and outputs above this share of the device")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  cmd->add_option("--timeout", o.timeout, "Seconds any one step of a reference may take")->capture_default_str();
  cmd->add_option("-j,--jobs", o.jobs,
                  "Problems audited at once, each in its own reference worker (they share the device's memory: one "
                  "that runs out of it is audited again by itself at the end)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  return cmd;
}

int audit_command(const AuditOptions& o, const eval::WorkerLaunch& launch) {
  audit::AuditRequest request;
  try {
    request.problems = run::find_problems(o.problems);
  } catch (const std::runtime_error& error) {
    std::cerr << "kbv audit: " << error.what() << "\n";
    return 1;
  }
  std::sort(request.problems.begin(), request.problems.end(), [](const auto& a, const auto& b) {
    return std::tuple(a.level.value_or(0), a.number.value_or(0), a.path) <
           std::tuple(b.level.value_or(0), b.number.value_or(0), b.path);
  });
  if (request.problems.empty()) {
    std::cerr << "kbv audit: no problem files (.py) under " << o.problems << "\n";
    return 1;
  }
  request.device = o.device;
  request.memory_share = o.memory_share;
  request.timeout_seconds = o.timeout;
  request.jobs = o.jobs;
  request.launch = launch;
  const bool terminal = isatty(STDERR_FILENO);
  nlohmann::json finished = nlohmann::json::array();  // as they finish: --json holds them while the rest run
  request.done = [&](const audit::ProblemAudit& a) {
    finished.push_back(audit::to_json(a));
    if (!o.json_path.empty()) write_json(o.json_path, finished);
    std::fprintf(stderr, terminal ? "\r\033[Kkbv audit: [%zu/%zu] %s %.1fs%s" : "kbv audit: [%zu/%zu] %s %.1fs%s\n",
                 finished.size(), request.problems.size(), label(a.problem).c_str(), a.seconds,
                 a.retried_alone ? " (again by itself: out of memory beside the others)" : "");
  };
  std::cerr << "kbv audit: " << request.problems.size() << " problems on " << o.device << "\n";
  const std::vector<audit::ProblemAudit> audits = audit::audit_problems(request);
  if (terminal) std::cerr << "\n";

  std::printf("%-32s %-24s %-7s %s\n", "problem", "finding", "cured", "evidence");
  size_t failed = 0, defective = 0, uncured = 0;
  for (const audit::ProblemAudit& a : audits) {
    const std::string name = shorten(label(a.problem), 32);
    if (!a.error.empty()) {
      ++failed;
      std::printf("%-32s %-24s %-7s %s\n", name.c_str(), "(not audited)", "", shorten(a.error, 100).c_str());
      continue;
    }
    if (a.findings.empty()) std::printf("%-32s %-24s\n", name.c_str(), "clean");
    defective += !a.findings.empty();
    bool open = false;
    for (const audit::AuditFinding& f : a.findings) {
      open = open || !f.cured;
      std::printf("%-32s %-24s %-7s %s\n", name.c_str(), f.id.c_str(), f.cured ? "yes" : "NO",
                  shorten(f.evidence.dump(), 100).c_str());
    }
    uncured += open;
  }
  std::printf(
      "%zu problems: %zu clean, %zu with findings (%zu with one the verified protocol does not cure), %zu not "
      "audited\n",
      audits.size(), audits.size() - defective - failed, defective, uncured, failed);
  if (!o.json_path.empty()) {
    nlohmann::json out = nlohmann::json::array();
    for (const audit::ProblemAudit& a : audits) out.push_back(audit::to_json(a));
    write_json(o.json_path, out);  // in the problems' order
  }
  return failed ? 1 : 0;
}

}  // namespace kbv::cli
