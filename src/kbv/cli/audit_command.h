// `kbv audit`: its options on the command line and the table it prints.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "kbv/eval/worker_client.h"

namespace kbv::cli {

struct AuditOptions {
  std::string problems, device = "cpu", json_path;
  double memory_share = 0.25, timeout = 120;
  int jobs = 1;
};

CLI::App* add_audit_command(CLI::App& app, AuditOptions& options);

// Exit 0 when every problem was audited (whatever it shows), 1 when some could not be.
int audit_command(const AuditOptions& options, const eval::WorkerLaunch& launch);

}  // namespace kbv::cli
