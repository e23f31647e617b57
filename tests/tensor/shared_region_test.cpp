// The output region (ipc/shared_region.h) with real memfds and LibTorch tensors: both sides in
// this process, each on its own fd and mapping, as the parent and a worker hold them.
#include "kbv/ipc/shared_region.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <ATen/ATen.h>

namespace kbv::ipc {
namespace {

struct Sides {
  std::shared_ptr<SharedRegion> parent = SharedRegion::create();
  std::unique_ptr<SharedRegion> worker = SharedRegion::open_inherited(fcntl(parent->fd(), F_DUPFD_CLOEXEC, 0));
};

at::Tensor large(double value) { return at::full({1024, 512}, value, at::kFloat); }  // 2 MiB

TEST(SharedRegion, LargeTensorsArriveAsViewsSmallOnesAsBlobs) {
  Sides sides;
  ASSERT_NE(sides.worker, nullptr);
  sides.worker->begin_command();
  const at::Tensor sent = at::randn({1024, 512});
  const std::optional<nlohmann::json> meta = sides.worker->place(sent);
  ASSERT_TRUE(meta.has_value());
  EXPECT_EQ((*meta)["region"]["bytes"], sent.nbytes());
  EXPECT_TRUE(at::equal(SharedRegion::view(sides.parent, *meta), sent));
  EXPECT_FALSE(sides.worker->place(at::ones({16})).has_value());
}

TEST(SharedRegion, AnyLayoutAndTypeIsWrittenContiguous) {
  Sides sides;
  sides.worker->begin_command();
  const at::Tensor sent = at::randn({512, 1024}, at::kDouble).t();  // not contiguous
  const std::optional<nlohmann::json> meta = sides.worker->place(sent);
  ASSERT_TRUE(meta.has_value());
  const at::Tensor received = SharedRegion::view(sides.parent, *meta);
  EXPECT_EQ(received.scalar_type(), at::kDouble);
  EXPECT_TRUE(received.is_contiguous());
  EXPECT_TRUE(at::equal(received, sent));
}

TEST(SharedRegion, EachCommandWritesFromTheStart) {
  Sides sides;
  sides.worker->begin_command();
  const nlohmann::json first = *sides.worker->place(large(1));
  const nlohmann::json second_of_first = *sides.worker->place(large(2));
  sides.worker->begin_command();
  const nlohmann::json next = *sides.worker->place(large(3));
  EXPECT_GT(second_of_first["region"]["offset"].get<std::uint64_t>(), first["region"]["offset"].get<std::uint64_t>());
  EXPECT_EQ(next["region"]["offset"], first["region"]["offset"]);
  EXPECT_TRUE(at::equal(SharedRegion::view(sides.parent, next), large(3)));
}

TEST(SharedRegion, AHandedOverRegionReadsAsTheParentsAndAnyOtherFileIsRefused) {
  Sides sides;
  sides.worker->begin_command();
  const nlohmann::json meta = *sides.worker->place(large(5));
  // As the reference's worker gets a candidate's region from the parent (ipc/fd_passing.h).
  const std::shared_ptr<const SharedRegion> received =
      SharedRegion::open_received(UniqueFd(fcntl(sides.parent->fd(), F_DUPFD_CLOEXEC, 0)));
  EXPECT_TRUE(at::equal(SharedRegion::view(received, meta), large(5)));
  EXPECT_THROW(SharedRegion::open_received(UniqueFd(open("/dev/null", O_RDONLY | O_CLOEXEC))), std::runtime_error);
}

TEST(SharedRegion, TheWorkerCannotResizeIt) {
  Sides sides;
  // A shrunk file would make the parent's reads of its mapping fault (SIGBUS).
  EXPECT_EQ(ftruncate(sides.worker->fd(), 4096), -1);
  EXPECT_EQ(errno, EPERM);
  EXPECT_EQ(ftruncate(sides.worker->fd(), static_cast<off_t>(2 * SharedRegion::kCapacity)), -1);
  EXPECT_EQ(errno, EPERM);
}

TEST(SharedRegion, DescriptionsOutOfBoundsAreRefused) {
  Sides sides;
  sides.worker->begin_command();
  const nlohmann::json good = *sides.worker->place(large(1));
  auto with = [&](auto change) {
    nlohmann::json meta = good;
    change(meta);
    return meta;
  };
  const std::uint64_t size = sides.parent->size();
  for (const nlohmann::json& bad : {
           with([&](nlohmann::json& m) { m["region"]["offset"] = size; }),
           with([&](nlohmann::json& m) { m["region"]["offset"] = size - SharedRegion::kAlignment; }),
           with([&](nlohmann::json& m) { m["region"]["offset"] = 8; }),
           with([&](nlohmann::json& m) { m["region"]["offset"] = -4096; }),
           with([&](nlohmann::json& m) { m["region"]["bytes"] = 4; }),
           with([&](nlohmann::json& m) {
             m["shape"] = {-1024, -512};
           }),
           with([&](nlohmann::json& m) {
             m["shape"] = {1ll << 40, 1ll << 40};
           }),
           with([&](nlohmann::json& m) { m["dtype"] = 1000; }),
       }) {
    EXPECT_THROW(SharedRegion::view(sides.parent, bad), std::exception) << bad.dump();
  }
}

TEST(SharedRegion, OnlyASealedMemfdIsTakenForOne) {
  int pipe_fds[2];
  ASSERT_EQ(pipe(pipe_fds), 0);
  EXPECT_EQ(SharedRegion::open_inherited(pipe_fds[0]), nullptr);
  close(pipe_fds[0]);
  close(pipe_fds[1]);
  const int unsealed = memfd_create("unsealed", MFD_CLOEXEC);
  ASSERT_EQ(ftruncate(unsealed, 1 << 20), 0);
  EXPECT_EQ(SharedRegion::open_inherited(unsealed), nullptr);
  close(unsealed);
  EXPECT_EQ(SharedRegion::open_inherited(-1), nullptr);
}

}  // namespace
}  // namespace kbv::ipc
