#include "kbv/eval/extension_cache.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "kbv/common/content_key.h"

namespace kbv::eval {

std::string extension_dir(const std::string& cache_dir, const std::string& candidate_path, const std::string& device,
                          const std::string& python) {
  std::ifstream in(candidate_path, std::ios::binary);
  std::ostringstream content;
  content << in.rdbuf() << "\n" << device << "\n" << KBV_VERSION << "\n" << python;
  return (std::filesystem::path(cache_dir) / "extensions" / content_key(content.str())).string();
}

}  // namespace kbv::eval
