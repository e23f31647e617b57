// Progress of a long run: on a terminal one line redrawn in place (counts, verdicts, ETA); in a
// log (stderr not a terminal) one plain line per finished evaluation, which greps and tails well.
#pragma once

#include <chrono>
#include <cstdio>
#include <map>
#include <mutex>
#include <string>

namespace kbv::run {

class Progress {
 public:
  Progress(size_t evaluations, size_t compiles, bool terminal, std::FILE* out = stderr);
  void compiled(const std::string& candidate, const std::string& outcome, double seconds);
  // `line` describes the evaluation (verdict, speedup, which candidate), for the log.
  void evaluated(const std::string& verdict, const std::string& line);
  void note(const std::string& message);  // printed on its own line in either mode
  void finish();

 private:
  void redraw();  // terminal mode, with mutex_ held
  std::string eta() const;

  std::mutex mutex_;
  const size_t evaluations_, compiles_;
  const bool terminal_;
  std::FILE* out_;
  size_t evaluated_ = 0, compiled_ = 0;
  std::map<std::string, size_t> verdicts_;
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
};

}  // namespace kbv::run
