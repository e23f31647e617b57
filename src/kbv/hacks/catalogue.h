// Every finding kbv can report (PROTOCOL.md, "Findings (stable ids)"), with one line on what it
// means for the summary. The judge, the watch and both screens report only these ids:
// tests/hacks/catalogue_test.cpp holds PROTOCOL.md's table, the Python screen and the C++ sources to
// this list.
#pragma once

#include <span>
#include <string_view>

namespace kbv::hacks {

struct FindingKind {
  std::string_view id;
  std::string_view what;
};

std::span<const FindingKind> finding_catalogue();

// The kind of `id`; null for an id the catalogue does not hold.
const FindingKind* finding_kind(std::string_view id);

}  // namespace kbv::hacks
