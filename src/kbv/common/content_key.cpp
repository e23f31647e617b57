#include "kbv/common/content_key.h"

#include <cstdint>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace kbv {

std::string content_key(std::string_view content) {
  std::uint64_t hash = 1469598103934665603ull;
  for (unsigned char c : content) hash = (hash ^ c) * 1099511628211ull;
  std::ostringstream out;
  out << std::hex << hash;
  return out.str();
}

std::string file_content_key(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::ostringstream content;
  content << in.rdbuf();
  return content_key(content.str());
}

}  // namespace kbv
