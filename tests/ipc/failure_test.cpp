// The kinds a worker's failure can have, by the names its replies carry: each name reads back as
// its kind, and a name no worker sends is refused rather than read as a runtime error.
#include "kbv/ipc/failure.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace kbv::ipc {
namespace {

TEST(FailureKind, EachNameReadsBackAsItsKind) {
  for (const FailureKind kind :
       {FailureKind::compile_error, FailureKind::runtime_error, FailureKind::crash, FailureKind::incorrect,
        FailureKind::problem_error, FailureKind::reference_error, FailureKind::no_device, FailureKind::internal}) {
    EXPECT_EQ(failure_kind(name(kind)), kind) << name(kind);
  }
  EXPECT_EQ(name(FailureKind::compile_error), "compile_error");
}

TEST(FailureKind, ANameNoWorkerSendsIsRefused) {
  EXPECT_THROW(failure_kind("timeout"), std::invalid_argument);  // a lost worker's, never a reply's
  EXPECT_THROW(failure_kind(""), std::invalid_argument);
  EXPECT_THROW(failure_kind("Runtime_Error"), std::invalid_argument);
}

}  // namespace
}  // namespace kbv::ipc
