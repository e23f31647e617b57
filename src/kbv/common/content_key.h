// The key of some content: its SHA-256 (common/sha256.h), hex. Equal content, equal key; no other
// content is known to share it, so a key a candidate's file yields is that file's alone.
#pragma once

#include <string>
#include <string_view>

namespace kbv {

std::string content_key(std::string_view content);

// The key of a file's bytes; throws std::runtime_error when it cannot be read.
std::string file_content_key(const std::string& path);

}  // namespace kbv
