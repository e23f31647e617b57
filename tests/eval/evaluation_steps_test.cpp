// The evaluation's steps in their order (eval/evaluation.h), against scripted workers: each answers
// every command the way a worker does, from a few numbers, and logs what it was asked. The order is
// the protocol's: nothing of the candidate runs before its text is screened; the reference's draws,
// baseline and floor are done before the candidate is imported; the candidate's worker is idle and
// the previous one reaped before anything is timed; nothing is timed after the candidate's timing;
// the probe follows that timing; the candidate's teardown runs beside its timed outputs' checks.
// The real workers' answers are the e2e tests'.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "kbv/common/remove_tree.h"
#include "kbv/eval/evaluation.h"
#include "kbv/eval/paired_timing.h"
#include "kbv/eval/reference_side.h"
#include "kbv/eval/worker_port.h"
#include "kbv/protocol/protocol.h"

namespace kbv::eval {
namespace {

using nlohmann::json;
using Log = std::vector<std::string>;

// What the script's workers say.
struct Script {
  double repeat_error = 0;                                    // the reference's second call on the first draw
  std::string candidate_fails_at;                             // a command the candidate answers with runtime_error
  double reference_seconds = 2e-3, candidate_seconds = 1e-3;  // each timed call
};

class ScriptedWorker : public WorkerPort {
 public:
  ScriptedWorker(std::string role, Log& log, const Script& script)
      : role_(std::move(role)), log_(log), script_(script) {}

  Reply request(const json& command, std::chrono::duration<double>, Outputs, const Attachments&) override {
    const std::string cmd = command.at("cmd");
    log_.push_back(role_ + " " + cmd);
    if (cmd == script_.candidate_fails_at && role_ == "candidate") {
      throw WorkerFailed(ipc::FailureKind::runtime_error, "ModelNew.forward raised");
    }
    return answer(cmd, command);
  }
  void post(const json& command, std::chrono::duration<double>) override {
    log_.push_back(role_ + " post " + command.at("cmd").get<std::string>());
    posted_ = answer(command.at("cmd"), command);
  }
  void settle() override { log_.push_back(role_ + " settle"); }
  Reply collect() override {
    log_.push_back(role_ + " collect");
    return std::move(posted_);
  }
  void begin_shutdown() override { log_.push_back(role_ + " begin_shutdown"); }
  void shutdown() override { log_.push_back(role_ + " shutdown"); }
  std::string log_tail() const override { return ""; }
  json containment() const override { return nullptr; }
  std::optional<CpuReading> cpu_time() const override { return std::nullopt; }
  int region_fd() const override { return -1; }

 private:
  static json memory() { return {{"peak_bytes", 1 << 20}, {"transient_peak_bytes", 0}, {"held_output_bytes", 16}}; }

  Reply answer(const std::string& cmd, const json& command) {
    Reply reply;
    json& h = reply.header;
    h["status"] = "ok";
    if (cmd == "load") {
      h["versions"] = {{"torch", "scripted"}};
      h["footprint_bytes"] = 0;
    } else if (cmd == "check" && role_ == "reference") {
      h["checksum"] = command.at("draw").at("seed");
      h["results"] = json::array({{{"output_bytes", 16}, {"all_finite", true}, {"rms", {1.0}}}});
      for (size_t mode = 1; mode < command.at("modes").size(); ++mode) {
        h["results"].push_back({{"error", mode == 1 ? script_.repeat_error : 0.0}});
      }
    } else if (cmd == "check") {
      h["checksum"] = command.at("draw").at("seed");
      const at::Tensor output = torch::ones({4});
      h["results"] = json::array({{{"outputs", {ipc::encode(output).meta}}}});
      reply.tensors.push_back(output);
    } else if (cmd == "compare") {
      h["comparison"] = {{"error", 0.0}, {"allclose", true}};
    } else if (cmd == "warmup") {
      h["clock"] = "scripted";
    } else if (cmd == "flags") {
      h["flags"] = {{"cublas", true}, {"cudnn", true}};
    } else if (cmd == "timed_calls") {
      const double seconds = role_ == "reference" ? script_.reference_seconds : script_.candidate_seconds;
      h["results"] = json::array();
      for (size_t i = 0; i < command.at("calls").size(); ++i) {
        json result = {{"seconds", seconds}, {"stream_seconds", seconds}, {"launch_seconds", 1e-5}};
        if (command.at("points").get<int>() > 0) {
          result["sketch_seed"] = i;
          result["outputs"] = {ipc::encode(torch::ones({4})).meta};
          reply.tensors.push_back(torch::ones({4}));
        }
        h["results"].push_back(result);
      }
      h["cpu"] = {{"process_seconds", 0.0}, {"main_thread_seconds", 0.0}, {"other_threads_in_calls_seconds", 0.0}};
    } else if (cmd == "sketches") {
      h["results"] = json::array();
      for (size_t i = 0; i < command.at("calls").size(); ++i) {
        h["results"].push_back({{"rms", {1.0}}});
        reply.tensors.push_back(torch::ones({4}));
      }
    } else if (cmd == "memory") {
      h.update(memory());
    } else if (cmd == "floor") {
      h["copy_seconds"] = 1e-6;
    } else if (cmd == "trace") {
      h["trace"] = {{"library_ops", json::object()}, {"own_seconds", 0.0}, {"extension_calls", json::array()}};
    } else if (cmd == "probe") {
      h["probe"] = {{"repeat_error", 0.0},
                    {"output_reuse", false},
                    {"poisoned", {{"error", 0.0}, {"nan_introduced", 0}, {"elements", 4}}}};
      h["outputs"] = {ipc::encode(torch::ones({4})).meta};
      reply.tensors.push_back(torch::ones({4}));
    } else if (cmd == "findings") {
      h["findings"] = json::array();
      h["ops"] = json::object();
    } else if (cmd == "screen") {
      h["findings"] = json::array();
    }
    return reply;
  }

