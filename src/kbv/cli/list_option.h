// A comma-separated option's entries (--protocols, --gpus), empty ones dropped.
#pragma once

#include <sstream>
#include <string>
#include <vector>

namespace kbv::cli {

inline std::vector<std::string> split_list(const std::string& list) {
  std::vector<std::string> items;
  std::stringstream in(list);
  for (std::string item; std::getline(in, item, ',');) {
    if (!item.empty()) items.push_back(item);
  }
  return items;
}

}  // namespace kbv::cli
