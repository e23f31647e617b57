// A stable key of some content (FNV-1a, 64 bits, hex): equal content, equal key. Not a security
// boundary: a candidate could only collide with a build or a record of its own.
#pragma once

#include <string>
#include <string_view>

namespace kbv {

std::string content_key(std::string_view content);

// The key of a file's bytes; throws std::runtime_error when it cannot be read.
std::string file_content_key(const std::string& path);

}  // namespace kbv
