// SHA-256 (FIPS 180-4): the digest behind every key kbv derives from content a candidate controls
// (its build folder, the store's content ids). A 64-bit hash is not enough there: a candidate can
// append a comment that gives its file another's key (docs/SECURITY.md, "Keys").
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace kbv {

class Sha256 {
 public:
  Sha256();
  Sha256& update(std::string_view bytes);
  // The digest of everything updated so far, as 64 lowercase hex digits; the object is spent.
  std::string hex();

 private:
  void compress(const unsigned char* block);

  std::array<std::uint32_t, 8> state_;
  std::array<unsigned char, 64> block_{};
  std::uint64_t length_ = 0;  // bytes seen
  std::size_t filled_ = 0;    // bytes waiting in block_
};

inline std::string sha256_hex(std::string_view bytes) { return Sha256().update(bytes).hex(); }

}  // namespace kbv
