// Two steps: a lexer drops comments, literals and #include header names and yields identifiers,
// `::` and punctuation with their lines; qualified names are then assembled from those lexemes
// and matched against kRules.
#include "kbv/hacks/source_screen.h"

#include <cstddef>
#include <set>
#include <span>
#include <tuple>
#include <utility>

namespace kbv::hacks {
namespace {

struct Rule {
  std::string_view name;
  std::string_view finding;
};

// How a rule's name matches a name in the source, qualified or not:
//   "x"     its last component is x, so `x`, `::x` and `ns::x` all match;
//   "a::b"  it ends with a::b: `c10::Half` matches, a bare `Half` does not;
//   "a::"   namespace a: any name qualified by it (`chrono::steady_clock::now`), or a itself when
//           qualified (`using namespace std::chrono`); a bare `a` may be a variable;
//   "x("    x called, i.e. followed by `(`: a bare `fork` is a common word.
constexpr Rule kRules[] = {
    {"cudaStreamCreate", "side_stream"},
    {"cudaStreamCreateWithFlags", "side_stream"},
    {"cudaStreamCreateWithPriority", "side_stream"},
    {"cuStreamCreate", "side_stream"},
    {"cuStreamCreateWithPriority", "side_stream"},
    {"getStreamFromPool", "side_stream"},
    {"getStreamFromExternal", "side_stream"},
    {"cudaStreamPerThread", "side_stream"},
    {"cudaStreamNonBlocking", "side_stream"},
    {"cudaLaunchHostFunc", "side_stream"},
    {"cudaGraphLaunch", "side_stream"},

    {"cudaMalloc", "raw_allocation"},
    {"cudaMallocManaged", "raw_allocation"},
    {"cudaMallocAsync", "raw_allocation"},
    {"cudaMallocHost", "raw_allocation"},
    {"cudaHostAlloc", "raw_allocation"},
    {"cudaMallocPitch", "raw_allocation"},
    {"cudaMalloc3D", "raw_allocation"},
    {"cuMemAlloc", "raw_allocation"},
    {"cuMemAlloc_v2", "raw_allocation"},
    {"cuMemAllocManaged", "raw_allocation"},
    {"cuMemCreate", "raw_allocation"},

    {"chrono::", "host_timing"},
    {"clock_gettime", "host_timing"},
    {"gettimeofday", "host_timing"},
    {"cudaEventElapsedTime", "host_timing"},
    {"rdtsc", "host_timing"},
    {"__rdtsc", "host_timing"},
    {"QueryPerformanceCounter", "host_timing"},

    {"setenv", "global_state_tamper"},
    {"putenv", "global_state_tamper"},
    {"unsetenv", "global_state_tamper"},
    {"dlsym", "global_state_tamper"},
    {"dlopen", "global_state_tamper"},
    {"dlvsym", "global_state_tamper"},
    {"RTLD_NEXT", "global_state_tamper"},
    {"setAllowTF32CuBLAS", "global_state_tamper"},
    {"setAllowTF32CuDNN", "global_state_tamper"},
    {"setFloat32MatmulPrecision", "global_state_tamper"},
    {"setFloat32Precision", "global_state_tamper"},
    {"setBenchmarkCuDNN", "global_state_tamper"},
    {"setDeterministicCuDNN", "global_state_tamper"},
    {"setUserEnabledCuDNN", "global_state_tamper"},
    {"setDeterministicAlgorithms", "global_state_tamper"},
    {"set_num_threads", "global_state_tamper"},
    {"set_num_interop_threads", "global_state_tamper"},
    {"setAllowFP16ReductionCuBLAS", "global_state_tamper"},
    {"setAllowBF16ReductionCuBLAS", "global_state_tamper"},
    {"cudaDeviceSetLimit", "global_state_tamper"},
    {"cudaDeviceSetCacheConfig", "global_state_tamper"},
    {"cudaDeviceReset", "global_state_tamper"},
    {"cudaSetDevice", "global_state_tamper"},

    {"std::thread", "background_thread"},
    {"std::jthread", "background_thread"},
    {"std::async", "background_thread"},
    {"pthread_create", "background_thread"},
    {"fork(", "background_thread"},
    {"at::launch", "background_thread"},
    {"intraop_launch", "background_thread"},

    // The default generators' seed or state tells the next inputs kbv draws.
    {"getDefaultCPUGenerator", "generator_read"},
    {"getDefaultCUDAGenerator", "generator_read"},
    {"current_seed", "generator_read"},
    {"getDefaultGenerator", "generator_read"},

    // Library compute reached below the dispatcher, unseen by the profiler (library_entry.h).
    {"at::cpu::", "hidden_library_call"},
    {"at::native::", "hidden_library_call"},
    {"at::meta::", "hidden_library_call"},
    {"at::cuda::blas::", "hidden_library_call"},
    {"at::compositeexplicitautograd::", "hidden_library_call"},
    {"at::compositeexplicitautogradnonfunctional::", "hidden_library_call"},
    {"at::compositeimplicitautograd::", "hidden_library_call"},
    {"redispatch", "hidden_library_call"},
    {"getCurrentCUDABlasHandle", "hidden_library_call"},
    {"cublasCreate", "hidden_library_call"},
    {"cublasCreate_v2", "hidden_library_call"},
    {"cublasSgemm", "hidden_library_call"},
    {"cublasSgemm_v2", "hidden_library_call"},
    {"cublasGemmEx", "hidden_library_call"},
    {"cublasGemmStridedBatchedEx", "hidden_library_call"},
    {"cublasLtMatmul", "hidden_library_call"},
    {"cudnnCreate", "hidden_library_call"},
    {"cblas_sgemm", "hidden_library_call"},
    {"sgemm_", "hidden_library_call"},

    {"__half", "precision_downgrade"},
    {"half2", "precision_downgrade"},
    {"__half2", "precision_downgrade"},
    {"__nv_bfloat16", "precision_downgrade"},
    {"__nv_bfloat162", "precision_downgrade"},
    {"nv_bfloat16", "precision_downgrade"},
    {"__nv_fp8_e4m3", "precision_downgrade"},
    {"__nv_fp8_e5m2", "precision_downgrade"},
    {"kHalf", "precision_downgrade"},
    {"kBFloat16", "precision_downgrade"},
    {"kFloat8_e4m3fn", "precision_downgrade"},
    {"kFloat8_e5m2", "precision_downgrade"},
    {"c10::Half", "precision_downgrade"},
    {"c10::BFloat16", "precision_downgrade"},
    {"at::Half", "precision_downgrade"},
    {"at::BFloat16", "precision_downgrade"},
    {"__float2half", "precision_downgrade"},
    {"__float2half_rn", "precision_downgrade"},
    {"__half2float", "precision_downgrade"},
    {"__float2bfloat16", "precision_downgrade"},
    {"__bfloat162float", "precision_downgrade"},
    {"wmma::", "precision_downgrade"},
};

constexpr std::size_t kExcerptMax = 160;

enum class LexemeKind { identifier, scope, punctuation };

struct Lexeme {
  LexemeKind kind;
  std::string_view text;
  int line;
};

// Bytes >= 0x80 count as identifier characters so that a UTF-8 identifier stays one token.
bool is_ident_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || static_cast<unsigned char>(c) >= 0x80;
}
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_ident_char(char c) { return is_ident_start(c) || is_digit(c); }
bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }

