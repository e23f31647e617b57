// The commands the parent sends a worker, one struct each: its fields are the command's JSON
// header (nlohmann's type macros: every field is written, and read back with `at`, so a missing
// one fails loudly), `kName` its "cmd". The parent builds them with `message()`, the worker reads
// them with `read<C>()` (worker_main.cpp says what each does). Fields left as JSON are kbv's own
// documents with their own readers: a draw (eval/plan.h), a protocol (protocol/protocol.h), the
// timed calls and the outputs' descriptions. A null JSON field is one the command does without.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kbv::ipc::commands {

// The candidate's text, read by the static screen before anything of it runs.
struct Screen {
  static constexpr const char* kName = "screen";
  std::string candidate;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Screen, candidate)

// The worker's device, made ready ahead of the load (the relay's next worker).
struct Device {
  static constexpr const char* kName = "device";
  std::string device;
  nlohmann::json protocol;  // null: none yet
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Device, device, protocol)

// The problem, and for a candidate's worker its file, imported; `draw`: drawn once before the
// candidate's import (null: none).
struct Load {
  static constexpr const char* kName = "load";
  std::string problem, candidate, device;  // candidate: empty for the reference's worker
  nlohmann::json protocol, draw;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Load, problem, candidate, device, protocol, draw)

// The candidate imported to build its kernels, and every build its source makes later.
struct Compile {
  static constexpr const char* kName = "compile";
  std::string candidate, device;
  bool background = false;  // the builds at the lowest CPU priority (SCHED_IDLE)
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Compile, candidate, device, background)

// One draw's inputs, forward under each mode.
struct Check {
  static constexpr const char* kName = "check";
  nlohmann::json draw;
  std::vector<std::string> modes;
  bool errors_against_first = false;  // the reference's worker: errors against the first mode's outputs only
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Check, draw, modes, errors_against_first)

// A candidate's outputs for `draw` against the reference's, in the reference's worker.
struct Compare {
  static constexpr const char* kName = "compare";
  nlohmann::json draw;
  std::vector<double> rms;
  bool scaled = false;
  double atol = 0, rtol = 0;
  // Each output's description: a blob, a view into the candidate's output region or its device
  // memory, the last two by the index of a file handed over with the command (the transport's
  // "files" says how many).
  nlohmann::json outputs = nlohmann::json::array();
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Compare, draw, rms, scaled, atol, rtol, outputs)

// The reference's outputs on the candidate's timed calls' inputs, sampled at their positions.
struct Sketches {
  static constexpr const char* kName = "sketches";
  nlohmann::json calls;  // per call: its content seed and sketch seed
  int points = 0;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Sketches, calls, points)

// The timing's pool of input sets, filled from these seeds; the timing begins.
struct Pool {
  static constexpr const char* kName = "pool";
  std::vector<std::uint64_t> seeds;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Pool, seeds)

struct DropPool {
  static constexpr const char* kName = "drop_pool";
};
inline void to_json(nlohmann::json& j, const DropPool&) { j = nlohmann::json::object(); }
inline void from_json(const nlohmann::json&, DropPool&) {}

struct Warmup {
  static constexpr const char* kName = "warmup";
  int calls = 0;
  double seconds = 0, max_seconds = 0;
  std::string mode;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Warmup, calls, seconds, max_seconds, mode)

// The TF32 switches of `mode` set; their values reported.
struct Flags {
  static constexpr const char* kName = "flags";
  std::string mode;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Flags, mode)

// A batch of timed calls; `points` > 0: each call's outputs sampled for the checks.
struct TimedCalls {
  static constexpr const char* kName = "timed_calls";
  std::string mode;
  nlohmann::json calls;  // per call: its set, and the seed of new content for it ("fill")
  int points = 0;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(TimedCalls, mode, calls, points)

struct Memory {
  static constexpr const char* kName = "memory";
  std::string mode;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Memory, mode)

// The device's copy of `bytes`, timed: the floor no output can be written below.
struct Floor {
  static constexpr const char* kName = "floor";
  std::int64_t bytes = 0;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Floor, bytes)

// One call under torch's profiler.
struct Trace {
  static constexpr const char* kName = "trace";
  nlohmann::json draw;
  std::string mode;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Trace, draw, mode)

// The candidate's probe on `draw`; `refresh`: a draw its buffers are refilled with (null: none).
struct Probe {
  static constexpr const char* kName = "probe";
  nlohmann::json draw, refresh;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Probe, draw, refresh)

// kbv audit's facts about the problem on two draws.
struct Audit {
  static constexpr const char* kName = "audit";
  nlohmann::json draw, other;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Audit, draw, other)

// What the runtime watch found, and the ops it recorded.
struct Findings {
  static constexpr const char* kName = "findings";
};
inline void to_json(nlohmann::json& j, const Findings&) { j = nlohmann::json::object(); }
inline void from_json(const nlohmann::json&, Findings&) {}

struct Exit {
  static constexpr const char* kName = "exit";
};
inline void to_json(nlohmann::json& j, const Exit&) { j = nlohmann::json::object(); }
inline void from_json(const nlohmann::json&, Exit&) {}

// The command's header as it crosses: its fields and its name.
template <typename Command>
nlohmann::json message(const Command& command) {
  nlohmann::json header = command;
  header["cmd"] = Command::kName;
  return header;
}

// The command a header holds; throws nlohmann::json::exception where a field is missing or mistyped.
template <typename Command>
Command read(const nlohmann::json& header) {
  return header.get<Command>();
}

}  // namespace kbv::ipc::commands
