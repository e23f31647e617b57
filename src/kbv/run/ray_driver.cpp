#include "kbv/run/ray_driver.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <stdexcept>

namespace kbv::run {

void evaluate_on_ray(const RayLaunch& launch, const std::vector<RayRequest>& requests, const std::string& scratch_dir,
                     const std::function<void(const nlohmann::json& line)>& on_line) {
  const std::string file = scratch_dir + "/kbv-ray-requests-" + std::to_string(getpid()) + ".jsonl";
  {
    std::ofstream out(file);
    for (const RayRequest& r : requests) out << nlohmann::json{{"key", r.key}, {"request", r.body}}.dump() << "\n";
    if (!out.flush()) throw std::runtime_error("cannot write " + file);
  }
  std::vector<std::string> args = {launch.python,
                                   "-m",
                                   "kbv_client.ray_run",
                                   "--address",
                                   launch.address,
                                   "--binary",
                                   launch.binary,
                                   "--requests",
                                   file,
                                   "--gpus-per-node",
                                   std::to_string(launch.gpus_per_node)};
  for (const std::string& a : launch.serve_args) args.insert(args.end(), {"--serve-arg=" + a});
  int out[2];
  if (pipe2(out, O_CLOEXEC) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  const pid_t pid = fork();
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGTERM);  // kbv run gone: its driver, and with it the cluster's kbv serves
    dup2(out[1], STDOUT_FILENO);
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execvp(argv[0], argv.data());
    std::fprintf(stderr, "kbv run --ray: cannot start %s: %s\n", argv[0], std::strerror(errno));
    _exit(127);
  }
  close(out[1]);
  if (pid < 0) {
    close(out[0]);
    throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  }
  FILE* lines = fdopen(out[0], "r");
  char* text = nullptr;
  size_t capacity = 0;
  std::exception_ptr failure;
  for (ssize_t n; (n = getline(&text, &capacity, lines)) > 0;) {
    // Only the driver's own lines: anything else a library printed is passed over.
    const nlohmann::json line = nlohmann::json::parse(std::string(text, n), nullptr, false);
    if (!line.is_object() || !(line.contains("key") || line.contains("lanes"))) continue;
    try {
      on_line(line);
    } catch (...) {
      if (!failure) failure = std::current_exception();
    }
  }
  free(text);
  fclose(lines);
  int status = 0;
  waitpid(pid, &status, 0);
  unlink(file.c_str());
  if (failure) std::rethrow_exception(failure);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    throw RayDriverFailed("the Ray driver (" + launch.python + " -m kbv_client.ray_run) ended with status " +
                          std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status)));
  }
}

}  // namespace kbv::run
