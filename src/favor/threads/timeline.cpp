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

void note_index(Recording& r, int thread, Clock::time_point start, Clock::time_point end) {
  if (thread < static_cast<int>(r.indices.size())) r.indices[static_cast<std::size_t>(thread)].push_back({start, end});
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
  // Each thread's intervals, region by region (a region holds the intervals that start in it).
  for (int p = 0; p < threads; ++p) {
    const std::vector<detail::Interval>& mine = r.indices[static_cast<std::size_t>(p)];
    std::size_t i = 0;
    for (const auto& [region, invited] : r.regions) {
      if (p >= invited) continue;
      detail::Clock::time_point at = region.start;
      bool any = false;
      for (; i < mine.size() && mine[i].start < region.end; ++i) {
        const double gap = seconds(at, mine[i].start), length = seconds(mine[i].start, mine[i].end);
        (any ? t.between : t.start) += gap;
        t.work += length;
        at = mine[i].end, any = true;
      }
      (any ? t.end : t.start) += seconds(at, region.end);
    }
  }
  return t;
}

}  // namespace favor
