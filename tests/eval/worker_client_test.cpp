// The parent's client of a real worker (the kbv binary, started afresh): a posted command runs
// while the caller is elsewhere, and what its reply (or its absence) says reaches the next request.
#include "kbv/eval/worker_client.h"

#include <gtest/gtest.h>

#include <chrono>

#include <fcntl.h>

#include <ATen/ATen.h>

#include "kbv/check/comparison.h"
#include "kbv/ipc/commands.h"
#include "kbv/ipc/shared_region.h"
#include "kbv/ipc/tensor_codec.h"
#include "kbv/protocol/protocol.h"

namespace kbv::eval {
namespace {

using namespace std::chrono_literals;
namespace commands = ipc::commands;
using ipc::commands::message;

WorkerLaunch launch() { return {.executable = KBV_BINARY, .python = KBV_PYTHON}; }

TEST(WorkerClient, APostedCommandIsAnsweredBeforeTheNextRequest) {
  WorkerClient worker("candidate", launch());
  worker.post(message(commands::Device{"cpu", nullptr}), 60s);
  const Reply reply = worker.request(message(commands::Device{"cpu", nullptr}), 60s);
  EXPECT_EQ(reply.header.value("status", ""), "ok");
  worker.settle();  // nothing posted: returns at once
  worker.shutdown();
}

TEST(WorkerClient, APostedFailureIsThrownByTheNextRequestOnly) {
  WorkerClient worker("candidate", launch());
  worker.post(message(commands::Device{"tpu", nullptr}), 60s);
  EXPECT_NO_THROW(worker.settle());
  try {
    worker.request(message(commands::Device{"cpu", nullptr}), 60s);
    ADD_FAILURE() << "the posted command's failure was lost";
  } catch (const WorkerFailed& failed) {
    EXPECT_EQ(failed.kind, kbv::ipc::FailureKind::internal);
    EXPECT_NE(std::string(failed.what()).find("tpu"), std::string::npos) << failed.what();
  }
  // Thrown once: the worker itself is fine and answers the next request.
  EXPECT_EQ(worker.request(message(commands::Device{"cpu", nullptr}), 60s).header.value("status", ""), "ok");
  worker.shutdown();
}

TEST(WorkerClient, APostedCommandPastItsDeadlineLosesTheWorkerAtTheNextRequest) {
  WorkerClient worker("candidate", launch());
  worker.post(message(commands::Device{"cpu", nullptr}), 1ms);  // the interpreter takes far longer to start
  worker.settle();
  try {
    worker.request(message(commands::Device{"cpu", nullptr}), 60s);
    ADD_FAILURE() << "the posted command's timeout was lost";
  } catch (const WorkerLost& lost) {
    EXPECT_EQ(lost.kind, "timeout");
    EXPECT_NE(std::string(lost.what()).find("'device'"), std::string::npos) << lost.what();
  }
  worker.shutdown();  // already reaped: nothing left to do
}

// The kernels a worker loads ahead (the `device` command with a protocol) change nothing it
// measures or computes: the candidate's footprint, the inputs drawn, the outputs.
TEST(WorkerClient, KernelsLoadedAheadChangeNoFootprintDrawOrOutput) {
  const nlohmann::json protocol = protocol::to_json(protocol::preset("verified"));
  const std::string data = KBV_TEST_DATA_DIR;
  const nlohmann::json load = message(
      commands::Load{data + "/problem_cyclic_model.py", data + "/candidate_plain_linear.py", "cpu", protocol, nullptr});
  const nlohmann::json check = message(commands::Check{
      {{"family", "heavy"},
       {"params", {{"kind", "laplace"}, {"scale", 2.0}, {"outlier_fraction", 1e-3}, {"outlier_scale", 50.0}}},
       {"seed", 7}},
      {"candidate"},
      false});
  std::vector<Reply> loads, checks;
  for (const bool warmed : {false, true}) {
    WorkerClient worker("candidate", launch());
    worker.post(message(commands::Device{"cpu", warmed ? protocol : nlohmann::json()}), 60s);
    loads.push_back(worker.request(load, 60s));
    checks.push_back(worker.request(check, 60s));
    worker.shutdown();
  }
  EXPECT_GT(loads[0].header.at("footprint_bytes").get<std::int64_t>(), 0);
  EXPECT_EQ(loads[0].header.at("footprint_bytes"), loads[1].header.at("footprint_bytes"));
  EXPECT_EQ(checks[0].header.at("checksum"), checks[1].header.at("checksum"));
  ASSERT_EQ(checks[0].tensors.size(), 1u);
  ASSERT_EQ(checks[1].tensors.size(), 1u);
  EXPECT_TRUE(at::equal(checks[0].tensors[0], checks[1].tensors[0]));
}

// The reference's worker measures its first mode's outputs where they lie (finiteness, RMS, size)
// and sends none of them; a candidate's outputs handed to it, as blobs or in the candidate's output
// region (whose file comes with the command), are compared there as the host compares them.
TEST(WorkerClient, TheReferencesWorkerComparesOutputsAsTheHostDoes) {
  const protocol::Protocol verified = protocol::preset("verified");
  WorkerClient worker("reference", launch());
  worker.request(message(commands::Load{std::string(KBV_EXAMPLES_DIR) + "/problems/1_ReLU.py", "", "cpu",
                                        protocol::to_json(verified), nullptr}),
                 60s);
  const nlohmann::json draw = {{"family", "normal"}, {"params", {{"std", 2.0}}}, {"seed", 3}};
  const Reply measured = worker.request(message(commands::Check{draw, {"reference", "baseline"}, true}), 60s);
  const nlohmann::json& first = measured.header.at("results").at(0);
  EXPECT_TRUE(measured.tensors.empty());
  EXPECT_EQ(first.at("output_bytes"), 1 << 20);  // 16 x 16384 float32: from the region's threshold up
  EXPECT_EQ(first.at("all_finite"), true);
  const std::vector<double> rms = first.at("rms");
  EXPECT_FALSE(measured.header.at("results").at(1).contains("rms"));  // a later mode has its error only

  const at::Tensor r = worker.request(message(commands::Check{draw, {"reference"}, false}), 60s).tensors.at(0);
  ASSERT_EQ(rms.size(), 1u);
  EXPECT_DOUBLE_EQ(rms[0], check::finite_rms(r));

  const std::shared_ptr<ipc::SharedRegion> region = ipc::SharedRegion::create();  // as a candidate's
  const std::unique_ptr<ipc::SharedRegion> candidate_side =
      ipc::SharedRegion::open_inherited(fcntl(region->fd(), F_DUPFD_CLOEXEC, 0));
  ASSERT_NE(candidate_side, nullptr);
  for (const at::Tensor& x : {r.clone(), r + 1e-3 * at::randn_like(r), at::zeros_like(r), r.reshape({-1})}) {
    for (const bool scaled : {true, false}) {
      const check::OutputComparison host = check::compare_outputs({x}, {r}, rms, scaled, verified.atol, verified.rtol);
      nlohmann::json command =
          message(commands::Compare{draw, rms, scaled, verified.atol, verified.rtol, nlohmann::json::array()});
      Attachments as_blob;
      as_blob.tensors.push_back(ipc::encode(x));
      command["outputs"] = {as_blob.tensors.back().meta};
      const auto by_blob =
          check::comparison_from_json(worker.request(command, 60s, Outputs::owned, as_blob).header.at("comparison"));
      candidate_side->begin_command();
      nlohmann::json placed = *candidate_side->place(x);
      placed["file"] = 0;
      command["outputs"] = {placed};
      const auto by_region = check::comparison_from_json(
          worker.request(command, 60s, Outputs::owned, {.files = {region->fd()}}).header.at("comparison"));
      for (const check::OutputComparison& there : {by_blob, by_region}) {
        EXPECT_EQ(there.mismatch, host.mismatch);
        EXPECT_DOUBLE_EQ(there.error, host.error);
        EXPECT_EQ(there.allclose, host.allclose);
      }
    }
  }
  worker.shutdown();
}

}  // namespace
}  // namespace kbv::eval
