// The extension cache's key: the candidate's content and what its build runs and links.
#include "kbv/eval/extension_cache.h"

#include <gtest/gtest.h>

#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

namespace kbv::eval {
namespace {

namespace fs = std::filesystem;

// Sets an environment variable for one scope, then puts back what was there.
class ScopedEnvironment {
 public:
  ScopedEnvironment(const char* name, const std::optional<std::string>& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    value ? setenv(name, value->c_str(), 1) : unsetenv(name);
  }
  ~ScopedEnvironment() { old_ ? setenv(name_, old_->c_str(), 1) : unsetenv(name_); }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

fs::path write_candidate(const std::string& name, const std::string& text) {
  const fs::path path = fs::temp_directory_path() / ("kbv_extension_cache_test_" + std::to_string(getpid())) / name;
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
  return path;
}

TEST(ExtensionCache, KeyFollowsContentDeviceAndCompiler) {
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

TEST(ExtensionCache, ToolchainNamesTheCompilersAndTorchItFinds) {
  const ScopedEnvironment cxx("CXX", std::nullopt);
  const ScopedEnvironment nvcc("PYTORCH_NVCC", "/nonexistent/nvcc");
  const std::string cpu = toolchain_identity("cpu");
  EXPECT_EQ(cpu.rfind("c++ = /", 0), 0u) << cpu;           // resolved on PATH
  EXPECT_NE(cpu.find("libc10"), std::string::npos) << cpu;  // the torch this process links
  EXPECT_EQ(cpu.find("nvcc"), std::string::npos) << cpu;
  EXPECT_NE(toolchain_identity("cuda").find("nvcc = /nonexistent/nvcc (not found)"), std::string::npos);
}

}  // namespace
}  // namespace kbv::eval
