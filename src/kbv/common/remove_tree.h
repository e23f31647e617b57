// Removes a folder and everything in it, links not followed. By nftw: std::filesystem::remove_all
// in a binary linked with libtorch resolves to libtorch's exported copy and crashes.
#pragma once

#include <string>

namespace kbv {

void remove_tree(const std::string& root);

}  // namespace kbv