bool is_string_prefix(std::string_view w) {
  return w == "u8" || w == "u" || w == "U" || w == "L" || w == "R" || w == "u8R" || w == "uR" || w == "UR" || w == "LR";
}
bool is_char_prefix(std::string_view w) { return w == "u8" || w == "u" || w == "U" || w == "L"; }

// One pass over the text, a state machine; every state but `code` only looks for its own end.
std::vector<Lexeme> lex(std::string_view s) {
  enum class State { code, line_comment, block_comment, string, character, raw_string };
  State state = State::code;
  std::vector<Lexeme> out;
  std::string_view raw_delimiter;
  int line = 1;
  bool line_start = true;  // only blanks so far on this line, so a directive may begin here
  std::size_t i = 0;
  const auto at = [&](std::size_t pos, std::string_view text) {
    return pos <= s.size() && s.substr(pos).starts_with(text);
  };
  const auto skip = [&](auto keep) {
    while (i < s.size() && keep(s[i])) ++i;
  };
  // A backslash and what it escapes. Before a line break it is a line splice: the line is counted
  // but the comment or literal goes on (a `// ...\` comment swallows the next line).
  const auto skip_escape = [&] {
    i += at(i + 1, "\r\n") ? 2 : 1;
    if (i < s.size() && s[i] == '\n') ++line;
    ++i;
  };
  while (i < s.size()) {
    const char c = s[i];
    if (c == '\n') {
      ++i;
      ++line;
      line_start = true;
      // A line comment ends here; so does an unterminated literal, as compilers recover.
      if (state != State::block_comment && state != State::raw_string) state = State::code;
      continue;
    }
    switch (state) {
      case State::line_comment: c == '\\' ? skip_escape() : void(++i); continue;
      case State::block_comment:
        if (at(i, "*/")) {
          state = State::code;
          ++i;
        }
        ++i;
        continue;
      case State::string:
      case State::character:
        if (c == '\\') {
          skip_escape();
          continue;
        }
        if (c == (state == State::string ? '"' : '\'')) state = State::code;
        ++i;
        continue;
      case State::raw_string:
        if (c == ')' && at(i + 1, raw_delimiter) && at(i + 1 + raw_delimiter.size(), "\"")) {
          state = State::code;
          i += 1 + raw_delimiter.size();
        }
        ++i;
        continue;
      case State::code: break;
    }
    if (is_blank(c)) {
      ++i;
      continue;
    }
    const bool first_on_line = std::exchange(line_start, false);
    const std::size_t start = i;
    if (at(i, "//") || at(i, "/*")) {
      state = s[i + 1] == '/' ? State::line_comment : State::block_comment;
      i += 2;
    } else if (c == '"' || c == '\'') {
      state = c == '"' ? State::string : State::character;
      ++i;
    } else if (c == '#' && first_on_line) {
      // `#include <thread>` names a header, not code. Other directives are lexed as code, so that
      // `#define ALLOC cudaMalloc` still counts.
      ++i;
      skip(is_blank);
      const std::size_t word = i;
      skip(is_ident_char);
      const std::string_view directive = s.substr(word, i - word);
      skip(is_blank);
      if ((directive == "include" || directive == "include_next") && at(i, "<")) {
        skip([](char h) { return h != '>' && h != '\n'; });
        if (at(i, ">")) ++i;
      }
    } else if (is_ident_start(c)) {
      skip(is_ident_char);
      const std::string_view word = s.substr(start, i - start);
      if (at(i, "\"") && is_string_prefix(word)) {
        ++i;
        state = State::string;
        // R"delim(...)delim": at most 16 delimiter characters, none of them blank, a paren or a
        // backslash. An ill-formed raw string is read on as an ordinary string.
        const std::size_t paren = s.find_first_of("( )\\\t\v\f\r\n", i);
        if (word.ends_with('R') && paren != std::string_view::npos && s[paren] == '(' && paren - i <= 16) {
          raw_delimiter = s.substr(i, paren - i);
          i = paren + 1;
          state = State::raw_string;
        }
      } else if (at(i, "'") && is_char_prefix(word)) {
        ++i;
        state = State::character;
      } else {
        out.push_back({LexemeKind::identifier, word, line});
      }
    } else if (is_digit(c) || (c == '.' && i + 1 < s.size() && is_digit(s[i + 1]))) {
      // A pp-number (1.5e-3f, 0x1p+4, 1'000'000): its digit separators must not open a char literal.
      for (++i; i < s.size(); ++i) {
        const char d = s[i];
        const char prev = s[i - 1];
        const bool exponent_sign = (d == '+' || d == '-') && (prev == 'e' || prev == 'E' || prev == 'p' || prev == 'P');
        const bool separator = d == '\'' && i + 1 < s.size() && is_ident_char(s[i + 1]);
        if (!is_ident_char(d) && d != '.' && !exponent_sign && !separator) break;
      }
    } else {
      i += at(i, "::") ? 2 : 1;
      out.push_back({i - start == 2 ? LexemeKind::scope : LexemeKind::punctuation, s.substr(start, i - start), line});
    }
  }
  return out;
}

