#include "favor/threads/timeline.hpp"

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <stdexcept>
#include <vector>

#include "favor/parallel.hpp"

namespace favor {

namespace detail {

using Clock = std::chrono::steady_clock;

struct Interval {
  Clock::time_point start, end;
  bool inner = false;  // an index of a region inside another thread's index, helped with
};

struct Recording {
  Clock::time_point begin;
  std::vector<std::pair<Interval, int>> regions;  // and the threads each invited
  std::vector<std::vector<Interval>> indices;     // per thread, in the order it ran them
};

namespace {
std::atomic<Recording*> g_recording{nullptr};
}  // namespace

Recording* recording() { return g_recording.load(std::memory_order_acquire); }

void region_started(Recording& r, int invited) { r.regions.push_back({{Clock::now(), {}}, invited}); }

void region_ended(Recording& r) { r.regions.back().first.end = Clock::now(); }

void note_index(Recording& r, int thread, Clock::time_point start, Clock::time_point end, bool inner) {
  if (thread < static_cast<int>(r.indices.size())) r.indices[static_cast<std::size_t>(thread)].push_back({start, end, inner});
}

}  // namespace detail

namespace {

double seconds(detail::Clock::time_point a, detail::Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

}  // namespace

ThreadTime record_thread_time(const std::function<void()>& call) {
  detail::Recording r;
  const int threads = max_threads();
  r.indices.resize(static_cast<std::size_t>(threads));
  // Room for the intervals beforehand, so that noting one allocates nothing in the common case.
  for (auto& v : r.indices) v.reserve(1 << 14);
  r.regions.reserve(1 << 12);
  detail::Recording* none = nullptr;
  if (!detail::g_recording.compare_exchange_strong(none, &r)) throw std::logic_error("record_thread_time: already recording");
  struct Stop {
    ~Stop() { detail::g_recording.store(nullptr); }
  } const stop;
  r.begin = detail::Clock::now();
  call();
  const detail::Clock::time_point finish = detail::Clock::now();

  ThreadTime t;
  t.threads = threads;
  t.regions = static_cast<int>(r.regions.size());
  t.wall = seconds(r.begin, finish);
  double in_regions = 0;
  for (const auto& [region, invited] : r.regions) {
    const double length = seconds(region.start, region.end);
    in_regions += length;
    t.uninvited += length * std::max(0, threads - invited);
  }
  t.serial = t.wall - in_regions;
  t.alone = t.serial * (threads - 1);
  // Each thread's intervals, region by region (a region holds the intervals that start in it);
  // mean[k][p]: thread p's mean index time in region k (0: none); helped[k]: whether a thread
  // helped with a region inside an index there.
  std::vector<std::vector<double>> mean(r.regions.size(), std::vector<double>(static_cast<std::size_t>(threads), 0.0));
  std::vector<bool> helped(r.regions.size(), false);
  for (int p = 0; p < threads; ++p) {
    const std::vector<detail::Interval>& mine = r.indices[static_cast<std::size_t>(p)];
    std::size_t i = 0;
    for (std::size_t k = 0; k < r.regions.size(); ++k) {
      const auto& [region, invited] = r.regions[k];
      if (p >= invited) continue;
      detail::Clock::time_point at = region.start;
      int count = 0;
      double in_indices = 0;
      for (; i < mine.size() && mine[i].start < region.end; ++i) {
        const double gap = seconds(at, mine[i].start), length = seconds(mine[i].start, mine[i].end);
        (count ? t.between : t.start) += gap;
        in_indices += length;
        at = mine[i].end, ++count;
        if (mine[i].inner) helped[k] = true;
      }
      t.work += in_indices;
      (count ? t.end : t.start) += seconds(at, region.end);
      if (count) mean[k][static_cast<std::size_t>(p)] = in_indices / count;
    }
  }
  double weight = 0, caller_weight = 0;
  for (std::size_t k = 0; k < r.regions.size(); ++k) {
    if (helped[k]) continue;
    std::vector<double> working;
    for (const double m : mean[k])
      if (m > 0) working.push_back(m);
    if (working.size() < 2) continue;
    std::sort(working.begin(), working.end());
    const std::size_t mid = working.size() / 2;
    const double median = working.size() % 2 ? working[mid] : (working[mid - 1] + working[mid]) / 2;
    const double length = seconds(r.regions[k].first.start, r.regions[k].first.end);
    t.slowest_index += length * working.back() / median, weight += length;
    if (mean[k][0] > 0) t.caller_index += length * mean[k][0] / median, caller_weight += length;
  }
  if (weight > 0) t.slowest_index /= weight;
  if (caller_weight > 0) t.caller_index /= caller_weight;
  return t;
}

}  // namespace favor
