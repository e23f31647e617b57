// `kbv serve`: its options on the command line, the HTTP server and the service behind it, and a
// graceful stop on SIGINT or SIGTERM (no new requests; every held one answered; a second signal
// stops at once).
#pragma once

#include <cstddef>
#include <string>

#include <CLI/CLI.hpp>

#include "kbv/eval/worker_client.h"

namespace kbv::cli {

struct ServeOptions {
  std::string host = "127.0.0.1", db = "serve.sqlite", files, problems, device = "cpu", gpus = "0";
  int port = 8470, jobs = 0;
  std::size_t queue = 64, warm = 4, connections = 256, max_body_mib = 64;
  double timeout = 120, compile_timeout = 1800;
};

CLI::App* add_serve_command(CLI::App& app, ServeOptions& options);

// Exit 0 after a graceful stop.
int serve_command(const ServeOptions& options, const std::string& cache_dir, eval::WorkerLaunch launch);

}  // namespace kbv::cli
