#include "kbv/worker/gpu_work_accounts.h"

#include <algorithm>

namespace kbv::worker {
namespace {

constexpr long kKbv = -1, kForeign = -2;

std::uint64_t length(const DeviceWork& work) { return work.end > work.start ? work.end - work.start : 0; }

double seconds(std::uint64_t ns) { return static_cast<double>(ns) * 1e-9; }

}  // namespace

void GpuWorkAccounts::add_launches(std::span<const Launch> launches) {
  for (const Launch& launch : launches) launches_[launch.correlation] = launch;
}

std::uint64_t GpuWorkAccounts::outside(const DeviceWork& work, std::span<const Window> windows) {
  std::uint64_t inside = 0;
  // Windows are in order and apart: the first that ends after the work starts, and on.
  auto window = std::upper_bound(windows.begin(), windows.end(), work.start,
                                 [](std::uint64_t at, const Window& w) { return at < w.end; });
  for (; window != windows.end() && window->begin < work.end; ++window) {
    inside += std::min(work.end, window->end) - std::max(work.start, window->begin);
  }
  return length(work) - std::min(inside, length(work));
}

void GpuWorkAccounts::settle(std::span<const DeviceWork> work) {
  // Whose each record is: kbv's, a call's (its index) or foreign. Each timed call's window opens
  // where kbv's last launch before it (the launch cover) ended: cover[c], a record's index.
  std::vector<long> owner(work.size(), kForeign);
  std::vector<const Launch*> launch_of(work.size(), nullptr);
  std::vector<long> cover(calls_.size(), -1);
  for (size_t i = 0; i < work.size(); ++i) {
    const auto found = launches_.find(work[i].correlation);
    if (found == launches_.end()) {
      ++unknown_launches_;
      continue;
    }
    const Launch& launch = found->second;
    launch_of[i] = &launch;
    if (launch.thread != main_thread_) continue;
    // The first call that began after the launch; the one before it holds the launch, or kbv's
    // step after it launched it.
    const auto next = std::upper_bound(calls_.begin(), calls_.end(), launch.at,
                                       [](std::uint64_t at, const CallMark& call) { return at < call.begin; });
    if (next != calls_.begin() && launch.at <= std::prev(next)->end) {
      owner[i] = std::prev(next) - calls_.begin();
      continue;
    }
    owner[i] = kKbv;
    if (next == calls_.end()) continue;
    long& c = cover[next - calls_.begin()];
    if (c < 0 || launch.at > launch_of[c]->at) c = static_cast<long>(i);
  }
  std::vector<Window> windows;
  std::vector<std::optional<Window>> window_of(calls_.size());
  for (size_t c = 0; c < calls_.size(); ++c) {
    if (!calls_[c].timed_seconds) continue;
    ++timed_calls_;
    if (covered_ && cover[c] < 0) ++covers_missing_;
    const std::uint64_t begin = covered_ && cover[c] >= 0 ? work[cover[c]].end : calls_[c].begin;
    const auto measured = static_cast<std::uint64_t>(std::max(0.0, *calls_[c].timed_seconds) * 1e9);
    windows_ns_ += measured;
    window_of[c] = Window{begin, begin + measured + kEndSlackNs};
    windows.push_back(*window_of[c]);
  }
  std::sort(windows.begin(), windows.end(), [](const Window& a, const Window& b) { return a.begin < b.begin; });
  for (size_t i = 0; i < work.size(); ++i) {
    const std::uint64_t ns = length(work[i]);
    ++records_;
    if (owner[i] == kKbv) {
      kbv_ns_ += ns;
    } else if (owner[i] == kForeign) {
      ++foreign_records_;
      foreign_ns_ += ns;
      outside_ns_ += outside(work[i], windows);
    } else if (const std::optional<Window>& own = window_of[owner[i]]) {
      timed_calls_ns_ += ns;
      outside_ns_ += outside(work[i], std::span(&*own, 1));
    } else {
      untimed_calls_ns_ += ns;
    }
  }
  // A graph's launch has many records: its launch goes once all are charged. Launches with no work
  // (those that failed, copies to pageable memory CUPTI records apart) go a settle later: all work
  // launched before the previous settle's calls has ended and been charged since.
  for (size_t i = 0; i < work.size(); ++i) {
    if (launch_of[i]) launches_.erase(work[i].correlation);
  }
  std::erase_if(launches_, [&](const auto& entry) { return entry.second.at < settled_before_; });
  if (!calls_.empty()) settled_before_ = calls_.front().begin;
  calls_.clear();
}

nlohmann::json GpuWorkAccounts::totals() const {
  return {{"timed_calls", timed_calls_},
          {"windows_seconds", seconds(windows_ns_)},
          {"kbv_seconds", seconds(kbv_ns_)},
          {"timed_calls_seconds", seconds(timed_calls_ns_)},
          {"untimed_calls_seconds", seconds(untimed_calls_ns_)},
          {"foreign_seconds", seconds(foreign_ns_)},
          {"outside_seconds", seconds(outside_ns_)},
          {"foreign_records", foreign_records_},
          {"unknown_launches", unknown_launches_},
          {"covers_missing", covers_missing_},
          {"records", records_}};
}

}  // namespace kbv::worker
