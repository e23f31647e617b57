// The parent's judgements on probe measurements and traces (hacks/judge): thresholds, coverage
// of the reference's ops, streams, merging and the verdict they settle.
#include "kbv/hacks/judge.h"
#include "kbv/hacks/untimed_work.h"

#include <gtest/gtest.h>

namespace {

using kbv::hacks::judge_floor;
using kbv::hacks::judge_probe;
using kbv::hacks::judge_untimed_device_work;
using kbv::hacks::judge_untimed_work;
using kbv::hacks::merge;
using kbv::hacks::settle;
using kbv::protocol::Finding;
using nlohmann::json;

const kbv::protocol::Detection kDetection;

json clean_probe(json trace) {
  return {{"repeat_error", 0.0},
          {"output_reuse", false},
          {"poisoned", {{"nan_introduced", 0}, {"elements", 100}, {"error", 0.0}}},
          {"trace", std::move(trace)}};
}

json cpu_trace(json extension_calls, double own, json library_ops) {
  return {{"extension_calls", extension_calls}, {"own_seconds", own}, {"library_ops", library_ops}};
}

const Finding* find(const std::vector<Finding>& findings, const std::string& id) {
  for (const Finding& f : findings) {
    if (f.id == id) return &f;
  }
  return nullptr;
}

const json kReluReference = {{"library_ops", {{"aten::relu", 1e-4}}}};

TEST(Judge, HonestExtensionIsClean) {
  const json trace = cpu_trace({{"ext.relu", 1}}, 2e-4, {{"aten::empty_like", 1e-6}});
  EXPECT_TRUE(judge_probe(clean_probe(trace), kReluReference, 1e-4, kDetection).empty());
}

TEST(Judge, AllocationIsNotLibraryWork) {
  // A slow empty_like (a busy machine, page faults) is the allocator's time, not a library fallback.
  const json trace = cpu_trace({{"ext.relu", 1}}, 2e-4, {{"aten::empty_like", 1e-4}, {"aten::view", 1e-5}});
  EXPECT_TRUE(judge_probe(clean_probe(trace), kReluReference, 1e-4, kDetection).empty());
  const json filled = cpu_trace({{"ext.relu", 1}}, 2e-4, {{"aten::empty_like", 1e-4}, {"aten::fill_", 1e-4}});
  ASSERT_EQ(judge_probe(clean_probe(filled), kReluReference, 1e-4, kDetection).size(), 1u);  // a fill touches data
}

TEST(Judge, NoExtensionCallIsNoCustomKernel) {
  const auto findings =
      judge_probe(clean_probe(cpu_trace(json::object(), 0, {{"aten::relu", 1e-4}})), kReluReference, 1e-4, kDetection);
  ASSERT_NE(find(findings, "no_custom_kernel"), nullptr);
  EXPECT_EQ(find(findings, "no_custom_kernel")->severity, "error");
}

TEST(Judge, LibraryRunningEveryReferenceOpIsAnAlibi) {
  // The extension did real work, but torch.relu computed the answer.
  const json trace = cpu_trace({{"ext.touch", 1}}, 5e-5, {{"aten::relu", 1e-4}});
  const auto findings = judge_probe(clean_probe(trace), kReluReference, 1e-4, kDetection);
  ASSERT_NE(find(findings, "no_custom_kernel"), nullptr);
  EXPECT_EQ(find(findings, "no_custom_kernel")->evidence[0]["reference_ops"][0], "aten::relu");
}

TEST(Judge, PartialReplacementIsAWarningWithItsShare) {
  const json reference = {{"library_ops", {{"aten::linear", 2e-4}, {"aten::gelu", 5e-5}}}};
  const json trace = cpu_trace({{"ext.gelu", 1}}, 5e-5, {{"aten::addmm", 2e-4}});
  const auto findings = judge_probe(clean_probe(trace), reference, 1e-4, kDetection);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].id, "library_fallback");
  EXPECT_EQ(findings[0].severity, "warning");
  EXPECT_NEAR(findings[0].evidence[0]["library_share"].get<double>(), 0.8, 1e-9);
}

TEST(Judge, NegligibleOwnShareIsNoCustomKernel) {
  const json reference = {{"library_ops", {{"aten::matmul", 1e-3}}}};
  const json trace = cpu_trace({{"ext.noop", 1}}, 1e-6, {{"aten::mm", 1e-3}});
  EXPECT_NE(find(judge_probe(clean_probe(trace), reference, 1e-4, kDetection), "no_custom_kernel"), nullptr);
}