  std::string role_;
  Log& log_;
  const Script& script_;
  Reply posted_;
};

class EvaluationSteps : public ::testing::Test {
 protected:
  void SetUp() override {
    folder_ = std::filesystem::temp_directory_path() / ("kbv_steps_" + std::to_string(::getpid()));
    std::filesystem::create_directories(folder_);
    for (const char* name : {"problem.py", "candidate.py"})
      std::ofstream(folder_ / name) << "# read by no one: the workers are scripted\n";
  }
  void TearDown() override { remove_tree(folder_.string()); }

  // One evaluation of a scripted candidate against a scripted reference, with a previous
  // candidate's worker left to reap (kbv run's relay).
  protocol::Record evaluate_scripted(const Script& script, bool paired = false) {
    EvalRequest request;
    request.problem = (folder_ / "problem.py").string();
    request.candidate = (folder_ / "candidate.py").string();
    request.protocol = protocol::verified();
    request.protocol.timing.paired = paired;
    request.launch.sandbox = false;
    ReferenceConfig config;
    config.problem = request.problem;
    config.protocol = request.protocol;
    ReferenceSide reference(config, std::make_unique<ScriptedWorker>("reference", log_, script),
                            ReferenceSide::Start::posted);
    WorkerRelay relay;
    relay.ready = std::make_unique<ScriptedWorker>("candidate", log_, script);
    relay.leaving = std::make_unique<ScriptedWorker>("previous", log_, script);
    protocol::Record record = evaluate(request, reference, &relay);
    EXPECT_TRUE(relay.leaving) << "the candidate's worker is left in the relay, for the next evaluation to reap";
    return record;
  }

  // Where `entry` first (or last) is in the log; the log's size when it is not there.
  size_t first(const std::string& entry) const { return std::find(log_.begin(), log_.end(), entry) - log_.begin(); }
  size_t last(const std::string& entry) const {
    const auto found = std::find(log_.rbegin(), log_.rend(), entry);
    return found == log_.rend() ? log_.size() : log_.size() - 1 - (found - log_.rbegin());
  }
  bool has(const std::string& entry) const { return first(entry) < log_.size(); }
  std::string dump() const {
    std::string text;
    for (const std::string& entry : log_) text += entry + "\n";
    return text;
  }

