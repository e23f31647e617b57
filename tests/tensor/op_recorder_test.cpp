// kbv's record of the aten ops a call ran (worker/op_recorder): real LibTorch ops through the
// dispatcher, on every call alike; switching torch's op recording off is noticed.
#include "kbv/worker/op_recorder.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

namespace kbv::worker {
namespace {

TEST(OpRecorder, RecordsTheOpsBetweenStartAndStopOnly) {
  OpRecorder recorder;
  const at::Tensor x = at::randn({8});
  at::sigmoid(x);  // before start: not recorded
  recorder.start();
  at::relu(x);
  const std::set<std::string> ops = recorder.stop();
  at::tanh(x);  // after stop: not recorded
  EXPECT_TRUE(ops.count("aten::relu"));
  EXPECT_FALSE(ops.count("aten::sigmoid"));
  EXPECT_FALSE(ops.count("aten::tanh"));
  recorder.start();
  EXPECT_FALSE(recorder.stop().count("aten::relu"));  // each window starts empty
}

TEST(OpRecorder, IntactUntilRecordingIsSwitchedOff) {
  OpRecorder recorder;
  EXPECT_TRUE(recorder.intact());
  {
    at::DisableRecordFunctionGuard off;
    EXPECT_FALSE(recorder.intact());
  }
  EXPECT_TRUE(recorder.intact());
  at::clearGlobalCallbacks();
  EXPECT_FALSE(recorder.intact());
}

}  // namespace
}  // namespace kbv::worker
