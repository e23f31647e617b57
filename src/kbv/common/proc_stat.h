// A process's /proc/PID/stat (proc(5)), read as its numbered fields: the command's name (field 2)
// may hold spaces and parentheses, so the fields are taken after its last ')'.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace kbv {

class ProcStat {
 public:
  // `pid`: a number, or "self". None when the process is gone or the file cannot be read.
  static std::optional<ProcStat> read(const std::string& pid);
  // Field `number` (proc(5)'s numbering, from 3) as an unsigned number; none past the last field.
  std::optional<unsigned long long> field(int number) const;

 private:
  std::vector<std::string> fields_;  // from field 3 on
};

}  // namespace kbv
