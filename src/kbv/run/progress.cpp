#include "kbv/run/progress.h"

#include <cmath>
#include <utility>

namespace kbv::run {
namespace {

std::string duration(double seconds) {
  char text[32];
  const long s = std::lround(seconds);
  if (s >= 3600) {
    std::snprintf(text, sizeof text, "%ldh%02ldm", s / 3600, (s % 3600) / 60);
  } else {
    std::snprintf(text, sizeof text, "%ldm%02lds", s / 60, s % 60);
  }
  return text;
}

}  // namespace

Progress::Progress(size_t evaluations, size_t compiles, bool terminal, std::FILE* out, Clock clock)
    : evaluations_(evaluations), compiles_(compiles), terminal_(terminal), out_(out), clock_(std::move(clock)) {}

std::string Progress::eta() const {
  if (evaluated_ < 2) return "ETA --";
  const double since_first = std::chrono::duration<double>(clock_() - first_evaluated_).count();
  return "ETA " +
         duration(since_first / static_cast<double>(evaluated_ - 1) * static_cast<double>(evaluations_ - evaluated_));
}

void Progress::compiled(const std::string& candidate, const std::string& outcome, double seconds) {
  std::lock_guard lock(mutex_);
  ++compiled_;
  if (terminal_) {
    redraw();
  } else {
    std::fprintf(out_, "kbv: built [%zu/%zu] %s %.1fs %s\n", compiled_, compiles_, outcome.c_str(), seconds,
                 candidate.c_str());
    std::fflush(out_);
  }
}

void Progress::evaluated(const std::string& verdict, const std::string& line) {
  std::lock_guard lock(mutex_);
  if (++evaluated_ == 1) first_evaluated_ = clock_();
  ++verdicts_[verdict];
  if (terminal_) {
    redraw();
  } else {
    std::fprintf(out_, "kbv: [%zu/%zu] %s  (%s)\n", evaluated_, evaluations_, line.c_str(), eta().c_str());
    std::fflush(out_);
  }
}

void Progress::note(const std::string& message) {
  std::lock_guard lock(mutex_);
  std::fprintf(out_, terminal_ ? "\r\033[K%s\n" : "%s\n", message.c_str());
  if (terminal_) redraw();
  std::fflush(out_);
}

void Progress::redraw() {
  constexpr int kWidth = 24;
  const int filled = evaluations_ ? static_cast<int>(kWidth * evaluated_ / evaluations_) : kWidth;
  std::string bar(filled, '#');
  bar.resize(kWidth, '.');
  std::string verdicts;
  for (const auto& [verdict, count] : verdicts_) verdicts += " " + verdict + " " + std::to_string(count);
  std::fprintf(out_, "\r\033[K[%s] %zu/%zu evaluated, %zu/%zu built |%s | %s", bar.c_str(), evaluated_, evaluations_,
               compiled_, compiles_, verdicts.c_str(), eta().c_str());
  std::fflush(out_);
}

void Progress::finish() {
  std::lock_guard lock(mutex_);
  if (terminal_) std::fprintf(out_, "\n");
  std::fflush(out_);
}

}  // namespace kbv::run
