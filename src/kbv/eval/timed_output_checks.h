// The reference's side of the timed outputs' checks (PROTOCOL.md, "Timing"): every timed output of
// the candidate, sampled at positions drawn after its call returned, against the reference's for
// the same inputs, in the reference's worker.
#pragma once

#include <vector>

#include "kbv/eval/evaluation.h"
#include "kbv/eval/reference_side.h"
#include "kbv/eval/timing_run.h"
#include "kbv/protocol/record.h"

namespace kbv::eval {

// Each sketch against the reference for its inputs, under the standard family's tolerance: the
// first that differs makes the record `incorrect` (`stale_output`, unless the candidate changed its
// own inputs, which is named already).
void check_timed_outputs(ReferenceSide& reference, const EvalRequest& request,
                         const std::vector<ReferenceDraw>& references, const std::vector<TimedOutputSketch>& sketches,
                         protocol::Record& record);

}  // namespace kbv::eval
