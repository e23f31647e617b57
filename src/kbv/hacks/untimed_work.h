// Work outside the timed calls (PROTOCOL.md, "Work outside the timed calls"): the parent's
// judgement of each worker's ledgers, the CPU time and the device time its timing spent where no
// call was under way, against what the reference's worker spent on the same steps. Plain JSON in,
// findings out.
#pragma once

#include <optional>

#include <nlohmann/json.hpp>

#include "kbv/protocol/protocol.h"
#include "kbv/protocol/record.h"

namespace kbv::hacks {

// untimed_work: CPU time the candidate's worker spent, read from outside it over its timing, that
// neither its main thread (kbv's steps and the calls) nor other threads during a call account for:
// work for the timed calls done where no timer looks (a thread that replays the inputs' draw, a
// process of its own). Allowed: the reading's resolution, a share of the accounted time, and twice
// what kbv's own steps cost the reference's worker in other threads per input set drawn. `candidate`
// and `baseline`: TimingResult::cpu of each.
std::optional<protocol::Finding> judge_untimed_work(const nlohmann::json& candidate, const nlohmann::json& baseline,
                                                    const protocol::Detection& detection);

// untimed_work on the GPU: device time the candidate's work took outside its timed calls' windows
// (the GPU ledger, worker/gpu_ledger.h): what its calls launched that ran under the launch cover or
// after their end, and what other threads launched that ran between the calls. Allowed: a floor, a
// share of the windows' seconds, and twice the reference's own per timed call. A ledger that lost
// kbv's own launch covers or dropped records, or could not record in the candidate's process where
// it could in the reference's, is the same finding: its work there cannot be accounted. Nothing is
// judged where the reference's ledger lost records too (CUPTI does not serve on that machine).
// `candidate` and `baseline`: TimingResult::gpu of each.
std::optional<protocol::Finding> judge_untimed_device_work(const nlohmann::json& candidate,
                                                           const nlohmann::json& baseline,
                                                           const protocol::Detection& detection);

}  // namespace kbv::hacks
