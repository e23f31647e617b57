// Static screen of a candidate's C++/CUDA source: names that point at a known hack.
//
// A match is evidence for a finding, not proof: the text cannot tell whether the call runs, so
// the evaluation weighs a match against what it measured. The screen reads names only, never
// what a comment, string or #include says, so prose about cudaMalloc does not count as calling it.
// Tokens are reported with whitespace around `::` removed.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kbv::hacks {

// One suspicious construct in candidate C++/CUDA source (PROTOCOL.md "Findings").
struct SourceMatch {
  std::string finding;  // finding id, e.g. "side_stream"
  std::string token;    // the identifier matched, as written (qualified if it was, e.g. "at::cuda::getStreamFromPool")
  int line = 0;         // 1-based line in the source text given
  std::string excerpt;  // that source line, trimmed, at most 160 chars
};

// Scans one C++/CUDA translation unit's text. Comments (// and /* */), string literals (including
// raw strings R"delim(...)delim" and prefixes u8/L/u/U), and character literals are ignored, as
// are preprocessor #include lines; line numbers stay those of the original text.
std::vector<SourceMatch> screen_cxx_source(std::string_view source);

}  // namespace kbv::hacks