  std::filesystem::path folder_;
  Log log_;
};

TEST_F(EvaluationSteps, RunInTheProtocolsOrder) {
  const protocol::Record record = evaluate_scripted({});
  ASSERT_EQ(record.verdict, protocol::Verdict::pass) << record.verdict_reason << "\n" << dump();
  ASSERT_TRUE(record.speedup);
  EXPECT_DOUBLE_EQ(*record.speedup, 2.0);

  // The reference's side first: loaded, its draws computed, its baseline and floor timed, traced.
  EXPECT_LT(first("reference collect"), first("reference check"));
  EXPECT_LT(last("reference check"), first("reference timed_calls"));
  EXPECT_LT(last("reference timed_calls"), first("reference floor"));
  EXPECT_LT(first("reference floor"), first("reference trace")) << "traced after everything the reference times";
  // Nothing else runs while the baseline is timed: the candidate's worker idle, the previous one reaped.
  EXPECT_LT(first("candidate settle"), first("reference timed_calls"));
  EXPECT_LT(first("previous shutdown"), first("reference timed_calls"));
  // The candidate: its text screened before any of its code runs, imported after the reference's
  // timed steps, then checked, timed (nothing timed after), probed and its findings gathered.
  EXPECT_LT(first("candidate screen"), first("candidate load"));
  EXPECT_LT(first("reference trace"), first("candidate screen"));
  EXPECT_LT(last("candidate check"), first("candidate timed_calls"));
  EXPECT_GT(first("candidate timed_calls"), last("reference timed_calls"));
  EXPECT_GT(first("candidate timed_calls"), last("reference floor"));
  EXPECT_LT(last("candidate timed_calls"), first("candidate probe"));
  EXPECT_LT(first("candidate probe"), first("candidate findings"));
  // Its teardown begins before the reference checks its timed outputs, and ends in the next
  // evaluation (the relay): never here.
  EXPECT_LT(first("candidate begin_shutdown"), first("reference sketches"));
  EXPECT_FALSE(has("candidate shutdown")) << dump();
  // Every check the candidate answered was compared in the reference's worker.
  EXPECT_EQ(std::count(log_.begin(), log_.end(), "candidate check"),
            std::count(log_.begin(), log_.end(), "reference compare") - 1)
      << "one comparison more: the probe's refreshed call";
}

TEST_F(EvaluationSteps, ACandidateThatFailsItsChecksIsNeitherTimedNorProbed) {
  const protocol::Record record = evaluate_scripted({.repeat_error = 0, .candidate_fails_at = "check"});
  EXPECT_EQ(record.verdict, protocol::Verdict::runtime_error);
  EXPECT_FALSE(has("candidate timed_calls")) << dump();
  EXPECT_FALSE(has("candidate probe"));
  EXPECT_FALSE(has("reference sketches"));
  EXPECT_TRUE(has("candidate begin_shutdown"));
  EXPECT_FALSE(record.speedup);
}

TEST_F(EvaluationSteps, AStochasticReferenceEndsItBeforeTheCandidateRuns) {
  const protocol::Record record = evaluate_scripted({.repeat_error = 0.5, .candidate_fails_at = ""});
  EXPECT_EQ(record.verdict, protocol::Verdict::unverifiable);
  EXPECT_FALSE(has("candidate screen")) << dump();
  EXPECT_FALSE(has("candidate load"));
  EXPECT_FALSE(has("reference timed_calls"));
}

// Paired timing: the baseline is timed in the candidate's rounds, after its checks, each round
// one batch of each side; the reference is traced after them; the speedup is the rounds' median.
TEST_F(EvaluationSteps, PairedTimingAlternatesTheSidesAfterTheCandidatesChecks) {
  const protocol::Record record = evaluate_scripted({}, /*paired=*/true);
  ASSERT_EQ(record.verdict, protocol::Verdict::pass) << record.verdict_reason << "\n" << dump();
  ASSERT_TRUE(record.speedup);
  EXPECT_DOUBLE_EQ(*record.speedup, 2.0);
  ASSERT_GE(record.round_ratios.size(), static_cast<size_t>(kMinRounds));
  for (const double ratio : record.round_ratios) EXPECT_DOUBLE_EQ(ratio, 2.0);
  ASSERT_TRUE(record.speedup_ci_low);
  EXPECT_DOUBLE_EQ(*record.speedup_ci_low, 2.0);

  EXPECT_LT(last("candidate check"), first("reference timed_calls")) << dump();
  EXPECT_LT(first("reference warmup"), first("candidate warmup")) << "both warm before the first round";
  EXPECT_LT(first("candidate warmup"), first("reference timed_calls"));
  EXPECT_LT(first("candidate warmup"), first("candidate timed_calls"));
  // Each round times each side once: the two sides' batches alternate in pairs.
  std::vector<std::string> batches;
  for (const std::string& entry : log_) {
    if (entry == "reference timed_calls" || entry == "candidate timed_calls") batches.push_back(entry);
  }
  ASSERT_EQ(batches.size(), 2 * record.round_ratios.size());
  for (size_t round = 0; round < record.round_ratios.size(); ++round) {
    EXPECT_NE(batches[2 * round], batches[2 * round + 1]) << "round " << round << "\n" << dump();
  }
  EXPECT_LT(last("reference timed_calls"), first("reference memory"));
  EXPECT_LT(first("reference memory"), first("reference drop_pool"));
  EXPECT_LT(last("reference timed_calls"), first("reference trace")) << "traced after everything the reference times";
  EXPECT_LT(first("reference trace"), first("candidate probe"));
}

TEST_F(EvaluationSteps, ACandidateThatFailsInPairedRoundsLeavesTheReferencesPoolLetGo) {
  const protocol::Record record = evaluate_scripted({.candidate_fails_at = "timed_calls"}, /*paired=*/true);
  EXPECT_EQ(record.verdict, protocol::Verdict::runtime_error) << dump();
  EXPECT_TRUE(has("reference drop_pool")) << dump();
  EXPECT_FALSE(has("reference memory")) << "no baseline memory from rounds that did not complete";
  EXPECT_FALSE(record.speedup);
}

}  // namespace
}  // namespace kbv::eval
