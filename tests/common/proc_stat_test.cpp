// /proc/PID/stat read by field number (common/proc_stat): this process's own, after CPU work.
#include "kbv/common/proc_stat.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <string>

namespace kbv {
namespace {

TEST(ProcStat, FieldsByProcsNumbering) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(50);
  while (std::chrono::steady_clock::now() < end) {
  }
  const std::optional<ProcStat> self = ProcStat::read("self");
  ASSERT_TRUE(self);
  EXPECT_EQ(self->field(4), static_cast<unsigned long long>(getppid()));  // ppid
  EXPECT_GT(*self->field(14) + *self->field(15), 0u);                     // utime + stime, in ticks
  EXPECT_LT(*self->field(50), *self->field(51));                          // env_start < env_end
  EXPECT_FALSE(self->field(3));                                           // the state is a letter, not a number
  EXPECT_FALSE(self->field(2));                                           // the command's name is not a field here
  EXPECT_FALSE(self->field(999));                                         // past the last
}

TEST(ProcStat, AProcessThatIsGoneHasNone) { EXPECT_FALSE(ProcStat::read("999999999")); }

}  // namespace
}  // namespace kbv
