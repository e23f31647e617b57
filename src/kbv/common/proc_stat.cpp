#include "kbv/common/proc_stat.h"

#include <fstream>
#include <iterator>
#include <sstream>

namespace kbv {

std::optional<ProcStat> ProcStat::read(const std::string& pid) {
  std::ifstream file("/proc/" + pid + "/stat");
  const std::string text(std::istreambuf_iterator<char>(file), {});
  const auto name_end = text.rfind(')');
  if (name_end == std::string::npos) return std::nullopt;
  ProcStat stat;
  std::istringstream fields(text.substr(name_end + 1));
  for (std::string field; fields >> field;) stat.fields_.push_back(std::move(field));
  return stat;
}

std::optional<unsigned long long> ProcStat::field(int number) const {
  const auto index = static_cast<std::size_t>(number - 3);
  if (number < 3 || index >= fields_.size()) return std::nullopt;
  try {
    return std::stoull(fields_[index]);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

}  // namespace kbv
