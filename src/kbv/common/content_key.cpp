#include "kbv/common/content_key.h"

#include <fstream>
#include <sstream>
#include <stdexcept>

#include "kbv/common/sha256.h"

namespace kbv {

std::string content_key(std::string_view content) { return sha256_hex(content); }

std::string file_content_key(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::ostringstream content;
  content << in.rdbuf();
  return content_key(content.str());
}

}  // namespace kbv
