// The sandbox's spec as the parent writes it and the sandboxed process reads it: --limit parsing
// (sizes, counts, the user's mistakes) and the JSON that crosses to the worker.
#include "kbv/sandbox/spec.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

namespace kbv::sandbox {
namespace {

std::string refusal(const std::string& assignment) {
  Limits limits;
  try {
    set_limit(limits, assignment);
  } catch (const std::invalid_argument& refused) {
    return refused.what();
  }
  return "";
}

TEST(SandboxSpec, LimitsTakeSizesWithSuffixesAndCountsWithout) {
  Limits limits;
  set_limit(limits, "memory=2G");
  set_limit(limits, "scratch=512M");
  set_limit(limits, "build=1.5k");
  set_limit(limits, "file=4096");
  set_limit(limits, "processes=64");
  set_limit(limits, "cpu=30");
  EXPECT_EQ(limits.memory_bytes, std::uint64_t{2} << 30);
  EXPECT_EQ(limits.scratch_bytes, std::uint64_t{512} << 20);
  EXPECT_EQ(limits.build_bytes, 1536u);
  EXPECT_EQ(limits.file_bytes, 4096u);
  EXPECT_EQ(limits.processes, 64u);
  EXPECT_EQ(limits.cpu_seconds, 30u);
  set_limit(limits, "memory=0");  // none
  EXPECT_EQ(limits.memory_bytes, 0u);
}

TEST(SandboxSpec, AMistakenLimitIsRefusedWithWhatItExpects) {
  EXPECT_NE(refusal("memory").find("expected NAME=VALUE"), std::string::npos);
  EXPECT_NE(refusal("disk=1G").find("no limit 'disk' (memory, processes, cpu, file, scratch, build)"),
            std::string::npos);
  EXPECT_NE(refusal("memory=2X").find("is not a size"), std::string::npos);
  EXPECT_NE(refusal("memory=-1G").find("is not a size"), std::string::npos);
  EXPECT_NE(refusal("processes=8G").find("is not a number"), std::string::npos);  // counts take no suffix
  EXPECT_NE(refusal("cpu=").find("is not a number"), std::string::npos);
  EXPECT_NE(refusal("memory=inf").find("is not a size"), std::string::npos);
  EXPECT_NE(refusal("cpu=nan").find("is not a number"), std::string::npos);
  EXPECT_NE(refusal("file=1e30").find("is not a size"), std::string::npos);  // beyond 64 bits
}

TEST(SandboxSpec, DefaultsHoldEveryLimit) {
  const Limits limits = default_limits();
  EXPECT_GT(limits.memory_bytes, 0u);
  EXPECT_GE(limits.processes, 1024u);
  EXPECT_EQ(limits.cpu_seconds, 7200u);
  EXPECT_EQ(limits.file_bytes, std::uint64_t{16} << 30);
  EXPECT_EQ(limits.scratch_bytes, std::uint64_t{4} << 30);
  EXPECT_EQ(limits.build_bytes, std::uint64_t{1} << 30);
}

TEST(SandboxSpec, CrossesToTheWorkerAsJsonWhole) {
  Spec spec;
  spec.hidden = {"/root/.cache/kbv", "/run"};
  spec.readable = {"/usr/bin/python3", "/work/problem.py"};
  spec.build_folder = "/root/.cache/kbv/extensions/abc";
  spec.build_folder_fd = 9;
  spec.home = "/tmp/home";
  spec.limits = default_limits();
  set_limit(spec.limits, "memory=3G");
  const Spec back = spec_from_json(nlohmann::json::parse(to_json(spec).dump()));
  EXPECT_EQ(back.hidden, spec.hidden);
  EXPECT_EQ(back.readable, spec.readable);
  EXPECT_EQ(back.build_folder, spec.build_folder);
  EXPECT_EQ(back.build_folder_fd, 9);
  EXPECT_EQ(back.home, spec.home);
  EXPECT_EQ(to_json(back.limits), to_json(spec.limits));
  nlohmann::json missing = to_json(spec);
  missing["limits"].erase("build_bytes");
  EXPECT_THROW(spec_from_json(missing), nlohmann::json::exception);
}

}  // namespace
}  // namespace kbv::sandbox
