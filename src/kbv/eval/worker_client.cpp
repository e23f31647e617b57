#include "kbv/eval/worker_client.h"

#include <algorithm>
#include <iostream>
#include <mutex>
#include <random>
#include <span>
#include <system_error>

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "kbv/common/proc_stat.h"
#include "kbv/common/syscall.h"
#include "kbv/ipc/commands.h"
#include "kbv/ipc/fd_passing.h"
#include "kbv/ipc/tensor_codec.h"
#include "kbv/ipc/worker_fds.h"
#include "kbv/sandbox/enter.h"
#include "kbv/sandbox/explain.h"

namespace kbv::eval {

namespace {

std::shared_ptr<const ipc::SharedRegion> make_region() {
  try {
    return ipc::SharedRegion::create();
  } catch (const std::exception& failed) {
    static std::once_flag said;
    std::call_once(said, [&] {
      std::cerr << "kbv: no shared output region (" << failed.what() << "); outputs go through the pipes\n";
    });
    return nullptr;
  }
}

// The worker gets `inherited` from kInheritedFd on: its output region, its file socket.
process::WorkerProcess start_worker(const std::string& role, const WorkerLaunch& launch, std::span<const int> inherited,
                                    const sandbox::Spec* sandbox) {
  const nlohmann::json spec = sandbox ? sandbox::to_json(*sandbox) : nlohmann::json();
  if (launch.zygote) {
    try {
      return launch.zygote->spawn(role, launch.environment, std::chrono::seconds(60), inherited, spec);
    } catch (const process::ZygoteFailed& failed) {
      // The worker is still owed: started afresh, slower. Said once, the rest of the run alike.
      static std::once_flag said;
      std::call_once(said, [&] { std::cerr << "kbv: " << failed.what() << "; starting workers afresh\n"; });
    }
  }
  std::vector<std::string> argv = {launch.executable, "worker", "--role", role, "--python", launch.python};
  if (sandbox) argv.insert(argv.end(), {"--sandbox", spec.dump()});
  return process::WorkerProcess::start(argv, launch.environment, 64 * 1024, inherited,
                                       sandbox ? sandbox::namespace_flags() : 0);
}

std::uint64_t draw_nonce() {
  thread_local std::mt19937_64 generator{(std::uint64_t{std::random_device{}()} << 32) | std::random_device{}()};
  return generator();
}

// Appends what the sandbox had to do with a failure, where it had anything.
std::string with_note(std::string text, const std::string& note) {
  return note.empty() ? text : text + " (" + note + ")";
}

// Starts the worker with its output region (`region_fd`, -1 for none), one end of a socket pair
// for open files (ipc/fd_passing.h) as its kFileSocketFd (the other end goes to `ours`) and, in
// a sandbox, its build folder's mount (-1 for none) as its kBuildFolderFd.
process::WorkerProcess start_with_file_socket(const std::string& role, const WorkerLaunch& launch,
                                              const sandbox::Spec* sandbox, int region_fd, int build_folder,
                                              ipc::UniqueFd& ours) {
  int pair[2];
  KBV_SYSCALL(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair));
  ours.reset(pair[0]);
  const ipc::UniqueFd theirs(pair[1]);  // closed on return: the worker holds the only other end
  // Without a region, /dev/null in its place: not a region to the worker, and a file to hand over.
  const ipc::UniqueFd no_region(region_fd < 0 ? KBV_SYSCALL(open("/dev/null", O_RDONLY | O_CLOEXEC)) : -1);
  const int inherited[] = {region_fd < 0 ? no_region.get() : region_fd, theirs.get(), build_folder};
  std::optional<sandbox::Spec> spec;
  if (sandbox) {
    spec = *sandbox;
    spec->build_folder_fd = build_folder >= 0 ? ipc::kBuildFolderFd : -1;
    if (build_folder < 0) spec->build_folder.clear();
  }
  return start_worker(role, launch, std::span(inherited, build_folder >= 0 && sandbox ? 3 : 2),
                      spec ? &*spec : nullptr);
}

}  // namespace

WorkerClient::WorkerClient(const std::string& role, const WorkerLaunch& launch, const sandbox::Spec* sandbox,
                           int build_folder)
    : region_(make_region()),
      sandbox_limits_(sandbox ? std::optional(sandbox->limits) : std::nullopt),
      cgroup_(sandbox ? sandbox::Cgroup::create(sandbox->limits, cgroup_missing_) : nullptr),
      process_(start_with_file_socket(role, launch, sandbox, region_fd(), build_folder, file_socket_)) {
  // Before any command: no candidate code runs until the worker is sent one.
  if (cgroup_) cgroup_->add(process_.pid());
}

nlohmann::json WorkerClient::containment() const {
  if (!sandbox_limits_) return nullptr;
  return cgroup_ ? nlohmann::json{{"cgroup", cgroup_->version()}}
                 : nlohmann::json{{"cgroup", nullptr}, {"cgroup_missing", cgroup_missing_}};
}