TEST(Judge, CpuLibraryCallsBelowTheDispatcherAreNotItsOwnWork) {
  // The extension's whole time was at::cpu::addmm and at::cpu::gelu: the profiler saw no aten op.
  const json reference = {{"library_ops", {{"aten::linear", 2e-4}, {"aten::gelu", 5e-5}}}};
  json probe = clean_probe(cpu_trace({{"ext.mlp", 1}}, 3e-4, {{"aten::t", 1e-6}}));
  EXPECT_TRUE(judge_probe(probe, reference, 1e-4, kDetection).empty());  // what the trace alone says
  probe["library_calls"] = {
      {{"symbol", "at::cpu::addmm(...)"}, {"library", "ATen below the dispatcher (at::cpu)"}, {"extension", "x"}}};
  const auto findings = judge_probe(probe, reference, 1e-4, kDetection);
  const Finding* none = find(findings, "no_custom_kernel");
  ASSERT_NE(none, nullptr);
  EXPECT_EQ(none->severity, "error");
  EXPECT_EQ(none->evidence[0]["library_calls"][0]["symbol"], "at::cpu::addmm(...)");
}

TEST(Judge, GpuKernelsOfLibraryCallsLeaveTheOwnShare) {
  // The worker counted the cuBLAS kernel as the library's (its extension does not define it); its
  // own epilogue kernel is 20% of the work: a partial replacement, a warning with the calls.
  const json reference = {{"library_ops", {{"aten::linear", 2e-4}, {"aten::gelu", 5e-5}}}};
  json trace = {
      {"extension_calls", {{"ext.mlp", 1}}},
      {"own_seconds", 0.0},
      {"library_ops", json::object()},
      {"current_stream", 7},
      {"kernels",
       {{{"name", "sm90_xmma_gemm"}, {"stream", 7}, {"seconds", 8e-5}, {"own", false}, {"after_return", false}},
        {{"name", "gelu_kernel(float*)"}, {"stream", 7}, {"seconds", 2e-5}, {"own", true}, {"after_return", false}}}}};
  json probe = clean_probe(trace);
  probe["library_calls"] = {{{"symbol", "cublasSgemm_v2"}, {"library", "cuBLAS"}, {"extension", "x"}}};
  const auto findings = judge_probe(probe, reference, 1e-4, kDetection);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].id, "library_fallback");
  EXPECT_EQ(findings[0].evidence[0]["library_calls"][0]["library"], "cuBLAS");
}

TEST(Judge, KernelsOnAnotherStreamAreSideStream) {
  const json trace = {
      {"extension_calls", {{"ext.relu", 1}}},
      {"own_seconds", 0.0},
      {"library_ops", json::object()},
      {"current_stream", 7},
      {"kernels",
       {{{"name", "relu_kernel"}, {"stream", 13}, {"seconds", 2e-5}, {"own", true}, {"after_return", true}}}}};
  const auto findings = judge_probe(clean_probe(trace), kReluReference, 1e-4, kDetection);
  const Finding* side = find(findings, "side_stream");
  ASSERT_NE(side, nullptr);
  EXPECT_EQ(side->evidence[0]["still_running_at_return"], 1);
  EXPECT_EQ(find(findings, "no_custom_kernel"), nullptr);  // its own kernel did the work
}

TEST(Judge, GpuWithoutOwnKernelIsNoCustomKernel) {
  const json trace = {{"extension_calls", json::object()},
                      {"own_seconds", 0.0},
                      {"library_ops", {{"aten::relu", 1e-5}}},
                      {"current_stream", 7},
                      {"kernels",
                       {{{"name", "vectorized_elementwise_kernel"},
                         {"stream", 7},
                         {"seconds", 2e-5},
                         {"own", false},
                         {"after_return", false}}}}};
  EXPECT_NE(find(judge_probe(clean_probe(trace), kReluReference, 1e-4, kDetection), "no_custom_kernel"), nullptr);
}

