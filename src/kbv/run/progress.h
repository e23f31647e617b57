// Progress of a long run: on a terminal one line redrawn in place (counts, verdicts, ETA); in a
// log (stderr not a terminal) one plain line per finished evaluation, which greps and tails well.
// The ETA follows the pace between finished evaluations: the first one's time holds the builds
// and the workers' starts before it (a 17-minute run once read 5h01m after its first evaluation).
#pragma once

#include <chrono>
#include <cstdio>
#include <functional>
#include <map>
#include <mutex>
#include <string>

namespace kbv::run {

class Progress {
 public:
  using Clock = std::function<std::chrono::steady_clock::time_point()>;
  Progress(size_t evaluations, size_t compiles, bool terminal, std::FILE* out = stderr,
           Clock clock = std::chrono::steady_clock::now);
  void compiled(const std::string& candidate, const std::string& outcome, double seconds);
  // `line` describes the evaluation (verdict, speedup, which candidate), for the log.
  void evaluated(const std::string& verdict, const std::string& line);
  void note(const std::string& message);  // printed on its own line in either mode
  void finish();
  // "ETA --" until two evaluations have finished, then the remaining ones at the pace since the first.
  std::string eta() const;

 private:
  void redraw();  // terminal mode, with mutex_ held

  std::mutex mutex_;
  const size_t evaluations_, compiles_;
  const bool terminal_;
  std::FILE* out_;
  Clock clock_;
  size_t evaluated_ = 0, compiled_ = 0;
  std::map<std::string, size_t> verdicts_;
  std::chrono::steady_clock::time_point first_evaluated_;
};

}  // namespace kbv::run
