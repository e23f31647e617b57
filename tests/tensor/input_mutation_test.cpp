// What hacks::mutations counts as an input changed by a call: entries that differ, a NaN left as
// a NaN not among them, a change of shape or dtype as every entry.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <limits>

#include "kbv/hacks/integrity.h"

namespace kbv::hacks {
namespace {

TEST(InputMutations, CountsTheEntriesThatDiffer) {
  const at::Tensor before = at::randn({1000});
  at::Tensor after = before.clone();
  after.slice(0, 10, 17).add_(1.0);
  const std::vector<Mutation> found = mutations({before, before}, {after, before.clone()});
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].index, 0u);
  EXPECT_EQ(found[0].changed, 7);
  EXPECT_EQ(found[0].elements, 1000);
}

TEST(InputMutations, ANanLeftAsANanIsNoChangeAndANewOneIs) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  at::Tensor before = at::rand({100}, at::kDouble);
  before[3] = nan;
  EXPECT_TRUE(mutations({before}, {before.clone()}).empty());
  at::Tensor after = before.clone();
  after[5] = nan;
  after[3] = 1.0;
  const std::vector<Mutation> found = mutations({before}, {after});
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].changed, 2);
}

TEST(InputMutations, ANewShapeChangesEveryEntry) {
  const at::Tensor before = at::zeros({4, 6});
  const std::vector<Mutation> found = mutations({before}, {before.reshape({6, 4}).clone()});
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].changed, 24);
}

}  // namespace
}  // namespace kbv::hacks