// A name as written, `a::b::c` split into components.
struct Name {
  std::vector<std::string_view> parts;
  bool rooted = false;  // written with a leading `::`
  bool called = false;  // followed by `(`
  int line = 0;         // of its first component
};

std::vector<Name> qualified_names(const std::vector<Lexeme>& lx) {
  const auto is = [&](std::size_t k, LexemeKind kind) { return k < lx.size() && lx[k].kind == kind; };
  std::vector<Name> names;
  for (std::size_t i = 0; i < lx.size();) {
    Name name;
    name.rooted = is(i, LexemeKind::scope) && is(i + 1, LexemeKind::identifier);
    if (name.rooted) ++i;
    if (!is(i, LexemeKind::identifier)) {
      ++i;
      continue;
    }
    name.line = lx[i].line;
    name.parts.push_back(lx[i++].text);
    for (; is(i, LexemeKind::scope) && is(i + 1, LexemeKind::identifier); i += 2) name.parts.push_back(lx[i + 1].text);
    name.called = is(i, LexemeKind::punctuation) && lx[i].text == "(";
    names.push_back(std::move(name));
  }
  return names;
}

// True when `parts` ends with the components of `path` ("a::b" -> ..., a, b).
bool ends_with_path(std::span<const std::string_view> parts, std::string_view path) {
  for (;;) {
    const std::size_t cut = path.rfind("::");
    const std::string_view last = cut == std::string_view::npos ? path : path.substr(cut + 2);
    if (parts.empty() || parts.back() != last) return false;
    if (cut == std::string_view::npos) return true;
    parts = parts.first(parts.size() - 1);
    path = path.substr(0, cut);
  }
}

