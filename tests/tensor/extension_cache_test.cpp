// The extension cache's key: the candidate's content and what its build runs and links.
#include "kbv/eval/extension_cache.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>

#include "kbv/common/remove_tree.h"
#include "support/scoped_environment.h"

namespace kbv::eval {
namespace {

namespace fs = std::filesystem;

using kbv::testing::ScopedEnvironment;

// This process's folder of test files.
fs::path scratch() { return fs::temp_directory_path() / ("kbv_extension_cache_test_" + std::to_string(getpid())); }

// Removes the scratch folder after the suite.
class ExtensionCache : public ::testing::Test {
 protected:
  static void TearDownTestSuite() { kbv::remove_tree(scratch()); }
};

fs::path write_candidate(const std::string& name, const std::string& text) {
  const fs::path path = scratch() / name;
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
  return path;
}

TEST_F(ExtensionCache, KeyFollowsContentDeviceAndCompiler) {
  const std::string a = write_candidate("a.py", "class ModelNew: pass\n").string();
  const std::string b = write_candidate("b.py", "class ModelNew: pass\n").string();
  const std::string c = write_candidate("c.py", "class ModelNew: x = 1\n").string();
  const ScopedEnvironment cxx("CXX", std::nullopt);
  const std::string key = extension_dir("/cache", a, "cpu", "/usr/bin/python3");
  EXPECT_EQ(key, extension_dir("/cache", b, "cpu", "/usr/bin/python3"));  // the content, not the path
  EXPECT_NE(key, extension_dir("/cache", c, "cpu", "/usr/bin/python3"));
  EXPECT_NE(key, extension_dir("/cache", a, "cuda", "/usr/bin/python3"));
  {
    const ScopedEnvironment same("CXX", "c++");  // what torch runs without $CXX
    EXPECT_EQ(key, extension_dir("/cache", a, "cpu", "/usr/bin/python3"));
  }
  const ScopedEnvironment other("CXX", "/bin/sh");  // another compiler: another build
  EXPECT_NE(key, extension_dir("/cache", a, "cpu", "/usr/bin/python3"));
}

TEST_F(ExtensionCache, ToolchainNamesTheCompilersAndTorchItFinds) {
  const ScopedEnvironment cxx("CXX", std::nullopt);
  const ScopedEnvironment nvcc("PYTORCH_NVCC", "/nonexistent/nvcc");
  const std::string cpu = toolchain_identity("cpu");
  EXPECT_EQ(cpu.rfind("c++ = /", 0), 0u) << cpu;            // resolved on PATH
  EXPECT_NE(cpu.find("libc10"), std::string::npos) << cpu;  // the torch this process links
  EXPECT_EQ(cpu.find("nvcc"), std::string::npos) << cpu;
  EXPECT_NE(toolchain_identity("cuda").find("nvcc = /nonexistent/nvcc (not found)"), std::string::npos);
}

// A kbv build folder of its own in `dir`: the executable's path and the wrapper's two files.
std::string fake_kbv(const fs::path& dir, const std::string& wrapper_text) {
  fs::create_directories(dir);
  std::ofstream(dir / "kbv-pch-c++") << wrapper_text;
  fs::permissions(dir / "kbv-pch-c++", fs::perms::owner_all);
  std::ofstream(dir / "kbv_pch.py") << "# the compile side\n";
  return (dir / "kbv").string();
}

std::map<std::string, std::string> build_environment(const std::string& kbv, const fs::path& cache,
                                                     const std::string& candidate) {
  WorkerLaunch launch{.executable = kbv, .python = "/usr/bin/python3"};
  add_build_environment(launch, cache.string(), candidate, "cpu");
  return {launch.environment.begin(), launch.environment.end()};
}

// load_inline's build.ninja names the compiler by path, and ninja rebuilds what a changed command
// made: two builds of kbv with the same wrapper (two checkouts) name one copy of it in the cache.
TEST_F(ExtensionCache, WrapperNamedByItsContentWhicheverKbvBuildRuns) {
  const ScopedEnvironment cxx("CXX", std::nullopt);
  const ScopedEnvironment pch("KBV_PCH", std::nullopt);
  const fs::path root = scratch();
  const fs::path cache = root / "cache";
  const std::string candidate = write_candidate("w.py", "class ModelNew: pass\n").string();
  const auto one = build_environment(fake_kbv(root / "checkout1", "#!/bin/sh\nexec c++ \"$@\"\n"), cache, candidate);
  const auto two = build_environment(fake_kbv(root / "checkout2", "#!/bin/sh\nexec c++ \"$@\"\n"), cache, candidate);
  const auto other = build_environment(fake_kbv(root / "checkout3", "#!/bin/sh\nexec g++ \"$@\"\n"), cache, candidate);
  ASSERT_TRUE(one.count("CXX")) << "no wrapper named";
  const fs::path wrapper = one.at("CXX");
  EXPECT_EQ(wrapper.parent_path().parent_path(), cache / "toolchain");
  EXPECT_EQ(two.at("CXX"), one.at("CXX"));
  EXPECT_NE(other.at("CXX"), one.at("CXX"));
  EXPECT_TRUE(fs::is_regular_file(wrapper.parent_path() / "kbv_pch.py"));
  EXPECT_NE(fs::status(wrapper).permissions() & fs::perms::owner_exec, fs::perms::none);
  EXPECT_EQ(one.at("KBV_REAL_CXX"), "c++");
  EXPECT_EQ(one.at("KBV_PCH_DIR"), (cache / "pch").string());
}

}  // namespace
}  // namespace kbv::eval
