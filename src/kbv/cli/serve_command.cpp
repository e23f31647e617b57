#include "kbv/cli/serve_command.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <thread>

#include "kbv/cli/list_option.h"
#include "kbv/serve/api.h"
#include "kbv/serve/http_server.h"
#include "kbv/serve/service.h"
#include "kbv/store/store.h"

namespace kbv::cli {
namespace {

namespace fs = std::filesystem;

int signal_pipe[2] = {-1, -1};  // the handler writes the signal's number; a thread acts on it

void on_signal(int number) {
  const char byte = static_cast<char>(number);
  [[maybe_unused]] const ssize_t n = ::write(signal_pipe[1], &byte, 1);
}

}  // namespace

CLI::App* add_serve_command(CLI::App& app, ServeOptions& o) {
  CLI::App* cmd =
      app.add_subcommand("serve", "Evaluate candidates sent over HTTP/JSON, one long-running evaluator (RL rewards)");
  cmd->footer(
      "API (docs/serve.md): POST /evaluate {problem | problem_source [problem_name, level], candidate_source,\n"
      "[protocol, run, sample]} answers kbv eval's record; GET /health; GET /metrics. Full: 503 with Retry-After.\n"
      "Problems are trusted input (their code runs unsandboxed, as in kbv eval): listen where only your clients "
      "reach,\n"
      "or take problems from one folder only (--problems).\n"
      "SIGINT or SIGTERM: no new requests, every held one answered, then exit; a second signal exits at once.");
  cmd->add_option("--host", o.host, "Address to listen on")->capture_default_str();
  cmd->add_option("--port", o.port, "Port to listen on (0: any free one, printed)")
      ->check(CLI::Range(0, 65535))
      ->capture_default_str();
  cmd->add_option("--db", o.db, "SQLite store every record goes to (created if missing)")->capture_default_str();
  cmd->add_option("--files", o.files, "Folder for the requests' sources (default: the store's path with .files)");
  cmd->add_option("--problems", o.problems,
                  "Take only problem files under this folder, by path, and no problem text: what a problem runs, "
                  "unsandboxed, is then the folder's")
      ->check(CLI::ExistingDirectory);
  cmd->add_option("--device", o.device, "cpu or cuda")->check(CLI::IsMember({"cpu", "cuda"}))->capture_default_str();
  cmd->add_option("--gpus", o.gpus, "Comma-separated GPU indices, one evaluation lane each (cuda)")
      ->capture_default_str();
  cmd->add_option("--queue", o.queue, "Requests held beyond those being evaluated; past it: busy")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--warm", o.warm, "Problems per lane whose reference worker and baseline stay warm")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--connections", o.connections, "Open connections at a time; past it: 503")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--max-body", o.max_body_mib, "Largest request body, MiB")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("-j,--jobs", o.jobs,
                  "cuda: candidate builds at a time, ahead of the lanes (0: the cores less two per lane)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--timeout", o.timeout, "Seconds any one step of a candidate may take")->capture_default_str();
  cmd->add_option("--compile-timeout", o.compile_timeout, "Seconds one candidate's build may take")
      ->capture_default_str();
  return cmd;
}

int serve_command(const ServeOptions& o, const std::string& cache_dir, eval::WorkerLaunch launch) {
  serve::ServiceConfig config;
  config.device = o.device;
  config.gpus = split_list(o.gpus);
  if (config.gpus.empty()) {
    std::cerr << "kbv serve: --gpus needs at least one entry\n";
    return 2;
  }
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  config.compile_jobs = o.jobs > 0 ? o.jobs : std::max(1, cores - 2 * static_cast<int>(config.gpus.size()));
  config.queue_capacity = o.queue;
  config.warm_problems = o.warm;
  config.timeout_seconds = o.timeout;
  config.compile_timeout_seconds = o.compile_timeout;
  config.cache_dir = cache_dir;
  const std::string files = fs::absolute(o.files.empty() ? o.db + ".files" : o.files).lexically_normal().string();
  fs::create_directories(files);
  // A candidate sees its own file only: not the store, not the other requests' sources.
  launch.hidden = {o.db, o.db + "-wal", o.db + "-shm", o.db + "-journal", files};
  config.launch = launch;

  store::Store store(o.db);
  serve::Service service(config, store);
  serve::Api api(service, {files, o.problems.empty() ? "" : fs::absolute(o.problems).lexically_normal().string()});
  std::unique_ptr<serve::HttpServer> listening;
  try {
    listening = std::make_unique<serve::HttpServer>(o.host, o.port, std::ref(api), o.connections, o.max_body_mib << 20);
  } catch (const std::runtime_error& error) {
    std::cerr << "kbv serve: " << error.what() << "\n";
    return 1;
  }
  serve::HttpServer& server = *listening;

  if (::pipe2(signal_pipe, O_CLOEXEC) != 0) throw std::runtime_error("kbv serve: cannot make the signal pipe");
  struct sigaction action {};
  action.sa_handler = on_signal;
  sigemptyset(&action.sa_mask);
  struct sigaction old_int {
  }, old_term{};
  sigaction(SIGINT, &action, &old_int);
  sigaction(SIGTERM, &action, &old_term);
  std::thread stopper;
  std::thread watcher([&] {
    for (int signals = 0;;) {
      char byte = 0;
      if (::read(signal_pipe[0], &byte, 1) != 1 || byte == 0) return;  // 0: serve() returned
      if (++signals > 1) {
        std::cerr << "kbv serve: stopping at once" << std::endl;
        std::_Exit(1);
      }
      std::cerr << "kbv serve: stopping: no new requests; answering the "
                << service.metrics()["queue"]["depth"].get<std::size_t>()
                << " waiting and those being evaluated (signal again to stop at once)" << std::endl;
      stopper = std::thread([&] {
        service.shutdown();
        server.stop();
      });
    }
  });

  std::cout << "kbv serve: listening on http://" << o.host << ":" << server.port() << " (device " << o.device << ", "
            << (o.device == "cuda" ? config.gpus.size() : 1) << " lane(s), queue " << o.queue << ", store " << o.db
            << ")" << std::endl;
  server.serve();
  const char done = 0;
  [[maybe_unused]] const ssize_t n = ::write(signal_pipe[1], &done, 1);
  watcher.join();  // after it, `stopper` is what the watcher left there
  if (stopper.joinable()) stopper.join();
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);
  const auto metrics = service.metrics();
  std::cout << "kbv serve: stopped after " << metrics["evaluations"]["done"] << " evaluations ("
            << metrics["evaluations"]["failed"] << " could not be carried out, "
            << metrics["evaluations"]["refused_busy"] << " refused as busy)" << std::endl;
  return 0;
}

}  // namespace kbv::cli
