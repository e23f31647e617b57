// The private build folder: a tmpfs made detached, filled by copy, attached by a child in a mount
// namespace of its own (as a sandboxed worker does), read back by descriptor after the child and
// its namespace are gone. Needs root (fsopen, move_mount), as the sandbox does.
#include "kbv/sandbox/build_folder.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "kbv/common/remove_tree.h"
#include "kbv/common/sha256.h"
#include "kbv/sandbox/enter.h"

namespace kbv::sandbox {
namespace {

namespace fs = std::filesystem;

fs::path scratch() { return fs::temp_directory_path() / ("kbv_build_folder_test_" + std::to_string(getpid())); }

class BuildFolderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root, as the sandbox does";
    fs::create_directories(scratch());
  }
  static void TearDownTestSuite() { kbv::remove_tree(scratch()); }
};

void write(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

// In a child with a mount namespace of its own: attaches the folder at `at`, runs `act` there,
// exits. Returns the child's exit code.
template <class Act>
int in_child_namespace(const BuildFolder& folder, const fs::path& at, Act act) {
  const pid_t child = fork();
  if (child == 0) {
    if (unshare(CLONE_NEWNS) != 0 || mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) _exit(2);
    if (move_mount(folder.fd(), "", AT_FDCWD, at.c_str(), MOVE_MOUNT_F_EMPTY_PATH) != 0) _exit(3);
    _exit(act() ? 0 : 4);
  }
  int status = 0;
  waitpid(child, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST_F(BuildFolderTest, WhatAChildWroteIsReadBackAfterItsNamespaceIsGone) {
  const BuildFolder folder(1 << 20);
  const fs::path at = scratch() / "attached";
  fs::create_directories(at);
  ASSERT_EQ(in_child_namespace(folder, at,
                               [&] {
                                 write(at / "ext/built.so", "a library");
                                 return symlink("/etc/passwd", (at / "ext/link").c_str()) == 0;
                               }),
            0);
  EXPECT_TRUE(fs::is_empty(at)) << "the child's mount showed outside its namespace";
  const fs::path out = scratch() / "published/files";
  const FileDigests digests = folder.copy_out(out);
  EXPECT_EQ(digests, (FileDigests{{"ext/built.so", sha256_hex("a library")}}));
  EXPECT_FALSE(fs::exists(fs::symlink_status(out / "ext/link"))) << "a link was copied out";
  struct stat facts {};
  ASSERT_EQ(stat((out / "ext/built.so").c_str(), &facts), 0);
  EXPECT_EQ(facts.st_uid, 0u);
  EXPECT_EQ(facts.st_mode & 07777, 0644u);
}

TEST_F(BuildFolderTest, ItsSizeIsBoundedByTheKernel) {
  const BuildFolder folder(1 << 20);
  EXPECT_FALSE(folder.full());
  const int fd = openat(folder.fd(), "fill", O_WRONLY | O_CREAT, 0644);
  ASSERT_GE(fd, 0);
  const std::string block(1 << 16, 'x');
  ssize_t written = 0;
  for (int i = 0; i < 64; ++i) {
    const ssize_t n = ::write(fd, block.data(), block.size());
    if (n <= 0) break;
    written += n;
  }
  close(fd);
  EXPECT_LE(written, 1 << 20);
  EXPECT_TRUE(folder.full());
}

// A copy in keeps each file's time (ninja then finds its outputs up to date) and gives the files to
// the sandboxes' group to write.
TEST_F(BuildFolderTest, ACopyInKeepsTimesAndIsTheSandboxGroupsToWrite) {
  const fs::path published = scratch() / "source";
  write(published / "ext/build.ninja", "rule cc\n");
  write(published / "kbv-build-failed.log", "error\n");
  const timespec old_times[2] = {{1000, 0}, {123456789, 987654321}};
  ASSERT_EQ(utimensat(AT_FDCWD, (published / "ext/build.ninja").c_str(), old_times, 0), 0);
  const BuildFolder folder(1 << 20);
  const FileDigests digests = folder.copy_in(published.string());
  EXPECT_EQ(digests, (FileDigests{{"ext/build.ninja", sha256_hex("rule cc\n")},
                                  {"kbv-build-failed.log", sha256_hex("error\n")}}));
  EXPECT_TRUE(folder.holds("kbv-build-failed.log"));
  struct stat facts {};
  ASSERT_EQ(fstatat(folder.fd(), "ext/build.ninja", &facts, AT_SYMLINK_NOFOLLOW), 0);
  EXPECT_EQ(facts.st_mtim.tv_sec, 123456789);
  EXPECT_EQ(facts.st_mtim.tv_nsec, 987654321);
  EXPECT_EQ(facts.st_gid, kUserBase);
  EXPECT_TRUE(facts.st_mode & S_IWGRP);
  // A link in what is copied in is refused, not followed.
  ASSERT_EQ(symlink("/etc/passwd", (published / "link").c_str()), 0);
  EXPECT_THROW(BuildFolder(1 << 20).copy_in(published.string()), std::system_error);
}

}  // namespace
}  // namespace kbv::sandbox
