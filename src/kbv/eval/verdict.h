// How an evaluation's verdict is reached from what its steps found: a failure the candidate's
// worker answered with or the way it was lost, and the parent's judgements once both sides are
// measured (the floor, work outside the timed calls, the findings settled, the speedup and whether
// it holds).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "kbv/ipc/failure.h"
#include "kbv/protocol/protocol.h"
#include "kbv/protocol/record.h"

namespace kbv::eval {

protocol::Verdict verdict_of(ipc::FailureKind kind);
// A candidate's worker lost (WorkerLost::kind; `sandbox` is kbv's failure, not a verdict).
protocol::Verdict verdict_of_loss(const std::string& kind);

// `copy_seconds`: the physical floor's yardstick for `output_bytes`, where it was measured.
void judge_measured(protocol::Record& record, const protocol::Protocol& protocol, std::optional<double> copy_seconds,
                    std::int64_t output_bytes);

}  // namespace kbv::eval
