// The parent's judgement of a problem's audit facts (PROTOCOL.md's benchmark defects, issue
// "kbv audit"): which defects the problem's own inputs show, with evidence, and whether the
// verified protocol cures each (a cheat exploiting it fails a hidden family, or the problem is
// not scored at all).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kbv/protocol/protocol.h"

namespace kbv::audit {

struct FamilyFacts {
  std::string family;    // standard first
  nlohmann::json facts;  // Session::audit's reply for one draw of the family
};

struct AuditFinding {
  std::string id;
  bool cured = false;  // the verified protocol does not reward a cheat through it
  nlohmann::json evidence;
};

// Outputs that move less than this share of a relative nudge of the inputs: low_sensitivity.
constexpr double kLowSensitivity = 0.01;

// Hidden families (all but the first, standard) whose reference ran and gave finite outputs:
// those the verified protocol judges. Fewer than its min_hidden_families: the fallback families
// are audited too, as an evaluation would draw them.
int judged_hidden_families(const std::vector<FamilyFacts>& families);

std::vector<AuditFinding> judge_audit(const std::vector<FamilyFacts>& families, const protocol::Protocol& verified,
                                      const protocol::Protocol& kernelbench, double memory_share);

}  // namespace kbv::audit
