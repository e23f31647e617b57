// kbv run's progress line: the ETA follows the pace between finished evaluations, not the time
// since the start, which holds the builds and the workers' starts before the first one.
#include "kbv/run/progress.h"

#include <gtest/gtest.h>

#include <cstdio>

namespace kbv::run {
namespace {

using std::chrono::seconds;
using std::chrono::steady_clock;

TEST(Progress, TheEtaFollowsThePaceBetweenEvaluations) {
  steady_clock::time_point now{};
  std::FILE* log = std::tmpfile();
  Progress progress(12, 12, /*terminal=*/false, log, [&] { return now; });
  EXPECT_EQ(progress.eta(), "ETA --");
  now += seconds(300);  // the builds, then the first evaluation
  progress.evaluated("pass", "first");
  EXPECT_EQ(progress.eta(), "ETA --") << "one evaluation's time holds everything before it";
  now += seconds(5);
  progress.evaluated("pass", "second");
  EXPECT_EQ(progress.eta(), "ETA 0m50s");  // 10 left at 5 s each
  now += seconds(15);
  progress.evaluated("hack", "third");
  EXPECT_EQ(progress.eta(), "ETA 1m30s");  // 9 left at 10 s each
  std::fclose(log);
}

}  // namespace
}  // namespace kbv::run
