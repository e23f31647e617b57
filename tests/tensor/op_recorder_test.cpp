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

// A record opened with a name of its own (torch.compile's graphs are) owns the string only until
// it ends: the recorder keeps a copy.
TEST(OpRecorder, KeepsNamesThatDieWithTheirRecord) {
  OpRecorder recorder;
  recorder.start();
  {
    const std::string name = std::string("kbv.region.") + std::to_string(42);
    RECORD_FUNCTION(name, std::vector<c10::IValue>());
  }
  std::string overwrite(64, 'x');  // reuse the freed name's memory
  const std::set<std::string> ops = recorder.stop();
  EXPECT_TRUE(ops.count("kbv.region.42")) << overwrite.size();
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