std::optional<CpuReading> WorkerClient::cpu_time() const {
  if (cgroup_) {
    if (const std::optional<double> seconds = cgroup_->cpu_seconds())
      return CpuReading{*seconds, std::string("cgroup ") + cgroup_->version()};
  }
  const std::optional<ProcStat> stat = ProcStat::read(std::to_string(process_.pid()));
  if (!stat) return std::nullopt;
  double ticks = 0;
  for (int field = 14; field <= 17; ++field) {  // proc(5): utime, stime, cutime, cstime
    const std::optional<unsigned long long> value = stat->field(field);
    if (!value) return std::nullopt;
    ticks += static_cast<double>(*value);
  }
  return CpuReading{ticks / static_cast<double>(sysconf(_SC_CLK_TCK)), "process"};
}

Reply WorkerClient::request(const nlohmann::json& sent, std::chrono::duration<double> timeout, Outputs outputs,
                            const Attachments& attachments) {
  settle();
  posted_reply_.reset();
  if (posted_failure_) std::rethrow_exception(std::exchange(posted_failure_, nullptr));
  return await(send(sent, timeout, attachments), outputs);
}

void WorkerClient::post(const nlohmann::json& command, std::chrono::duration<double> timeout) {
  settle();
  posted_ = send(command, timeout);
}

void WorkerClient::settle() {
  if (!posted_) return;
  const Posted posted = *std::exchange(posted_, std::nullopt);
  try {
    posted_reply_ = await(posted, Outputs::owned);
  } catch (...) {
    if (!posted_failure_) posted_failure_ = std::current_exception();
  }
}

Reply WorkerClient::collect() {
  settle();
  if (posted_failure_) std::rethrow_exception(std::exchange(posted_failure_, nullptr));
  if (!posted_reply_) throw std::logic_error("collect: no command was posted");
  return std::move(*std::exchange(posted_reply_, std::nullopt));
}

WorkerClient::Posted WorkerClient::send(const nlohmann::json& command, std::chrono::duration<double> timeout,
                                        const Attachments& attachments) {
  Posted posted{
      command.value("cmd", "?"),
      std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(timeout),
      timeout, draw_nonce()};
  nlohmann::json sent = command;
  sent[ipc::kNonceField] = posted.nonce;
  std::vector<ipc::Bytes> blobs;
  for (const ipc::EncodedTensor& t : attachments.tensors) blobs.push_back(t.bytes());
  if (!attachments.files.empty()) {
    sent["files"] = attachments.files.size();
    // Before the command, so the files are there when the worker reads it (the datagram waits in
    // the socket's buffer; a worker gone by now is found by await()).
    try {
      ipc::send_fds(file_socket_.get(), "files", attachments.files);
    } catch (const std::system_error&) {
    }
  }
  try {
    process_.send(sent, blobs, posted.deadline);
  } catch (const ipc::ChannelClosed&) {
    // await() finds the channel closed (or the deadline passed) too, and says how the worker ended.
  } catch (const process::ChannelTimeout&) {
  }
  return posted;
}

process::Received WorkerClient::receive(std::chrono::steady_clock::time_point deadline) {
  const bool counted = cgroup_ && sandbox_limits_->cpu_seconds > 0;
  for (;;) {
    const auto tick = counted ? std::min(deadline, std::chrono::steady_clock::now() + kCpuLimitTick) : deadline;
    process::Received received = process_.receive(tick);
    if (received.status != process::Received::Status::timeout || tick == deadline) return received;
    const std::optional<double> used = cgroup_->cpu_seconds();
    if (used && *used >= static_cast<double>(sandbox_limits_->cpu_seconds)) {
      cpu_limit_reached_ = true;
      received.status = process::Received::Status::closed;
      return received;
    }
  }
}