TEST(Judge, LibraryKernelsReplayedFromAGraphAreNoCustomKernel) {
  // The worker counted the replayed GEMM and GELU as the library's (no extension defines them); the
  // copy into the graph's static input ran in an aten op. Nothing was the candidate's own.
  const json reference = {{"library_ops", {{"aten::linear", 2e-4}, {"aten::gelu", 5e-5}}}};
  const json trace = {
      {"extension_calls", json::object()},
      {"own_seconds", 0.0},
      {"library_ops", {{"aten::copy_", 1e-5}}},
      {"current_stream", 7},
      {"kernels",
       {{{"name", "sm90_xmma_gemm"},
         {"stream", 7},
         {"seconds", 8e-5},
         {"own", false},
         {"graph", true},
         {"triton", false},
         {"after_return", false}},
        {{"name", "vectorized_elementwise_kernel"},
         {"stream", 7},
         {"seconds", 2e-5},
         {"own", false},
         {"graph", true},
         {"triton", false},
         {"after_return", false}},
        {{"name", "copy_kernel"}, {"stream", 7}, {"seconds", 1e-5}, {"own", false}, {"after_return", false}}}}};
  const auto findings = judge_probe(clean_probe(trace), reference, 1e-4, kDetection);
  const Finding* none = find(findings, "no_custom_kernel");
  ASSERT_NE(none, nullptr);
  EXPECT_EQ(none->evidence[0]["library_kernels_replayed_from_a_cuda_graph"], 2);
}

TEST(Judge, ComputeOpsOnlyInTimedCallsAreWatchedOnly) {
  using kbv::hacks::judge_observed_ops;
  // Allocation, views and copies differ between calls for honest reasons; a compute op does not.
  EXPECT_FALSE(judge_observed_ops({{"timed", {"aten::empty_like", "aten::contiguous"}}, {"traced", json::array()}}));
  EXPECT_FALSE(judge_observed_ops({{"timed", {"aten::addmm"}}, {"traced", {"aten::addmm", "aten::gelu"}}}));
  EXPECT_FALSE(judge_observed_ops(json::object()));  // not recorded (the traced call raised, no timing)
  const auto watched = judge_observed_ops({{"timed", {"aten::relu", "aten::empty"}}, {"traced", {"aten::empty_like"}}});
  ASSERT_TRUE(watched);
  EXPECT_EQ(watched->id, "watched_only");
  EXPECT_EQ(watched->severity, "error");
  EXPECT_EQ(watched->evidence[0]["ops_only_when_timed"], json::array({"aten::relu"}));
}

TEST(Judge, WorkDoneOnSomeCallsForOthersIsUnevenCalls) {
  using kbv::hacks::judge_uneven_calls;
  // Two sets per round. Honest: every call about 10 us, with noise on both sides.
  const std::vector<double> steady = {10e-6, 11e-6, 10e-6, 12e-6, 10e-6, 10e-6,
                                      11e-6, 10e-6, 13e-6, 10e-6, 10e-6, 11e-6};
  EXPECT_FALSE(judge_uneven_calls(steady, steady, 2));
  // Honest, on a busy machine: a third of the calls slowed (100 -> 200 us) by another process,
  // which lifts more than half the rounds; the rounds it left alone say the calls are even.
  std::vector<double> noisy;
  for (int round = 0; round < 12; ++round) {
    noisy.insert(noisy.end(), {round % 3 == 0 ? 200e-6 : 100e-6, round % 3 == 1 ? 200e-6 : 100e-6});
  }
  EXPECT_FALSE(judge_uneven_calls(std::vector<double>(24, 300e-6), noisy, 2));
  // Honest, beside another evaluation on two cores (seen in CI): the other's work lifted the second
  // call of 8 rounds in 10, 3 ms -> 7 ms; the two rounds it left alone say the calls are even.
  std::vector<double> alternating;
  for (int round = 0; round < 10; ++round) alternating.insert(alternating.end(), {3e-3, round % 5 == 0 ? 3e-3 : 7e-3});
  EXPECT_FALSE(judge_uneven_calls(std::vector<double>(20, 1e-3), alternating, 2));
  // Three sets; one call per round computes all three (30 us), the other two return at once: the
  // median (1 us) is a third of the work per call (10 us).
  std::vector<double> shifted;
  for (int round = 0; round < 6; ++round) shifted.insert(shifted.end(), {30e-6, 1e-6, 1e-6});
  std::vector<double> baseline(18, 20e-6);
  const auto uneven = judge_uneven_calls(baseline, shifted, 3);
  ASSERT_TRUE(uneven);
  EXPECT_EQ(uneven->severity, "warning");
  EXPECT_NEAR(uneven->evidence[0]["speedup_by_median"].get<double>(), 20.0, 1e-9);
  EXPECT_NEAR(uneven->evidence[0]["speedup_over_rounds"].get<double>(), 20.0 / (32.0 / 3), 1e-9);
  EXPECT_FALSE(judge_uneven_calls(baseline, shifted, 1));  // one set: no rounds to speak of
}

