// Judging outputs (PROTOCOL.md, "Correctness" 2-4): per draw, the reference's domain, the
// tolerance derived from the TF32 baseline's own error, the candidate's error against it; per
// family, the summary; over families, the correctness verdict.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kbv/check/comparison.h"
#include "kbv/eval/plan.h"
#include "kbv/protocol/protocol.h"
#include "kbv/protocol/record.h"

namespace kbv::eval {

// What the reference worker measured of its outputs for one draw (they stay there: a candidate's
// are compared with them in that worker), and what the parent derived from it.
struct ReferenceDraw {
  Draw draw;
  std::int64_t output_bytes = 0;  // of the reference's outputs (TF32 off, the protocol's reference flags)
  nlohmann::json checksum;        // of the inputs, to confirm the candidate saw the same
  std::string skip_reason;        // non-empty: not judged
  // Scaled comparison only: the scaled error of the timed baseline's outputs (its flags, on the
  // same inputs) against the reference, measured by the reference worker; infinity where the
  // baseline gave no comparable outputs.
  double baseline_error = 0;
  double tolerance = 0;
  // Measured by the reference worker where the outputs lie: whether every value is finite, and
  // each output's RMS over its finite values (the scaled comparison's scale).
  bool all_finite = true;
  std::vector<double> reference_rms;
};

// Marks draws outside the problem's domain (non-finite reference where the standard inputs
// give finite values, or a reference that raised) and draws the baseline itself fails, and
// sets each remaining draw's tolerance, widened under the scaled comparison by `repeat_error`
// (how far the reference moves between two calls on the same inputs).
void prepare(std::vector<ReferenceDraw>& draws, const protocol::Protocol& protocol, double repeat_error = 0);

// Hidden families (all but `standard`) with a draw in the problem's domain by prepare's rule:
// the reference neither raised nor gave non-finite values where the standard inputs give finite
// ones. Fewer than the protocol's min_hidden_families: the fallback families are drawn.
int hidden_families_in_domain(const std::vector<ReferenceDraw>& draws);

// The tolerance of a draw under the scaled comparison: max(floor, multiplier x baseline error).
double derive_tolerance(double baseline_error, const protocol::Protocol& protocol);

// Whether two reference calls on the same inputs that differ by `repeat_error` differ by rounding
// only (float atomics, a summation order): within `rounding_share` of the draw's tolerance (from
// its `baseline_error`), so that widening every bound by it moves a verdict little. A random
// reference (dropout) differs between calls about as much as its baseline does (the same
// randomness), a third of the tolerance whatever its size: beyond the share.
bool within_rounding(double repeat_error, double baseline_error, const protocol::Protocol& protocol);

// Why a reference whose two calls differ by `repeat_error` cannot judge a candidate; nullopt when
// that difference is rounding.
std::optional<std::string> stochastic_reason(double repeat_error, double baseline_error,
                                             const protocol::Protocol& protocol);

// One candidate draw: how its outputs compared with the reference's (check::compare_outputs, in the
// reference's worker), or why it produced none (`bad_output`); neither for a skipped draw.
protocol::DrawResult judge(const ReferenceDraw& reference, const std::optional<check::OutputComparison>& comparison,
                           const std::optional<std::string>& bad_output, const protocol::Protocol& protocol);

std::vector<protocol::FamilyResult> summarize(const std::vector<protocol::DrawResult>& draws,
                                              const protocol::Protocol& protocol);

struct CorrectnessDecision {
  protocol::Verdict verdict;  // pass, incorrect or unverifiable
  std::string reason;
  std::vector<protocol::Finding> findings;
};
CorrectnessDecision decide(const std::vector<protocol::FamilyResult>& families, const protocol::Protocol& protocol);

}  // namespace kbv::eval
