#include "sample_store.h"

#include <unistd.h>

#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

#include "kbv/store/store.h"

namespace kbv::report::fixtures {
namespace {

using kbv::store::Store;
using nlohmann::json;

struct Outcome {
  std::string verdict;
  std::optional<double> speedup;
  std::optional<double> peak_ratio;
  std::optional<bool> raises_peak;
  std::vector<std::pair<std::string, std::string>> findings;  // id, severity
  std::string reason = "";
};

// A record shaped like `kbv eval --json`'s, with the fields the store indexes.
json record(const std::string& protocol, const Outcome& o) {
  json r = {{"problem", "p.py"},         {"candidate", "c.py"},
            {"device", "cuda"},          {"protocol", {{"name", protocol}}},
            {"verdict", o.verdict},      {"verdict_reason", o.reason},
            {"findings", json::array()}, {"timing", json::object()},
            {"memory", json::object()},  {"wall_seconds", 1.0}};
  if (o.speedup) {
    r["timing"] = {{"baseline_ms", 1.0},
                   {"candidate_ms", 1.0 / *o.speedup},
                   {"speedup", *o.speedup},
                   {"speedup_ci", {0.9 * *o.speedup, 1.1 * *o.speedup}}};
  }
  if (o.peak_ratio) r["memory"]["peak_ratio"] = *o.peak_ratio;
  if (o.raises_peak) r["memory"]["raises_peak"] = *o.raises_peak;
  for (const auto& [id, severity] : o.findings)
    r["findings"].push_back({{"id", id}, {"severity", severity}, {"evidence", {}}});
  return r;
}

void add(Store& store, std::int64_t candidate, const std::string& protocol, const Outcome& outcome) {
  store.add_record(candidate, protocol, "cuda", std::nullopt, store.environment({{"device", "cuda"}}),
                   record(protocol, outcome));
}

// A finding shaped like `kbv audit --json`'s.
json audit_finding(const std::string& id, bool cured) {
  return {{"id", id}, {"cured_by_verified", cured}, {"evidence", json::object()}};
}

}  // namespace

std::filesystem::path fresh_dir(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / ("kbv_report_test_" + std::to_string(getpid())) / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

std::filesystem::path write_sample_store(const std::filesystem::path& dir) {
  const auto path = dir / "results.sqlite";
  Store store(path.string());
  const auto a = store.run("model-a");
  const auto relu = store.problem({"/kb/level1/1_ReLU.py", 1, 1, "ReLU", "k1"});
  const auto softmax = store.problem({"/kb/level1/2_Softmax.py", 1, 2, "Softmax", "k2"});
  const auto conv = store.problem({"/kb/level2/1_Conv.py", 2, 1, "Conv", "k3"});
  // kbv audit on cuda. ReLU: one cured finding. Softmax: a cured and an uncured one, so c3 and c4
  // below are on a problem with an uncured defect. Conv: its current content (k3) was never
  // audited; of two audits of older content the latest, clean, applies. ReLU's older content has
  // an uncured finding, written last, that must not apply: the current content's audit does.
  store.add_audit(relu, "k1", "cuda", json::array({audit_finding("identity_under_inputs", true)}), "");
  store.add_audit(softmax, "k2", "cuda",
                  json::array({audit_finding("near_zero_output", true), audit_finding("constant_output", false)}), "");
  store.add_audit(conv, "k3-older", "cuda", json::array({audit_finding("unused_input", false)}), "");
  store.add_audit(conv, "k3-old", "cuda", json::array(), "");
  store.add_audit(relu, "k1-old", "cuda", json::array({audit_finding("constant_output", false)}), "");
  const auto c1 = store.candidate(a, relu, {"/s/a/level_1_problem_1_sample_0_kernel.py", 0, "a1"});
  const auto c2 = store.candidate(a, relu, {"/s/a/level_1_problem_1_sample_1_kernel.py", 1, "a2"});
  const auto c3 = store.candidate(a, softmax, {"/s/a/level_1_problem_2_sample_0_kernel.py", 0, "a3"});
  const auto c4 = store.candidate(a, softmax, {"/s/a/level_1_problem_2_sample_1_kernel.py", 1, "a4"});
  const auto c5 = store.candidate(a, conv, {"/s/a/level_2_problem_1_sample_0_kernel.py", 0, "a5"});
  const auto c6 = store.candidate(a, conv, {"/s/a/level_2_problem_1_sample_1_kernel.py", 1, "a6"});
  // verified: three passes (2.0, 0.5 and exactly 1.0), a hack that would have been 10x, a wrong
  // result and a build failure.
  add(store, c1, "verified", {"pass", 2.0, 1.0, false, {}});
  add(store, c2, "verified", {"pass", 0.5, 2.0, true, {{"library_fallback", "warning"}}});
  add(store, c3, "verified", {"pass", 1.0, 0.5, false, {}});
  add(store, c4, "verified",
      {"hack", 10.0, 1.0, false, {{"timing_anomaly", "error"}, {"library_fallback", "warning"}}, "timing_anomaly"});
  add(store, c5, "verified", {"incorrect", std::nullopt, std::nullopt, std::nullopt, {}});
  add(store, c6, "verified", {"compile_error", std::nullopt, std::nullopt, std::nullopt, {}});
  // kernelbench on c1..c5 (c6 has no kernelbench record): everything passes, the hack included.
  add(store, c1, "kernelbench", {"pass", 2.2, 1.0, false, {}});
  add(store, c2, "kernelbench", {"pass", 0.6, 2.0, true, {}});
  add(store, c3, "kernelbench", {"pass", 1.1, 0.5, false, {}});
  add(store, c4, "kernelbench", {"pass", 10.0, 1.0, false, {}});
  add(store, c5, "kernelbench", {"pass", 1.2, 1.0, false, {}});

  // A failure that a later record superseded: no longer listed.
  store.failure(c1, "verified", "cuda", "reference worker died");

  const auto b = store.run("model-b");
  const auto b1 = store.candidate(b, relu, {"/s/b/level_1_problem_1_sample_0_kernel.py", 0, "b1"});
  store.failure(b1, "verified", "cuda", "first attempt");
  store.failure(b1, "verified", "cuda", "reference worker died");  // the latest is listed
  store.unmatched(b, "/s/b/notes | draft.txt", "no problem matches its name");

  const auto c = store.run("model-c");
  const auto custom = store.problem({"/kb/custom/7_Thing.py", std::nullopt, 7, "Thing", "k4"});
  // Audited on another device only: not audited for its cuda record.
  store.add_audit(custom, "k4", "cpu", json::array({audit_finding("stochastic_reference", false)}), "");
  add(store, store.candidate(c, custom, {"/s/c/thing.py", std::nullopt, "c1"}), "verified",
      {"timeout", {}, {}, {}, {}});

  // The invocations that wrote them: a kbv run over model-a and model-c on two GPUs, a kbv serve
  // for model-a; none for model-b.
  store.session("run", "cuda", {a, c}, 100.0,
                json::array({{{"lane", "0"}, {"wall_seconds", 100.0}, {"device_seconds", 80.0}, {"evaluations", 10}},
                             {{"lane", "1"}, {"wall_seconds", 90.0}, {"device_seconds", 45.0}, {"evaluations", 5}}}));
  store.session("serve", "cuda", {a}, 50.0,
                json::array({{{"lane", "0"}, {"wall_seconds", 50.0}, {"device_seconds", 10.0}, {"evaluations", 2}}}));
  return path;
}

std::filesystem::path write_failing_store(const std::filesystem::path& dir) {
  const auto path = dir / "failing.sqlite";
  Store store(path.string());
  const auto run = store.run("all-fail");
  const auto problem = store.problem({"/kb/level1/3_Sum.py", 1, 3, "Sum", "k"});
  store.add_audit(problem, "k", "cuda", json::array(), "reference raised: shape mismatch");
  add(store, store.candidate(run, problem, {"/s/f/0.py", 0, "f0"}), "verified", {"crash", {}, {}, {}, {}});
  add(store, store.candidate(run, problem, {"/s/f/1.py", 1, "f1"}), "kernelbench", {"runtime_error", {}, {}, {}, {}});
  return path;
}

}  // namespace kbv::report::fixtures
