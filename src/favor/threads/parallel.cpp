// Where a parallel_for goes: the pool (pool.cpp), the tracing of work and span (work_span.cpp),
// a nested region's helpers, or a serial loop; and the per-thread settings that decide it.
#include "favor/parallel.hpp"

#include "favor/threads/pool.hpp"
#include "favor/threads/region.hpp"
#include "favor/threads/rouse.hpp"
#include "favor/threads/thread_plan.hpp"
#include "favor/threads/work_span.hpp"

#include <algorithm>
#include <atomic>

namespace favor {

namespace {
using detail::g_max_threads;
using detail::t_in_parallel;
using detail::t_share;

FAVOR_THREAD_LOCAL int t_limit = 0;         // a ThreadLimit's count for this thread's regions (0: none)
std::atomic<int> g_threads_used{1};         // for take_threads_used()
FAVOR_THREAD_LOCAL int t_call_threads = 0;  // a RousedCall's threads so far (0: none lives)
std::atomic<int> g_rouse_threads{1};        // the last RousedCall's, for rouse_threads()
}  // namespace

void set_max_threads(int threads) {
  g_max_threads = std::max(1, threads);
#ifndef FAVOR_SERIAL_ONLY
  if (g_max_threads > 1) detail::pool_reserve(g_max_threads - 1);
#endif
}

#ifndef FAVOR_SERIAL_ONLY
int max_threads() { return g_max_threads; }

int available_threads() { return t_in_parallel ? t_share : t_limit ? std::min(t_limit, max_threads()) : max_threads(); }

RegionShape enclosing_region() { return t_in_parallel ? detail::t_region : RegionShape{available_threads(), 1}; }
#else
RegionShape enclosing_region() { return {}; }
#endif

int take_threads_used() { return g_threads_used.exchange(1); }

ThreadLimit::ThreadLimit(int threads) : previous_(t_limit) { t_limit = std::max(1, threads); }
ThreadLimit::~ThreadLimit() { t_limit = previous_; }

void rouse_threads(int cores) {
#ifndef FAVOR_SERIAL_ONLY
  const int threads = std::min(g_rouse_threads.load(std::memory_order_relaxed), max_threads());
  if (threads > 1) detail::pool_rouse(threads - 1, threads <= cores);
#else
  (void)cores;
#endif
}

RousedCall::RousedCall() : previous_(t_call_threads) { t_call_threads = 1; }
RousedCall::~RousedCall() {
  g_rouse_threads.store(t_call_threads, std::memory_order_relaxed);
  t_call_threads = previous_ ? std::max(previous_, t_call_threads) : 0;
}

namespace detail {

void run_parallel(Index count, void (*call)(void*, Index), void* context) {
  if (count <= 0) return;
  if (tracing()) return run_traced(count, call, context);
#ifndef FAVOR_SERIAL_ONLY
  if (t_in_parallel) {
    // Published also where the region has a thread per index: threads that finish their indices
    // first then help the others' inner loops, which keeps them busy when indices take unequal
    // times (causal heads, a core shared with another process or VM).
    if (count > 1 && pool_run_nested(count, call, context)) return;
  } else {
    // Every thread the call may use is invited, also past `count`: the ones without an index help
    // with the nested regions of the others.
    const int threads = available_threads();
    if (threads > 1 && pool_run(count, threads, call, context)) {
      if (t_call_threads) t_call_threads = std::max(t_call_threads, threads);
      for (int used = g_threads_used.load(std::memory_order_relaxed);
           used < threads && !g_threads_used.compare_exchange_weak(used, threads, std::memory_order_relaxed);) {
      }
      return;
    }
  }
#endif
  for (Index i = 0; i < count; ++i) call(context, i);
}

}  // namespace detail

}  // namespace favor
