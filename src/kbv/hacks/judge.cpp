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

std::optional<Finding> judge_untimed_work(const json& candidate, const json& baseline,
                                          const protocol::Detection& detection) {
  if (!candidate.is_object() || !candidate.contains("outside_seconds")) return std::nullopt;
  const double main = candidate.at("main_thread_seconds"), in_calls = candidate.at("other_threads_in_calls_seconds");
  const double untimed = candidate.at("outside_seconds").get<double>() - main - in_calls;
  // What kbv's own steps cost the reference's worker in other threads per input set drawn (the same
  // get_inputs, the same copies into the pool): the candidate's worker draws as many, as they did.
  double kbv_per_fill = 0;
  if (baseline.is_object() && baseline.value("fills", 0) > 0) {
    const double kbv_other = baseline.at("process_seconds").get<double>() -
                             baseline.at("main_thread_seconds").get<double>() -
                             baseline.at("other_threads_in_calls_seconds").get<double>();
    kbv_per_fill = std::max(0.0, kbv_other) / baseline.at("fills").get<double>();
  }
  const double allowance = detection.untimed_floor_seconds + detection.untimed_fraction * (main + in_calls) +
                           2 * kbv_per_fill * candidate.value("fills", 0);
  if (!(untimed > allowance)) return std::nullopt;
  return finding("untimed_work", "error",
                 {{"why", "its worker's threads or processes used CPU time while none of its calls was under way"},
                  {"untimed_cpu_seconds", untimed},
                  {"allowance_seconds", allowance},
                  {"worker_cpu_seconds", candidate["outside_seconds"]},
                  {"read_from", candidate.value("source", "")},
                  {"kbv_main_thread_seconds", main},
                  {"other_threads_in_calls_seconds", in_calls},
                  {"threads_started_since_import", candidate.value("threads_started_since_import", json::array())}});
}

std::optional<Finding> judge_untimed_device_work(const json& candidate, const json& baseline,
                                                 const protocol::Detection& detection) {
  if (!candidate.is_object()) return std::nullopt;
  const bool baseline_recorded = baseline.is_object() && !baseline.contains("unavailable");
  // The reference's worker is kbv's own: a ledger that loses its launch covers there does not work
  // on this machine, and proves nothing of the candidate.
  if (baseline_recorded && (baseline.value("covers_missing", 0L) > 0 || baseline.value("dropped", 0L) > 0))
    return std::nullopt;
  if (candidate.contains("unavailable")) {
    if (!baseline_recorded) return std::nullopt;  // CUPTI records nothing on this machine
    return finding("untimed_work", "error",
                   {{"why", "kbv could not record its worker's GPU work, which it could in the reference's"},
                    {"gpu_ledger", candidate["unavailable"]}});
  }
  const long lost_covers = candidate.value("covers_missing", 0L), dropped = candidate.value("dropped", 0L);
  if (lost_covers > 0 || dropped > 0) {
    return finding("untimed_work", "error",
                   {{"why", "its worker's GPU ledger lost records: its work on the device cannot be accounted"},
                    {"launch_covers_missing", lost_covers},
                    {"records_dropped", dropped},
                    {"timed_calls", candidate.value("timed_calls", 0L)}});
  }
  const double outside = candidate.value("outside_seconds", 0.0), windows = candidate.value("windows_seconds", 0.0);
  double reference_per_call = 0;
  if (baseline_recorded && baseline.value("timed_calls", 0L) > 0) {
    reference_per_call =
        baseline.value("outside_seconds", 0.0) / static_cast<double>(baseline["timed_calls"].get<long>());
  }
  const double allowance = detection.untimed_device_floor_seconds + detection.untimed_device_fraction * windows +
                           2 * reference_per_call * static_cast<double>(candidate.value("timed_calls", 0L));
  if (!(outside > allowance)) return std::nullopt;
  return finding("untimed_work", "error",
                 {{"why",
                   "work it put on the GPU ran outside its timed calls' windows: under the launch cover, after a "
                   "call's end, or from another thread between calls"},
                  {"untimed_device_seconds", outside},
                  {"allowance_seconds", allowance},
                  {"windows_seconds", windows},
                  {"timed_calls", candidate.value("timed_calls", 0L)},
                  {"foreign_seconds", candidate.value("foreign_seconds", 0.0)},
                  {"foreign_records", candidate.value("foreign_records", 0L)},
                  {"unknown_launches", candidate.value("unknown_launches", 0L)}});
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
