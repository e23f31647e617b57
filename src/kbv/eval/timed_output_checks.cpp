#include "kbv/eval/timed_output_checks.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <sstream>

#include "kbv/check/comparison.h"
#include "kbv/hacks/judge.h"
#include "kbv/ipc/commands.h"

namespace kbv::eval {
namespace {

using nlohmann::json;
using protocol::Verdict;
using Seconds = std::chrono::duration<double>;

// The reference's side of the timed outputs' checks goes in requests of this many calls: one per
// call cost more than the call (~1.5 ms each on the H200), and a request's timeout still bounds a
// few of the reference's calls, not hundreds.
constexpr size_t kSketchesPerRequest = 32;
// A progress line at most this often while they are checked.
constexpr std::chrono::seconds kCheckProgressEvery{10};

}  // namespace

void check_timed_outputs(ReferenceSide& reference, const EvalRequest& request,
                         const std::vector<ReferenceDraw>& references, const std::vector<TimedOutputSketch>& sketches,
                         protocol::Record& record) {
  double tolerance = request.protocol.error_floor;
  for (const ReferenceDraw& r : references) {
    if (r.draw.family == protocol::Family::standard && r.skip_reason.empty())
      tolerance = std::max(tolerance, r.tolerance);
  }
  request.progress("reference: checking " + std::to_string(sketches.size()) + " timed outputs");
  const auto began = std::chrono::steady_clock::now();
  auto reported = began;
  for (size_t first = 0; first < sketches.size(); first += kSketchesPerRequest) {
    if (first > 0 && std::chrono::steady_clock::now() - reported > kCheckProgressEvery) {
      // Each needs the reference's call for its inputs: minutes on a CPU for a large problem.
      reported = std::chrono::steady_clock::now();
      const double per_output = Seconds(reported - began).count() / static_cast<double>(first);
      request.progress("reference: checked " + std::to_string(first) + " of " + std::to_string(sketches.size()) +
                       " timed outputs, about " +
                       std::to_string(std::lround(per_output * static_cast<double>(sketches.size() - first))) +
                       " s left");
    }
    const size_t end = std::min(sketches.size(), first + kSketchesPerRequest);
    json calls = json::array();
    for (size_t call = first; call < end; ++call) {
      calls.push_back({{"seed", sketches[call].content_seed}, {"sketch_seed", sketches[call].sketch_seed}});
    }
    const Reply reply = reference.request(
        ipc::commands::message(ipc::commands::Sketches{calls, request.protocol.timing.sketch_points}));
    size_t next = 0;  // the reply's tensors, call after call
    for (size_t call = first; call < end; ++call) {
      const TimedOutputSketch& s = sketches[call];
      const json& rms = reply.header.at("results").at(call - first).at("rms");
      double error = 0;
      if (s.values.size() != rms.size()) {
        error = std::numeric_limits<double>::infinity();
      } else {
        for (size_t i = 0; i < s.values.size(); ++i) {
          error =
              std::max(error, check::scaled_error(s.values[i], reply.tensors.at(next + i), rms.at(i).get<double>()));
        }
      }
      next += rms.size();
      ++record.timed_outputs_checked;
      if (!(error <= tolerance)) {
        record.verdict = Verdict::incorrect;
        std::ostringstream reason;
        reason << "timed call " << call << ": output differs from the reference for its inputs (scaled error " << error
               << ", tolerance " << tolerance << ")";
        record.verdict_reason = reason.str();
        // Every checked draw passed: the outputs stopped following their inputs' content (unless the
        // candidate changed those inputs itself, which is named already).
        const bool mutated = std::any_of(record.findings.begin(), record.findings.end(),
                                         [](const protocol::Finding& f) { return f.id == "input_mutation"; });
        if (mutated) {
          record.verdict_reason += " after the candidate changed its own inputs";
          return;
        }
        hacks::merge(record.findings,
                     {{"stale_output", "error",
                       json::array({{{"source", "timed outputs"},
                                     {"timed_call", call},
                                     {"scaled_error", error},
                                     {"tolerance", tolerance},
                                     {"why", "inputs refreshed in place (same buffers, new values)"}}})}});
        return;
      }
    }
  }
}

}  // namespace kbv::eval
