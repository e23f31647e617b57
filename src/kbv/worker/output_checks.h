// The worker's commands over outputs to be checked (worker_main.h): `check` (a draw's outputs
// under each mode), `compare` (a candidate's outputs against the reference's, in the reference's
// worker) and `sketches` (the reference's side of the timed outputs' checks).
#pragma once

#include <cstddef>
#include <vector>

#include <nlohmann/json.hpp>

#include "kbv/ipc/commands.h"
#include "kbv/worker/reply.h"
#include "kbv/worker/session.h"

namespace kbv::worker {

void handle_check(Session& session, Replies& replies, const ipc::commands::Check& command);
void handle_compare(Session& session, Replies& replies, const nlohmann::json& header,
                    std::vector<std::vector<std::byte>>& blobs);
void handle_sketches(Session& session, Replies& replies, const ipc::commands::Sketches& command);

// Each worker gives the device memory its caching allocator holds back to the device after each
// draw, comparison, probe, trace, copy floor and audited draw (never between timed calls): the two
// workers share the device, and what one caches of GiB-sized inputs, copies and outputs the other
// may need next (an honest 6 GiB ReLU ran out of memory on an 80 GB card while the candidate's
// worker held 53 GiB from its checked draws).
void release_cached_device_memory(const Session& session);

}  // namespace kbv::worker