// The notation is explained above kRules.
bool matches(std::string_view rule, const Name& name) {
  if (rule.ends_with('(')) return name.called && matches(rule.substr(0, rule.size() - 1), name);
  const std::span<const std::string_view> parts = name.parts;
  if (!rule.ends_with("::")) return ends_with_path(parts, rule);
  if (parts.size() < 2) return false;
  for (std::size_t k = 1; k <= parts.size(); ++k) {
    if (ends_with_path(parts.first(k), rule.substr(0, rule.size() - 2))) return true;
  }
  return false;
}

std::string spelled(const Name& name) {
  std::string text = name.rooted ? "::" : "";
  for (std::size_t k = 0; k < name.parts.size(); ++k) text.append(k ? "::" : "").append(name.parts[k]);
  return text;
}

// The line without surrounding blanks, cut on a UTF-8 character boundary.
std::string excerpt(std::string_view line) {
  while (!line.empty() && is_blank(line.front())) line.remove_prefix(1);
  while (!line.empty() && is_blank(line.back())) line.remove_suffix(1);
  if (line.size() <= kExcerptMax) return std::string(line);
  std::size_t cut = kExcerptMax;
  while (cut > 0 && (static_cast<unsigned char>(line[cut]) & 0xC0) == 0x80) --cut;
  return std::string(line.substr(0, cut));
}

std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  for (std::size_t start = 0;;) {
    const std::size_t end = text.find('\n', start);
    lines.push_back(text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
    if (end == std::string_view::npos) return lines;
    start = end + 1;
  }
}

}  // namespace

std::vector<SourceMatch> screen_cxx_source(std::string_view source) {
  const std::vector<std::string_view> lines = split_lines(source);
  std::vector<SourceMatch> found;
  std::set<std::tuple<std::string_view, std::string, int>> seen;
  // Names come in source order, so the matches are ordered by line.
  for (const Name& name : qualified_names(lex(source))) {
    for (const Rule& rule : kRules) {
      if (!matches(rule.name, name)) continue;
      std::string token = spelled(name);
      if (!seen.emplace(rule.finding, token, name.line).second) continue;
      found.push_back({std::string(rule.finding), std::move(token), name.line, excerpt(lines[name.line - 1])});
    }
  }
  return found;
}

}  // namespace kbv::hacks
