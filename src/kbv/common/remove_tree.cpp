#include "kbv/common/remove_tree.h"

#include <ftw.h>

#include <cstdio>

namespace kbv {

void remove_tree(const std::string& root) {
  nftw(
      root.c_str(), [](const char* path, const struct stat*, int, struct FTW*) { return std::remove(path); }, 16,
      FTW_DEPTH | FTW_PHYS);
}

}  // namespace kbv
