#include "kbv/common/cache_dir.h"

#include <cstdlib>

namespace kbv {

std::string cache_dir() {
  if (const char* env = std::getenv("KBV_CACHE"); env && *env) return env;
  const char* home = std::getenv("HOME");
  return std::string(home && *home ? home : "/tmp") + "/.cache/kbv";
}

}  // namespace kbv
