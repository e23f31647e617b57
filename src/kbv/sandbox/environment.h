// The environment a candidate's worker may see (docs/SECURITY.md, "The environment"): the
// variables builds, CUDA, torch, Triton and the interpreter read, kbv's own (KBV_*), and any the
// operator names in KBV_PASS_ENV (comma-separated); never the rest of kbv's (a token in it would be
// printed into the candidate's log, which the record and the store keep).
#pragma once

#include <string_view>

namespace kbv::sandbox {

bool passes_to_candidates(std::string_view name);

// Reduces this process's environment to what passes_to_candidates allows (each kept variable
// copied off the block the process started with) and wipes that block, which /proc/self/environ
// shows and every process forked from this one keeps. Call before the interpreter starts (its
// os.environ is a copy made then) and before any other thread runs.
void keep_only_candidate_environment();

}  // namespace kbv::sandbox
