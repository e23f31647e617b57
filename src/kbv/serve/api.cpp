#include "kbv/serve/api.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <random>

#include <nlohmann/json.hpp>

#include "kbv/eval/evaluation.h"

namespace kbv::serve {
namespace {

using nlohmann::json;

HttpResponse reply(int status, const json& body) { return {status, body.dump() + "\n", {}}; }

// The service's start in milliseconds and 32 random bits: a cluster's services, started together,
// can share the millisecond (a Ray test's two did, and answered two requests with one id each).
std::string start_stamp() {
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  char random[9];
  std::snprintf(random, sizeof random, "%08x", std::random_device()());
  return std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(now).count()) + "-" + random;
}

}  // namespace

Api::Api(Service& service, Intake intake) : service_(service), intake_(std::move(intake)), id_prefix_(start_stamp()) {}

HttpResponse Api::operator()(const HttpRequest& request) {
  const auto only = [&](const char* method) { return request.method == method; };
  if (request.path == "/evaluate") {
    if (!only("POST")) return reply(405, {{"error", "POST /evaluate"}});
    return evaluate(request.body);
  }
  if (request.path == "/health") {
    if (!only("GET")) return reply(405, {{"error", "GET /health"}});
    const bool stopping = service_.stopping();
    return reply(stopping ? 503 : 200, {{"status", stopping ? "stopping" : "ok"}, {"version", KBV_VERSION}});
  }
  if (request.path == "/metrics") {
    if (!only("GET")) return reply(405, {{"error", "GET /metrics"}});
    return reply(200, service_.metrics());
  }
  return reply(404, {{"error", "no route " + request.path + " (POST /evaluate, GET /health, GET /metrics)"}});
}

HttpResponse Api::evaluate(const std::string& body) {
  const auto received = std::chrono::steady_clock::now();
  const json parsed = json::parse(body, nullptr, false);
  if (parsed.is_discarded()) return reply(400, {{"error", "the body is not JSON"}});
  const std::string id = id_prefix_ + "-" + std::to_string(next_id_++);
  std::future<Answer> answer;
  try {
    const Submission submission = read_submission(parsed, intake_, id);
    try {
      answer = service_.submit(submission);
    } catch (const Busy& busy) {
      // Nothing of a refused request is kept. By unlink and rmdir: std::filesystem's removals, in a
      // binary linked with libtorch, resolve to libtorch's exported copies and crash.
      ::unlink(submission.candidate.path.c_str());
      ::rmdir(std::filesystem::path(submission.candidate.path).parent_path().c_str());
      HttpResponse refused = reply(503, {{"error", busy.what()}, {"busy", true}});
      refused.headers["Retry-After"] = "1";
      return refused;
    }
  } catch (const BadSubmission& bad) {
    return reply(400, {{"error", bad.what()}});
  }
  try {
    Answer a = answer.get();
    // The service's own share of the request's latency before its queue: the body parsed, the
    // candidate's file written, its rows in the store.
    const double admission_seconds = std::chrono::duration<double>(a.queued_at - received).count();
    // The whole of the request inside the service, to the answer's encoding: what it spends beyond
    // the three spans is the hand-over from the lane, and a client's time beyond it is outside.
    const double service_seconds = seconds_since(received);
    return reply(200, {{"id", id},
                       {"record", std::move(a.record)},
                       {"stored", a.stored},
                       {"admission_seconds", admission_seconds},
                       {"queued_seconds", a.queued_seconds},
                       {"evaluation_seconds", a.evaluation_seconds},
                       {"service_seconds", service_seconds}});
  } catch (const eval::EvalError& failed) {
    return reply(500,
                 {{"id", id}, {"error", std::string("the evaluation could not be carried out: ") + failed.what()}});
  }
}

}  // namespace kbv::serve
