// Removes a folder and everything in it, by nftw: std::filesystem::remove_all in a binary linked
// with libtorch resolves to libtorch's exported copy and crashes.
#pragma once

#include <ftw.h>

#include <cstdio>
#include <filesystem>

namespace kbv::testing {

inline void remove_tree(const std::filesystem::path& root) {
  nftw(root.c_str(), [](const char* path, const struct stat*, int, struct FTW*) { return std::remove(path); }, 16,
       FTW_DEPTH | FTW_PHYS);
}

}  // namespace kbv::testing
