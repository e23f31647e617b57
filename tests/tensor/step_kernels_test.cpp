// kbv's check of the aten operators its own steps run (worker/step_kernels): real registrations
// over torch's kernels through torch::Library, real ops through the dispatcher.
#include "kbv/worker/step_kernels.h"

#include <ATen/ATen.h>
#include <ATen/core/dispatch/ObservedOperators.h>
#include <gtest/gtest.h>
#include <torch/library.h>

namespace kbv::worker {
namespace {

at::Tensor& own_uniform_(at::Tensor& self, double, double, std::optional<at::Generator>) { return self.fill_(0.5); }
bool own_is_complex(const at::Tensor&) { return false; }

bool names_this_file(const std::string& listing) { return listing.find(__FILE__) != std::string::npos; }

TEST(StepKernels, SeesAKernelRegisteredOverAnAtenOperatorAsTheOperatorStarts) {
  StepKernels kernels;
  kernels.arm();
  at::Tensor x = at::empty({8});
  x.uniform_();
  EXPECT_TRUE(kernels.take().empty());  // torch's own kernels only
  {
    torch::Library over(torch::Library::IMPL, "aten", c10::DispatchKey::CPU, __FILE__, __LINE__);
    over.impl("uniform_", &own_uniform_);
    x.uniform_();
    EXPECT_TRUE(at::equal(x, at::full({8}, 0.5)));  // its kernel ran
    x.uniform_();
  }
  std::vector<StepKernels::Seen> seen = kernels.take();
  ASSERT_EQ(seen.size(), 1u);  // once per change, not once per run
  EXPECT_EQ(seen[0].op, "aten::uniform_");
  EXPECT_TRUE(names_this_file(seen[0].listing)) << seen[0].listing;
  // Removed: the next run sees the registrations change back, and torch's listing alone.
  x.uniform_();
  seen = kernels.take();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_FALSE(names_this_file(seen[0].listing)) << seen[0].listing;
}

TEST(StepKernels, LeavesTheModelsCallsAndAnUnarmedProcessAlone) {
  StepKernels kernels;
  at::Tensor x = at::empty({8});
  torch::Library over(torch::Library::IMPL, "aten", c10::DispatchKey::CPU, __FILE__, __LINE__);
  over.impl("uniform_", &own_uniform_);
  x.uniform_();  // not armed yet: the import and the construction are checked otherwise
  EXPECT_TRUE(kernels.take().empty());
  kernels.arm();
  {
    const StepKernels::ModelCall call(&kernels);
    x.uniform_();  // the model's own work
  }
  EXPECT_TRUE(kernels.take().empty());
  {
    const StepKernels::ModelCall none(nullptr);  // a worker without the watch
    x.uniform_();
  }
  EXPECT_EQ(kernels.take().size(), 1u);  // armed again after the call
}

// aten::is_complex runs no callback at all (torch's ObservedOperators): it is counted at each take.
TEST(StepKernels, CountsTheOperatorsTorchDoesNotObserveAtEachTake) {
  ASSERT_FALSE(c10::ObservedOperators::isObserved({"aten::is_complex", ""}));
  StepKernels kernels;
  torch::Library over(torch::Library::IMPL, "aten", c10::DispatchKey::CPU, __FILE__, __LINE__);
  over.impl("is_complex", &own_is_complex);
  EXPECT_TRUE(kernels.take().empty());  // not armed
  kernels.arm();
  const std::vector<StepKernels::Seen> seen = kernels.take();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].op, "aten::is_complex");
  EXPECT_TRUE(names_this_file(seen[0].listing)) << seen[0].listing;
}

}  // namespace
}  // namespace kbv::worker