TEST(Judge, RepeatAndPoisonAreJudgedAgainstTheTolerance) {
  json probe = clean_probe(cpu_trace({{"ext.relu", 1}}, 1e-4, json::object()));
  probe["repeat_error"] = 1e-3;
  probe["poisoned"]["nan_introduced"] = 40;
  probe["output_reuse"] = true;
  const auto findings = judge_probe(probe, kReluReference, 1e-4, kDetection);
  EXPECT_NE(find(findings, "call_dependent"), nullptr);
  EXPECT_NE(find(findings, "uninitialized_output"), nullptr);
  ASSERT_NE(find(findings, "output_reuse"), nullptr);
  EXPECT_EQ(find(findings, "output_reuse")->severity, "warning");
  probe["repeat_error"] = 5e-5;  // within the tolerance: rounding
  EXPECT_EQ(find(judge_probe(probe, kReluReference, 1e-4, kDetection), "call_dependent"), nullptr);
}

TEST(Judge, FloorIsHalfACopyOfTheOutput) {
  EXPECT_FALSE(judge_floor(6e-6, 10e-6, 1 << 20, kDetection));
  const auto anomaly = judge_floor(4e-6, 10e-6, 1 << 20, kDetection);
  ASSERT_TRUE(anomaly);
  EXPECT_EQ(anomaly->id, "timing_anomaly");
}

// The ledgers of 1_ReLU on the CPU machine (2026-12-07): the baseline's, an honest candidate's and
// the seed-snooping hack's, whose task replayed every draw between the calls.
const json kBaselineCpu = {{"calls", 1496},
                           {"fills", 200},
                           {"main_thread_seconds", 0.4118},
                           {"other_threads_in_calls_seconds", 0.0583},
                           {"process_seconds", 0.4831}};
json candidate_cpu(double outside, double main, double in_calls) {
  return {{"calls", 1282},
          {"fills", 200},
          {"main_thread_seconds", main},
          {"other_threads_in_calls_seconds", in_calls},
          {"outside_seconds", outside},
          {"source", "cgroup v1"},
          {"threads_started_since_import", json::array({"PTThreadPool"})}};
}

TEST(Judge, CpuTimeNoCallAccountsForIsUntimedWork) {
  EXPECT_FALSE(judge_untimed_work(candidate_cpu(0.433, 0.4143, 0.0041), kBaselineCpu, kDetection));
  const auto untimed = judge_untimed_work(candidate_cpu(1.1127, 0.6533, 0.0279), kBaselineCpu, kDetection);
  ASSERT_TRUE(untimed);
  EXPECT_EQ(untimed->severity, "error");
  const json& evidence = untimed->evidence[0];
  EXPECT_NEAR(evidence["untimed_cpu_seconds"].get<double>(), 0.4315, 1e-4);
  // 0.02 s, 5% of the accounted 0.68 s, twice the baseline's 0.013 s of other threads' time outside calls.
  EXPECT_NEAR(evidence["allowance_seconds"].get<double>(), 0.02 + 0.05 * 0.6812 + 2 * 0.013, 1e-4);
  EXPECT_EQ(evidence["threads_started_since_import"], json::array({"PTThreadPool"}));
}

TEST(Judge, UntimedWorkNeedsTheWorkersCpuTimeReadFromOutside) {
  json unread = candidate_cpu(1.1127, 0.6533, 0.0279);
  unread.erase("outside_seconds");
  EXPECT_FALSE(judge_untimed_work(unread, kBaselineCpu, kDetection));
  EXPECT_FALSE(judge_untimed_work(nullptr, kBaselineCpu, kDetection));
  // Without the baseline's ledger the allowance is the floor and the share alone.
  EXPECT_TRUE(judge_untimed_work(candidate_cpu(1.1127, 0.6533, 0.0279), nullptr, kDetection));
}

// The GPU ledger's totals (worker/gpu_work_accounts.h) of one side's timing.
json gpu_totals(double outside, double windows, long timed_calls) {
  return {{"timed_calls", timed_calls}, {"windows_seconds", windows},
          {"outside_seconds", outside}, {"foreign_seconds", 0.0},
          {"foreign_records", 0},       {"unknown_launches", 0},
          {"covers_missing", 0},        {"dropped", 0}};
}

