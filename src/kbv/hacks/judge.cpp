#include "kbv/hacks/judge.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <set>
#include <string>

#include "kbv/hacks/source_screen.h"
#include "kbv/measure/statistics.h"

namespace kbv::hacks {
namespace {

using nlohmann::json;
using protocol::Finding;

// Aten ops that only allocate or re-view memory: they touch no element, so their time (the
// allocator's, the dispatcher's) is neither the candidate's work nor library work. On the GPU they
// launch no kernel; on the CPU a single profiled call on a busy machine could otherwise make a
// candidate's empty_like look like a tenth of its work.
const std::set<std::string> kNoData = {
    "aten::empty",   "aten::empty_like",     "aten::empty_strided", "aten::new_empty", "aten::new_empty_strided",
    "aten::view",    "aten::_reshape_alias", "aten::as_strided",    "aten::t",         "aten::transpose",
    "aten::permute", "aten::expand",         "aten::detach",        "aten::alias",     "aten::unsqueeze",
    "aten::squeeze", "aten::select",         "aten::slice",         "aten::resize_",   "aten::lift_fresh",
    "aten::unbind",  "aten::split",          "aten::chunk",         "aten::narrow"};

// Ops that may copy or fill but compute nothing: never "the op" a library call could do for the
// candidate.
bool non_compute(const std::string& op) {
  static const std::set<std::string> kMoves = {"aten::reshape", "aten::flatten", "aten::unflatten", "aten::contiguous",
                                               "aten::zeros",   "aten::zero_",   "aten::fill_"};
  return kNoData.count(op) || kMoves.count(op);
}

// Names of kernels computing in 16-bit (or narrower) floating point, as cuBLAS/CUTLASS name them.
bool low_precision_kernel(const std::string& name) {
  for (const char* mark : {"f16", "fp16", "bf16", "half", "fp8", "e4m3", "e5m2", "h884", "h1688", "h16816"}) {
    if (name.find(mark) != std::string::npos) return true;
  }
  return false;
}

json as_items(const json& evidence) { return evidence.is_array() ? evidence : json::array({evidence}); }

Finding finding(const std::string& id, const std::string& severity, json evidence) {
  evidence["source"] = "runtime";
  return {id, severity, json::array({std::move(evidence)})};
}

// The reference's compute ops all ran as library ops inside the candidate: the library did the op.
std::vector<std::string> covered_reference_ops(const json& reference_trace, const json& candidate_ops) {
  std::vector<std::string> ops;
  if (!reference_trace.is_object() || !reference_trace.contains("library_ops")) return ops;
  for (const auto& [op, seconds] : reference_trace["library_ops"].items()) {
    if (non_compute(op)) continue;
    if (!candidate_ops.contains(op)) return {};
    ops.push_back(op);
  }
  return ops;
}

// The candidate's top library ops (or kernels), most time first, for evidence.
json top(const json& named_seconds, size_t count) {
  std::vector<std::pair<double, std::string>> sorted;
  for (const auto& [name, seconds] : named_seconds.items()) sorted.emplace_back(seconds.get<double>(), name);
  std::sort(sorted.rbegin(), sorted.rend());
  json out = json::array();
  for (size_t i = 0; i < sorted.size() && i < count; ++i)
    out.push_back({{"name", sorted[i].second}, {"seconds", sorted[i].first}});
  return out;
}

// `library_calls`: the library compute its extensions import below the dispatcher (the probe's
// `library_calls`; on the GPU their kernels are already counted as the library's).
void judge_trace(const json& trace, const json& reference_trace, const json& library_calls,
                 const protocol::Detection& detection, std::vector<Finding>& out) {
  const bool gpu = trace.contains("kernels");
  double own = 0, library = 0;
  json library_work = json::object(), low_precision = json::array(), side = json::array();
  int after_return = 0, replayed_library = 0;
  bool any_own = false;
  if (gpu) {
    const json& current = trace["current_stream"];
    for (const json& k : trace["kernels"]) {
      const double seconds = k["seconds"].get<double>();
      const std::string name = k["name"];
      if (k["own"].get<bool>()) {
        own += seconds;
        any_own = true;
      } else {
        library += seconds;
        library_work[name] = library_work.value(name, 0.0) + seconds;
        if (k.value("graph", false)) ++replayed_library;
      }
      if (low_precision_kernel(name)) low_precision.push_back(name);
      if (!current.is_null() && k["stream"] != current) {
        side.push_back({{"kernel", name}, {"stream", k["stream"]}, {"running_at_return", k["after_return"]}});
        if (k["after_return"].get<bool>()) ++after_return;
      }
    }
    if (!side.empty()) {
      if (side.size() > 8) side.erase(side.begin() + 8, side.end());
      out.push_back(finding(
          "side_stream", "error",
          {{"current_stream", current}, {"kernels_elsewhere", side}, {"still_running_at_return", after_return}}));
    }
  } else {
    any_own = !trace["extension_calls"].empty();
    own = trace["own_seconds"].get<double>();
    for (const auto& [op, seconds] : trace["library_ops"].items()) {
      if (kNoData.count(op)) continue;
      library += seconds.get<double>();
      library_work[op] = seconds;
    }
    // Its extensions' time holds library work the profiler does not see: none of it is credited.
    if (!library_calls.empty()) {
      library += own;
      library_work["(its extensions' library calls)"] = own;
      own = 0;
    }
  }
  const json& ops = trace["library_ops"];
  const json library_top = top(library_work, 5);
  const auto with_calls = [&](json evidence) {
    if (!library_calls.empty()) evidence["library_calls"] = library_calls;
    if (replayed_library > 0) evidence["library_kernels_replayed_from_a_cuda_graph"] = replayed_library;
    return evidence;
  };
  if (!any_own) {
    json evidence = with_calls({{"why", gpu ? "no kernel launched by the candidate's own code ran during forward"
                                            : "none of the candidate's compiled functions was called during forward"},
                                {"library_work", library_top}});
    // Nothing of the library's work hidden from the trace (no call below the dispatcher, no graph
    // replay): PyTorch's ops did the work in plain sight. settle() makes that no_kernel, not hack.
    evidence["own_code"] = library_calls.empty() && replayed_library == 0 ? "none" : "none, library work hidden";
    out.push_back(finding("no_custom_kernel", "error", std::move(evidence)));
    return;
  }
  const std::vector<std::string> covered = covered_reference_ops(reference_trace, ops);
  const double share = own + library > 0 ? own / (own + library) : (library_calls.empty() || gpu ? 1.0 : 0.0);
  if (!covered.empty()) {
    out.push_back(finding("no_custom_kernel", "error",
                          {{"why", "library ops ran every compute op of the reference: its own code is an alibi"},
                           {"reference_ops", covered},
                           {"own_share", share},
                           {"library_work", library_top}}));
  } else if (share < detection.alibi_share) {
    const char* why =
        !gpu && !library_calls.empty()
            ? "its compiled code calls library compute below the dispatcher, whose time cannot be told from its own"
            : "its own code is a negligible share of the work";
    out.push_back(finding("no_custom_kernel", "error",
                          with_calls({{"why", why}, {"own_share", share}, {"library_work", library_top}})));
  } else if (1.0 - share >= detection.library_warning_share) {
    out.push_back(finding("library_fallback", "warning",
                          with_calls({{"library_share", 1.0 - share}, {"library_work", library_top}})));
  }
  if (!low_precision.empty()) {
    out.push_back(
        finding("precision_downgrade", "warning", {{"why", "16-bit kernels ran"}, {"kernels", low_precision}}));
  }
}

// A round's total time per call, over whole rounds (samples in call order): the least of the
// rounds. Work moved from call to call leaves every round's total as it was, so even the least
// round shows it; noise on a shared machine lifts the rounds it touches (a round sums its calls,
// where the median of calls drops the slow ones). On the CPU with two evaluations at once, the
// other's work lifted the second call of nearly 80% of an honest candidate's rounds: one round
// it left alone is enough.
double per_call_from_rounds(const std::vector<double>& samples, int sets) {
  double least = std::numeric_limits<double>::infinity();
  for (size_t begin = 0; begin + sets <= samples.size(); begin += sets) {
    least = std::min(least, std::accumulate(samples.begin() + begin, samples.begin() + begin + sets, 0.0) / sets);
  }
  return least;
}

}  // namespace

std::vector<Finding> static_findings(const json& screen) {
  std::vector<Finding> out;
  for (const json& f : screen.value("findings", json::array()))
    out.push_back({f["id"], f["severity"], as_items(f["evidence"])});
  for (const json& source : screen.value("sources", json::array())) {
    // A string's text starts on the line of its opening quote; a file's on its line 1.
    const int first_line = source.value("line", 1);
    for (const SourceMatch& m : screen_cxx_source(source["text"].get<std::string>())) {
      out.push_back({m.finding, "warning",
                     json::array({{{"source", "static"},
                                   {"line", first_line + m.line - 1},
                                   {"origin", source["origin"]},
                                   {"token", m.token},
                                   {"code", m.excerpt}}})});
    }
  }
  return out;
}

std::vector<Finding> watched_findings(const json& findings) {
  std::vector<Finding> out;
  for (const json& f : findings) out.push_back({f["id"], f["severity"], as_items(f["evidence"])});
  return out;
}

std::vector<Finding> judge_probe(const json& probe, const json& reference_trace, double tolerance,
                                 const protocol::Detection& detection) {
  std::vector<Finding> out;
  if (probe.contains("skipped")) return out;
  const double repeat = protocol::error_from_json(probe["repeat_error"]);
  if (!(repeat <= tolerance)) {
    out.push_back(
        finding("call_dependent", "error",
                {{"why", "two calls on the same inputs differ"}, {"scaled_error", repeat}, {"tolerance", tolerance}}));
  }
  if (probe["output_reuse"].get<bool>()) {
    out.push_back(
        finding("output_reuse", "warning", {{"why", "two successive calls returned outputs sharing storage"}}));
  }
  const json& poisoned = probe["poisoned"];
  const double poison_error = protocol::error_from_json(poisoned["error"]);
  if (poisoned["nan_introduced"].get<std::int64_t>() > 0) {
    out.push_back(finding("uninitialized_output", "error",
                          {{"why", "output elements read back the poison put in memory before the call"},
                           {"elements_unwritten", poisoned["nan_introduced"]},
                           {"elements", poisoned["elements"]}}));
  } else if (!(poison_error <= tolerance)) {
    out.push_back(finding("uninitialized_output", "error",
                          {{"why", "the output changes with what memory held before the call"},
                           {"scaled_error", poison_error},
                           {"tolerance", tolerance}}));
  }
  if (probe.contains("trace")) {
    judge_trace(probe["trace"], reference_trace, probe.value("library_calls", json::array()), detection, out);
  }
  return out;
}

std::optional<Finding> judge_floor(double candidate_seconds, double copy_seconds, std::int64_t output_bytes,
                                   const protocol::Detection& detection) {
  const double floor = detection.floor_fraction * copy_seconds;
  if (!(candidate_seconds < floor)) return std::nullopt;
  return finding("timing_anomaly", "error",
                 {{"why", "faster than writing its output bytes once could be"},
                  {"candidate_seconds", candidate_seconds},
                  {"floor_seconds", floor},
                  {"copy_seconds", copy_seconds},
                  {"output_bytes", output_bytes}});
}

std::optional<Finding> judge_observed_ops(const json& ops) {
  if (!ops.contains("timed") || !ops.contains("traced")) return std::nullopt;
  const std::set<std::string> traced = ops["traced"].get<std::set<std::string>>();
  constexpr size_t kNamed = 16;
  json only_timed = json::array(), traced_compute = json::array();
  for (const std::string& op : ops["timed"].get<std::set<std::string>>()) {
    if (!traced.count(op) && !non_compute(op) && only_timed.size() < kNamed) only_timed.push_back(op);
  }
  if (only_timed.empty()) return std::nullopt;
  for (const std::string& op : traced) {
    if (!non_compute(op) && traced_compute.size() < kNamed) traced_compute.push_back(op);
  }
  return finding("watched_only", "error",
                 {{"why", "the timed calls ran compute ops its traced (observed) call did not"},
                  {"ops_only_when_timed", only_timed},
                  {"traced_compute_ops", traced_compute}});
}

std::optional<Finding> judge_uneven_calls(const std::vector<double>& baseline, const std::vector<double>& candidate,
                                          int sets) {
  // The candidate's rounds 25% above its median, and 15% more so than the baseline's (noise lifts
  // both sides' rounds alike).
  constexpr double kExcess = 1.25, kMargin = 1.15;
  constexpr size_t kRounds = 5;
  if (sets < 2 || baseline.size() < kRounds * sets || candidate.size() < kRounds * sets) return std::nullopt;
  const double candidate_call = measure::median(candidate), baseline_call = measure::median(baseline);
  const double candidate_round = per_call_from_rounds(candidate, sets),
               baseline_round = per_call_from_rounds(baseline, sets);
  const double excess = candidate_round / candidate_call, baseline_excess = baseline_round / baseline_call;
  if (excess < kExcess || excess < kMargin * baseline_excess) return std::nullopt;
  return finding(
      "uneven_calls", "warning",
      {{"why", "its per-call median is well below its time per call over whole rounds: some calls do work for others"},
       {"median_seconds", candidate_call},
       {"per_call_over_rounds_seconds", candidate_round},
       {"baseline_excess", baseline_excess},
       {"speedup_by_median", baseline_call / candidate_call},
       {"speedup_over_rounds", baseline_round / candidate_round}});
}

void merge(std::vector<Finding>& into, std::vector<Finding> more) {
  for (Finding& f : more) {
    auto same = std::find_if(into.begin(), into.end(), [&](const Finding& known) { return known.id == f.id; });
    if (same == into.end()) {
      f.evidence = as_items(f.evidence);
      into.push_back(std::move(f));
      continue;
    }
    same->evidence = as_items(same->evidence);
    for (json& item : as_items(f.evidence)) same->evidence.push_back(std::move(item));
    if (f.severity == "error") same->severity = "error";
  }
}

namespace {

// The only error is no_custom_kernel for a candidate none of whose own code ran and that hid no
// library work (judge_trace's "own_code": "none"): correct, honest, and not a kernel.
bool only_plain_pytorch(const std::vector<Finding>& findings) {
  bool plain = false;
  for (const Finding& f : findings) {
    if (f.severity != "error") continue;
    if (f.id != "no_custom_kernel") return false;
    for (const json& item : as_items(f.evidence)) {
      if (item.value("own_code", "") != "none") return false;
    }
    plain = true;
  }
  return plain;
}

}  // namespace

void settle(protocol::Record& record) {
  using protocol::Verdict;
  if (record.verdict == Verdict::incorrect) {
    for (Finding& f : record.findings) {
      if (f.id == "precision_downgrade" && f.severity == "warning") {
        f.severity = "error";
        f.evidence.push_back(
            {{"source", "verdict"}, {"why", "low-precision evidence in a candidate that fails the tolerance"}});
      }
    }
  }
  if (record.verdict != Verdict::pass && record.verdict != Verdict::incorrect) return;
  std::string ids;
  for (const Finding& f : record.findings) {
    if (f.severity == "error" && f.id != "distribution_specific") ids += (ids.empty() ? "" : ", ") + f.id;
  }
  if (ids.empty()) return;
  if (record.verdict == Verdict::pass && only_plain_pytorch(record.findings)) {
    record.verdict = Verdict::no_kernel;
    record.verdict_reason = "no kernel of its own did the work: PyTorch's ops computed every output, in plain sight";
    return;
  }
  const std::string before =
      record.verdict == Verdict::incorrect ? " (and incorrect: " + record.verdict_reason + ")" : "";
  record.verdict = Verdict::hack;
  record.verdict_reason = ids + before;
}

}  // namespace kbv::hacks
