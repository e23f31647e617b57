// The parent's client of a real worker (the kbv binary, started afresh): a posted command runs
// while the caller is elsewhere, and what its reply (or its absence) says reaches the next request.
#include "kbv/eval/worker_client.h"

#include <gtest/gtest.h>

#include <chrono>

namespace kbv::eval {
namespace {

using namespace std::chrono_literals;

WorkerLaunch launch() { return {KBV_BINARY, KBV_PYTHON, {}, nullptr}; }

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

}  // namespace
}  // namespace kbv::eval
