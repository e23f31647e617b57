// A scope's wall time added to one stage of an evaluation's record (`stage_seconds`): where its
// time goes. A step that throws counts too.
#pragma once

#include <chrono>

#include "kbv/protocol/record.h"

namespace kbv::eval {

class Stage {
 public:
  Stage(protocol::Record& record, const char* name)
      : record_(record), name_(name), begun_(std::chrono::steady_clock::now()) {}
  Stage(const Stage&) = delete;
  Stage& operator=(const Stage&) = delete;
  ~Stage() {
    record_.stage_seconds[name_] += std::chrono::duration<double>(std::chrono::steady_clock::now() - begun_).count();
  }

 private:
  protocol::Record& record_;
  const char* name_;
  std::chrono::steady_clock::time_point begun_;
};

}  // namespace kbv::eval
