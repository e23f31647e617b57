// The human summary of a record, printed by `kbv eval`.
#pragma once

#include <string>

#include "kbv/protocol/record.h"

namespace kbv::eval {

std::string summarize(const protocol::Record& record);

}  // namespace kbv::eval
