// From evidence to findings (PROTOCOL.md, "Findings"): the parent's judgements on what the static
// screen read and what the candidate's watch and probe measured, and the verdict they settle.
// Plain data in, plain findings out: no tensors, no Python.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

#include "kbv/protocol/protocol.h"
#include "kbv/protocol/record.h"

namespace kbv::hacks {

// The static screen's reply: the Python screen's findings, and the C++ screen of every C++/CUDA
// source it found. Static evidence alone is a warning unless the screen called it unambiguous.
std::vector<protocol::Finding> static_findings(const nlohmann::json& screen);

// The watch's facts, as the worker reported them ({id, severity, evidence} each).
std::vector<protocol::Finding> watched_findings(const nlohmann::json& findings);

// The probe (Session::probe) judged against the draw's tolerance: call_dependent, output_reuse,
// uninitialized_output; and its trace against the reference's: no_custom_kernel,
// library_fallback, side_stream, and 16-bit kernels as precision evidence. Library compute its
// extensions reach below the dispatcher (the probe's library_calls) is never its own work: on the
// GPU the worker counted those calls' kernels as the library's; on the CPU, where its extensions'
// time cannot be split, none of that time is credited to it.
std::vector<protocol::Finding> judge_probe(const nlohmann::json& probe, const nlohmann::json& reference_trace,
                                           double tolerance, const protocol::Detection& detection);

// watched_only: compute ops (aten) that the timed calls ran and the probe's traced call never did --
// the candidate behaves one way when observed (torch's profiler and a profile hook are visible to
// it) and another when timed. `ops`: the worker's {"timed", "traced"} (empty: not recorded).
std::optional<protocol::Finding> judge_observed_ops(const nlohmann::json& ops);

// uneven_calls (warning): the candidate's per-call median well below its figure from whole rounds
// (the median over rounds of a round's total time, per call; a round times each of the `sets`
// input sets once, each refilled just before its call), where the baseline's are alike: work done on some
// calls for the others of their round, which moves the median and not the work. The evidence
// carries the speedup from rounds beside the one by median; the caller takes the lower.
std::optional<protocol::Finding> judge_uneven_calls(const std::vector<double>& baseline_samples,
                                                    const std::vector<double>& candidate_samples, int sets);

// timing_anomaly: the candidate's time below the floor (a fraction of the time a plain copy of
// its output bytes takes under the same timer).
std::optional<protocol::Finding> judge_floor(double candidate_seconds, double copy_seconds, std::int64_t output_bytes,
                                             const protocol::Detection& detection);

// Adds `more` to `into`, one finding per id: the highest severity, the evidence items of all.
void merge(std::vector<protocol::Finding>& into, std::vector<protocol::Finding> more);

// The verdict the findings settle: evidence of low precision in a candidate that fails the
// tolerance is a precision_downgrade error; any error finding but distribution_specific turns a
// pass or incorrect verdict into `hack`.
void settle(protocol::Record& record);

}  // namespace kbv::hacks
