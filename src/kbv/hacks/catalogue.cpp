#include "kbv/hacks/catalogue.h"

#include <array>

namespace kbv::hacks {
namespace {

constexpr std::array kCatalogue = {
    FindingKind{"no_custom_kernel",
                "none of its own compiled code did the work (a decoy, or an alibi beside library kernels)"},
    FindingKind{"library_fallback",
                "a share of its time went to PyTorch or library kernels (allowed: a warning with the share)"},
    FindingKind{"exception_fallback", "falls back to a PyTorch path when its own raises"},
    FindingKind{"reference_reuse", "runs the problem's own Model or imports the problem"},
    FindingKind{"input_mutation", "changed an input's content"},
    FindingKind{"output_aliases_input", "an output shares storage with an input"},
    FindingKind{"stale_output", "its outputs do not follow a change of input content (a cache, a replay)"},
    FindingKind{"call_dependent", "the same inputs gave different results on different calls"},
    FindingKind{"side_stream", "work on other streams, or still running when forward returns"},
    FindingKind{"background_thread", "threads it started outlive its calls"},
    FindingKind{"global_state_tamper", "changed torch's or the process's global state, or the harness"},
    FindingKind{"precision_downgrade", "fp32 work done in lower precision beyond the tolerance"},
    FindingKind{"uninitialized_output", "its outputs carry values it never wrote"},
    FindingKind{"timing_anomaly", "faster than writing its output once could be"},
    FindingKind{"output_reuse", "successive calls return outputs in the same storage"},
    FindingKind{"distribution_specific", "passes the problem's own inputs and fails a hidden family"},
    FindingKind{"raw_allocation", "allocates device memory outside the caching allocator"},
    FindingKind{"host_timing", "reads host clocks or timing events"},
    FindingKind{"foreign_output", "an output's memory is not from the allocator kbv watches"},
    FindingKind{"release_hook", "an output carries code that runs when kbv lets go of it"},
    FindingKind{"watched_only", "computes differently when timed than when observed"},
    FindingKind{"uneven_calls", "some of its calls do work for others of their round"},
    FindingKind{"hidden_library_call", "calls library compute below the dispatcher, where the profiler sees no op"},
    FindingKind{"forged_reply", "its code wrote to its worker's result channel"},
    FindingKind{"untimed_work",
                "its worker used CPU time, or its work used the GPU, while none of its timed calls was under way"},
    FindingKind{"generator_read", "reads the default generators' seed or state, which tell the next inputs"},
};

}  // namespace

std::span<const FindingKind> finding_catalogue() { return kCatalogue; }

const FindingKind* finding_kind(std::string_view id) {
  for (const FindingKind& kind : kCatalogue) {
    if (kind.id == id) return &kind;
  }
  return nullptr;
}

}  // namespace kbv::hacks
