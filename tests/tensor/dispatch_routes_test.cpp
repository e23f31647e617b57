// The main thread's routes into the dispatcher (worker/dispatch_routes.h): a key the candidate adds
// to the thread's local sets is named and taken out again, so kbv's later steps run as before.
#include "kbv/worker/dispatch_routes.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

namespace kbv::worker {
namespace {

constexpr c10::DispatchKey kRoute = c10::DispatchKey::TESTING_ONLY_GenericMode;

TEST(DispatchRoutes, NothingChangedNothingSaid) {
  const DispatchRoutes routes;
  at::ones({4}).add_(1);
  EXPECT_TRUE(routes.restore().empty());
}

TEST(DispatchRoutes, AKeyAddedToTheIncludeSetIsNamedAndTakenOut) {
  const DispatchRoutes routes;
  c10::impl::tls_set_dispatch_key_included(kRoute, true);
  const nlohmann::json changes = routes.restore();
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0]["name"], "thread's included keys");
  EXPECT_NE(changes[0]["after"].get<std::string>().find("TESTING_ONLY_GenericMode"), std::string::npos);
  EXPECT_FALSE(c10::impl::tls_is_dispatch_key_included(kRoute));
  EXPECT_TRUE(routes.restore().empty());
}

TEST(DispatchRoutes, AKeyExcludedIsNamedAndPutBack) {
  const DispatchRoutes routes;
  c10::impl::tls_set_dispatch_key_excluded(c10::DispatchKey::AutogradCPU, true);
  const nlohmann::json changes = routes.restore();
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0]["name"], "thread's excluded keys");
  EXPECT_FALSE(c10::impl::tls_is_dispatch_key_excluded(c10::DispatchKey::AutogradCPU));
}

}  // namespace
}  // namespace kbv::worker
