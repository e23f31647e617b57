#include "kbv/eval/extension_cache.h"

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace kbv::eval {
namespace {

// FNV-1a, 64 bits: a stable content key (not a security boundary: a candidate could only
// collide with a build of its own).
std::string content_key(const std::string& text) {
  std::uint64_t hash = 1469598103934665603ull;
  for (unsigned char c : text) hash = (hash ^ c) * 1099511628211ull;
  std::ostringstream out;
  out << std::hex << hash;
  return out.str();
}

}  // namespace

std::string extension_dir(const std::string& cache_dir, const std::string& candidate_path, const std::string& device,
                          const std::string& python) {
  std::ifstream in(candidate_path, std::ios::binary);
  std::ostringstream content;
  content << in.rdbuf() << "\n" << device << "\n" << KBV_VERSION << "\n" << python;
  return (std::filesystem::path(cache_dir) / "extensions" / content_key(content.str())).string();
}

}  // namespace kbv::eval
