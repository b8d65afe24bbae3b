#include "favor/threads/work_span.hpp"

#include "favor/parallel.hpp"
#include "favor/threads/region.hpp"

#include <algorithm>
#include <chrono>
#include <functional>
#include <stdexcept>
#include <utility>

namespace favor {

namespace {
using detail::t_in_parallel;
using detail::t_region;
using detail::t_share;

// While measure_work_span runs, the calling thread's regions run serially, each index timed,
// into the index being run (t_index) from the time its current serial stretch began (t_mark).
FAVOR_THREAD_LOCAL TracedIndex* t_index = nullptr;
FAVOR_THREAD_LOCAL std::chrono::steady_clock::time_point t_mark;

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

double work_of(const TracedIndex& index) {
  double work = 0;
  for (const double s : index.serial) work += s;
  for (const TracedRegion& r : index.regions)
    for (const TracedIndex& i : r.indices) work += work_of(i);
  return work;
}

double span_of(const TracedIndex& index) {
  double span = 0;
  for (const double s : index.serial) span += s;
  for (const TracedRegion& r : index.regions) {
    double longest = 0;
    for (const TracedIndex& i : r.indices) longest = std::max(longest, span_of(i));
    span += longest;
  }
  return span;
}

// `into` with each step at its least time in it and in `run`, which has its shape.
void keep_least(TracedIndex& into, const TracedIndex& run) {
  if (run.serial.size() != into.serial.size() || run.regions.size() != into.regions.size())
    throw std::invalid_argument("least_per_step: runs whose traces differ in shape");
  for (std::size_t s = 0; s < into.serial.size(); ++s) into.serial[s] = std::min(into.serial[s], run.serial[s]);
  for (std::size_t r = 0; r < into.regions.size(); ++r) {
    TracedRegion& region = into.regions[r];
    if (run.regions[r].threads != region.threads || run.regions[r].indices.size() != region.indices.size())
      throw std::invalid_argument("least_per_step: runs whose traces differ in shape");
    for (std::size_t i = 0; i < region.indices.size(); ++i) keep_least(region.indices[i], run.regions[r].indices[i]);
  }
}
}  // namespace

WorkSpan least_per_step(const std::vector<WorkSpan>& runs) {
  if (runs.empty()) throw std::invalid_argument("least_per_step: no runs");
  WorkSpan least;
  least.call = runs[0].call;
  for (std::size_t r = 1; r < runs.size(); ++r) keep_least(least.call, runs[r].call);
  least.work = work_of(least.call), least.span = span_of(least.call);
  return least;
}

WorkSpan measure_work_span(int threads, const std::function<void()>& call) {
  const int previous = detail::g_max_threads.exchange(std::max(1, threads));
  WorkSpan result;
  t_index = &result.call;
  t_mark = std::chrono::steady_clock::now();
  const auto restore = [&] { t_index = nullptr, detail::g_max_threads = previous; };
  try {
    call();
  } catch (...) {
    restore();
    throw;
  }
  result.call.serial.back() += seconds_since(t_mark);
  restore();
  result.work = work_of(result.call), result.span = span_of(result.call);
  return result;
}

namespace detail {

bool tracing() { return t_index != nullptr; }

void run_traced(Index count, void (*call)(void*, Index), void* context) {
  TracedIndex& parent = *t_index;
  parent.serial.back() += seconds_since(t_mark);
  struct Restore {  // also when an index throws
    bool nested;
    int share;
    RegionShape region;
    TracedIndex* index;
    ~Restore() {
      t_in_parallel = nested, t_share = share, t_region = region, t_index = index;
      index->serial.push_back(0.0);
      t_mark = std::chrono::steady_clock::now();
    }
  } const restore{t_in_parallel, t_share, t_region, &parent};
  TracedRegion region;
  region.threads = restore.nested ? 1 : available_threads();
  const int index_share = restore.nested ? 1 : threads_per_index(count, region.threads);
  if (!restore.nested) t_region = {region.threads, count};
  region.indices.resize(static_cast<std::size_t>(count));
  parent.regions.push_back(std::move(region));
  for (Index i = 0; i < count; ++i) {
    t_in_parallel = true, t_share = index_share;
    t_index = &parent.regions.back().indices[static_cast<std::size_t>(i)];
    t_mark = std::chrono::steady_clock::now();
    call(context, i);
    t_index->serial.back() += seconds_since(t_mark);
  }
}

}  // namespace detail

}  // namespace favor
