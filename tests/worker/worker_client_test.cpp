// The parent's client of a real worker (the kbv binary, started afresh): a posted command runs
// while the caller is elsewhere, and what its reply (or its absence) says reaches the next request.
#include "kbv/eval/worker_client.h"

#include <gtest/gtest.h>

#include <chrono>

#include <ATen/ATen.h>

#include "kbv/check/comparison.h"
#include "kbv/protocol/protocol.h"

namespace kbv::eval {
namespace {

using namespace std::chrono_literals;

WorkerLaunch launch() { return {.executable = KBV_BINARY, .python = KBV_PYTHON}; }

TEST(WorkerClient, APostedCommandIsAnsweredBeforeTheNextRequest) {
  WorkerClient worker("candidate", launch());
  worker.post({{"cmd", "device"}, {"device", "cpu"}}, 60s);
  const Reply reply = worker.request({{"cmd", "device"}, {"device", "cpu"}}, 60s);
  EXPECT_EQ(reply.header.value("status", ""), "ok");
  worker.settle();  // nothing posted: returns at once
  worker.shutdown();
}

TEST(WorkerClient, APostedFailureIsThrownByTheNextRequestOnly) {
  WorkerClient worker("candidate", launch());
  worker.post({{"cmd", "device"}, {"device", "tpu"}}, 60s);
  EXPECT_NO_THROW(worker.settle());
  try {
    worker.request({{"cmd", "device"}, {"device", "cpu"}}, 60s);
    ADD_FAILURE() << "the posted command's failure was lost";
  } catch (const WorkerFailed& failed) {
    EXPECT_EQ(failed.kind, "internal");
    EXPECT_NE(std::string(failed.what()).find("tpu"), std::string::npos) << failed.what();
  }
  // Thrown once: the worker itself is fine and answers the next request.
  EXPECT_EQ(worker.request({{"cmd", "device"}, {"device", "cpu"}}, 60s).header.value("status", ""), "ok");
  worker.shutdown();
}

TEST(WorkerClient, APostedCommandPastItsDeadlineLosesTheWorkerAtTheNextRequest) {
  WorkerClient worker("candidate", launch());
  worker.post({{"cmd", "device"}, {"device", "cpu"}}, 1ms);  // the interpreter takes far longer to start
  worker.settle();
  try {
    worker.request({{"cmd", "device"}, {"device", "cpu"}}, 60s);
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
  const nlohmann::json load = {{"cmd", "load"},
                               {"problem", data + "/problem_cyclic_model.py"},
                               {"candidate", data + "/candidate_plain_linear.py"},
                               {"device", "cpu"},
                               {"protocol", protocol}};
  const nlohmann::json check = {{"cmd", "check"},
                                {"draw",
                                 {{"family", "heavy"},
                                  {"params", {{"kind", "laplace"}, {"scale", 2.0}, {"outlier_fraction", 1e-3}, {"outlier_scale", 50.0}}},
                                  {"seed", 7}}},
                                {"modes", {"candidate"}}};
  std::vector<Reply> loads, checks;
  for (const bool warmed : {false, true}) {
    WorkerClient worker("candidate", launch());
    nlohmann::json device = {{"cmd", "device"}, {"device", "cpu"}};
    if (warmed) device["protocol"] = protocol;
    worker.post(device, 60s);
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

// The reference worker's facts about its first mode's outputs, which the parent's tolerances
// use instead of passes of its own over the copies: the same finiteness and RMS.
TEST(WorkerClient, TheReferencesRmsAndFinitenessComeWithItsOutputs) {
  const nlohmann::json protocol = protocol::to_json(protocol::preset("verified"));
  WorkerClient worker("reference", launch());
  worker.request({{"cmd", "load"},
                  {"problem", std::string(KBV_TEST_DATA_DIR) + "/problem_cyclic_model.py"},
                  {"device", "cpu"},
                  {"protocol", protocol}},
                 60s);
  const Reply reply = worker.request({{"cmd", "check"},
                                      {"draw", {{"family", "normal"}, {"params", {{"std", 2.0}}}, {"seed", 3}}},
                                      {"modes", {"reference", "baseline"}},
                                      {"errors_against_first", true}},
                                     60s);
  const nlohmann::json& first = reply.header.at("results").at(0);
  ASSERT_EQ(reply.tensors.size(), 1u);
  EXPECT_EQ(first.at("all_finite"), true);
  ASSERT_EQ(first.at("rms").size(), 1u);
  EXPECT_DOUBLE_EQ(first.at("rms").at(0).get<double>(), check::finite_rms(reply.tensors[0]));
  EXPECT_GT(first.at("rms").at(0).get<double>(), 0.0);
  EXPECT_FALSE(reply.header.at("results").at(1).contains("rms"));  // a later mode has its error only
  worker.shutdown();
}

}  // namespace
}  // namespace kbv::eval