Reply WorkerClient::await(const Posted& posted, Outputs outputs) {
  const std::string& what = posted.what;
  process::Received received;
  try {
    received = receive(posted.deadline);
  } catch (const ipc::ChannelClosed&) {
    received.status = process::Received::Status::closed;
  } catch (const process::ChannelTimeout&) {
    received.status = process::Received::Status::timeout;
  }
  using Status = process::Received::Status;
  if (received.status != Status::message) {
    running_ = false;
    if (received.status == Status::timeout) {
      process_.kill();
      process_.wait();
      throw WorkerLost("timeout",
                       "no answer to '" + what + "' within " + std::to_string(posted.timeout.count()) + " s");
    }
    process_.kill();  // a malformed reply means the channel cannot be trusted any more
    const process::ExitStatus status = process_.wait();
    if (sandbox_limits_ && !answered_ && !status.signaled && status.code == sandbox::kSetupFailedExit) {
      throw WorkerLost("sandbox", "the candidate's sandbox could not be set up: " + process_.log_tail());
    }
    std::string note = cpu_limit_reached_ ? sandbox::explain_cgroup_cpu(*sandbox_limits_)
                       : sandbox_limits_
                           ? sandbox::explain_exit(status.signaled, status.code, status.cpu_seconds, *sandbox_limits_)
                           : "";
    if (note.empty() && cgroup_ && cgroup_->oom_kills() > 0) note = sandbox::explain_cgroup_memory(*sandbox_limits_);
    throw WorkerLost("crash", with_note("worker process " + status.describe() + " during '" + what + "'" +
                                            (received.error.empty() ? "" : " (" + received.error + ")"),
                                        note));
  }
  Reply reply;
  reply.header = std::move(received.message.header);
  if (reply.header.value(ipc::kNonceField, nlohmann::json()) != nlohmann::json(posted.nonce)) {
    running_ = false;
    process_.kill();
    process_.wait();
    reply.header.erase(ipc::kNonceField);
    throw WorkerLost("forged_reply", "a reply to '" + what +
                                         "' that answers no command kbv sent (the result channel "
                                         "was written by other code than the worker's): " +
                                         reply.header.dump().substr(0, 300));
  }
  answered_ = true;
  if (reply.header.value("status", "") == "error") {
    std::string message = reply.header.value("message", "");
    if (sandbox_limits_) message = with_note(message, sandbox::explain_error(message, *sandbox_limits_));
    ipc::FailureKind kind = ipc::FailureKind::internal;
    try {
      kind = ipc::failure_kind(reply.header.value("kind", ""));
    } catch (const std::invalid_argument& unknown) {
      // kbv's worker names only its own kinds: other code wrote this reply.
      process_.kill();
      process_.wait();
      throw WorkerLost("forged_reply",
                       "a reply to '" + what + "' that " + unknown.what() + ": " + message.substr(0, 300));
    }
    throw WorkerFailed(kind, message);
  }
  // Every blob is a tensor; their descriptions are in the header, in order, wherever they sit.
  std::vector<nlohmann::json> metas;
  auto collect = [&](const nlohmann::json& outputs) {
    for (const auto& meta : outputs) metas.push_back(meta);
  };
  if (reply.header.contains("outputs")) collect(reply.header["outputs"]);
  if (reply.header.contains("results")) {
    for (const auto& result : reply.header["results"]) {
      if (result.contains("outputs")) collect(result["outputs"]);
    }
  }
  // A description with "region" is a view into the output region, one with "device" names a file
  // sent on the file socket before the reply; every other one takes the next blob.
  auto& blobs = received.message.blobs;
  const auto count = [&](const char* key) {
    return static_cast<size_t>(
        std::count_if(metas.begin(), metas.end(), [&](const nlohmann::json& m) { return m.contains(key); }));
  };
  const size_t in_region = count("region"), on_device = count("device");
  if (metas.size() - in_region - on_device != blobs.size() || (in_region > 0 && !region_)) {
    throw WorkerFailed(ipc::FailureKind::internal, "reply to '" + what + "' describes " + std::to_string(metas.size()) +
                                                       " tensors (" + std::to_string(in_region) + " in a region, " +
                                                       std::to_string(on_device) + " on the device) but carries " +
                                                       std::to_string(blobs.size()) + " blobs");
  }
  while (reply.files.size() < on_device) {
    ipc::PassedFds passed =
        ipc::receive_fds(file_socket_.get(), std::chrono::steady_clock::now() + std::chrono::seconds(5));
    if (passed.status != ipc::PassedFds::Status::message) {
      throw WorkerFailed(ipc::FailureKind::internal, "reply to '" + what + "' describes " + std::to_string(on_device) +
                                                         " outputs on the device, and " +
                                                         std::to_string(reply.files.size()) + " came");
    }
    for (ipc::UniqueFd& fd : passed.fds) reply.files.push_back(std::move(fd));
  }
  size_t blob = 0;
  for (const nlohmann::json& meta : metas) {
    if (meta.contains("device")) {
      reply.tensors.emplace_back();
      continue;
    }
    if (!meta.contains("region")) {
      reply.tensors.push_back(ipc::decode(meta, std::move(blobs[blob++])));
      continue;
    }
    try {
      at::Tensor view = ipc::SharedRegion::view(region_, meta);
      reply.tensors.push_back(outputs == Outputs::owned ? view.clone() : view);
    } catch (const std::runtime_error& bad) {
      throw WorkerFailed(ipc::FailureKind::internal, "reply to '" + what + "': " + bad.what());
    }
  }
  return reply;
}

void WorkerClient::begin_shutdown() {
  settle();
  if (!running_) return;
  running_ = false;
  try {
    process_.send(ipc::commands::message(ipc::commands::Exit{}), {},
                  std::chrono::steady_clock::now() + std::chrono::seconds(5));
    process_.receive(std::chrono::steady_clock::now() + std::chrono::seconds(5));
  } catch (const std::exception&) {
    // Already gone: reaped by shutdown() either way.
  }
  process_.kill();
}

void WorkerClient::shutdown() {
  begin_shutdown();
  process_.wait();
}

}  // namespace kbv::eval
