// The kernels a candidate worker's own steps run in every evaluation (the hidden families'
// draws, the inputs' checksum, the watch's snapshot and comparisons, the poison, the timer's
// flush, the timed outputs' sketches), each run once on a small float32 tensor before the
// candidate is loaded. CUDA loads torch's kernels lazily, on their first call: a fresh worker
// paid 0.01-0.15 s per group of them (bench/probes/startup_probe.py, H200) inside its checks and
// timing. Run with the `device` command, whose reply the parent awaits only when it needs the
// worker, the loading happens while the parent waits on something else.
#pragma once

#include <c10/core/Device.h>
#include <nlohmann/json.hpp>

namespace kbv::worker {

// Runs the kernels the protocol (protocol::to_json's form) has this worker use, on `device`.
// Leaves no tensor behind and no generator changed that a draw reads (draws seed their own).
void warm_kernels(const c10::Device& device, const nlohmann::json& protocol);

}  // namespace kbv::worker