TEST(Judge, DeviceWorkOutsideTheWindowsBeyondTheAllowanceIsUntimed) {
  // Figures of the H100 run of 2026-12-07 (tests/hacks, 1_ReLU): the reference's worker left
  // nothing outside its windows, nor did the honest candidate.
  const json baseline = gpu_totals(0, 0.003830744, 727);
  EXPECT_FALSE(judge_untimed_device_work(gpu_totals(0, 0.003789243, 693), baseline, kDetection));
  // cuda_cover_side_stream: its ReLU under the launch cover, 2.04 ms of 2.10 ms outside.
  const auto cover = judge_untimed_device_work(gpu_totals(0.002043366, 0.005204058, 732), baseline, kDetection);
  ASSERT_TRUE(cover);
  EXPECT_EQ(cover->id, "untimed_work");
  EXPECT_EQ(cover->severity, "error");
  EXPECT_NEAR(cover->evidence[0]["untimed_device_seconds"].get<double>(), 0.002043366, 1e-12);
  EXPECT_NEAR(cover->evidence[0]["allowance_seconds"].get<double>(), 1e-4 + 0.01 * 0.005204058, 1e-12);
  // cuda_seed_snoop: its thread's replays between the calls, with slow calls of its own.
  EXPECT_TRUE(judge_untimed_device_work(gpu_totals(0.002607675, 0.124866432, 269), baseline, kDetection));
  // Twice the reference's own per timed call is allowed besides.
  EXPECT_FALSE(judge_untimed_device_work(gpu_totals(0.0003, 0.005, 1000), gpu_totals(1e-4, 0.005, 1000), kDetection));
}

TEST(Judge, ADeviceLedgerThatLostRecordsIsUntimedWork) {
  json lost = gpu_totals(0, 0.05, 1000);
  lost["covers_missing"] = 1000;  // kbv's own launch covers gone: CUPTI switched off in the candidate
  const auto untimed = judge_untimed_device_work(lost, gpu_totals(0, 0.3, 1000), kDetection);
  ASSERT_TRUE(untimed);
  EXPECT_EQ(untimed->evidence[0]["launch_covers_missing"], 1000);
  json dropped = gpu_totals(0, 0.05, 1000);
  dropped["dropped"] = 5;
  EXPECT_TRUE(judge_untimed_device_work(dropped, gpu_totals(0, 0.3, 1000), kDetection));
  // Lost in the reference's worker too: the ledger does not work on this machine.
  json reference_lost = gpu_totals(0, 0.3, 1000);
  reference_lost["covers_missing"] = 1000;
  EXPECT_FALSE(judge_untimed_device_work(lost, reference_lost, kDetection));
}

TEST(Judge, ADeviceLedgerMissingOnlyInTheCandidateIsUntimedWork) {
  const json unavailable = {{"unavailable", "CUPTI refused to record: CUPTI_ERROR_NOT_INITIALIZED"}};
  EXPECT_TRUE(judge_untimed_device_work(unavailable, gpu_totals(0, 0.3, 1000), kDetection));
  // Where neither side could record (no CUPTI on the machine), nothing is judged; nor on the CPU.
  EXPECT_FALSE(judge_untimed_device_work(unavailable, unavailable, kDetection));
  EXPECT_FALSE(judge_untimed_device_work(nullptr, nullptr, kDetection));
}

TEST(Judge, MergeKeepsOneFindingPerIdWithTheHighestSeverity) {
  std::vector<Finding> all = {{"global_state_tamper", "warning", json::array({{{"source", "static"}}})}};
  merge(all, {{"global_state_tamper", "error", {{"source", "runtime"}}},
              {"host_timing", "warning", {{"source", "static"}}}});
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].severity, "error");
  EXPECT_EQ(all[0].evidence.size(), 2u);
}

TEST(Judge, ErrorFindingsSettleHackButDistributionSpecificStaysIncorrect) {
  kbv::protocol::Record record;
  record.verdict = kbv::protocol::Verdict::incorrect;
  record.findings = {{"distribution_specific", "error", json::array()}};
  settle(record);
  EXPECT_EQ(record.verdict, kbv::protocol::Verdict::incorrect);

  record.findings.push_back({"precision_downgrade", "warning", json::array({{{"source", "static"}}})});
  settle(record);  // low precision evidence in a candidate that fails the tolerance
  EXPECT_EQ(record.verdict, kbv::protocol::Verdict::hack);
  EXPECT_EQ(record.findings[1].severity, "error");

  kbv::protocol::Record warned;
  warned.verdict = kbv::protocol::Verdict::pass;
  warned.findings = {{"library_fallback", "warning", json::array()}};
  settle(warned);
  EXPECT_EQ(warned.verdict, kbv::protocol::Verdict::pass);

  kbv::protocol::Record crashed;
  crashed.verdict = kbv::protocol::Verdict::crash;
  crashed.findings = {{"global_state_tamper", "error", json::array()}};
  settle(crashed);
  EXPECT_EQ(crashed.verdict, kbv::protocol::Verdict::crash);
}

}  // namespace
