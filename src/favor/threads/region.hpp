// A thread's place in parallel regions (internal): what the dispatch (parallel.cpp), the pool
// (pool.cpp) and the tracing of a call's work and span (work_span.cpp) share.
#pragma once

#include <algorithm>
#include <atomic>

#include "favor/parallel.hpp"  // FAVOR_SERIAL_ONLY: a build without threads
#include "favor/threads/thread_plan.hpp"
#include "favor/types.hpp"

// A thread's own variable; in a build without threads, a plain one. wasm-ld refuses thread-local
// storage in a module without atomics, and the compiler lowers a file's thread-locals to plain
// variables there only if that file also had atomic operations to lower.
#ifdef FAVOR_SERIAL_ONLY
#define FAVOR_THREAD_LOCAL
#else
#define FAVOR_THREAD_LOCAL thread_local
#endif

namespace favor::detail {

// set_max_threads()'s count; measure_work_span() sets it for the call it traces.
inline std::atomic<int> g_max_threads{1};

// Inside a region: a nested one becomes a job that idle threads of the region help with.
inline FAVOR_THREAD_LOCAL bool t_in_parallel = false;
// Inside a region: its threads per index (>= 1), what available_threads() reads there.
inline FAVOR_THREAD_LOCAL int t_share = 1;
// Inside a region: the threads and indices of the outermost region (a nested region's are those
// of the region it was started in), what enclosing_region() reads there.
inline FAVOR_THREAD_LOCAL RegionShape t_region{};

// The threads each index of a region of `count` indices on `threads` threads is given
// (available_threads() inside it): the threads shared out among at most `threads` indices.
inline int threads_per_index(Index count, int threads) {
  const int indices = static_cast<int>(std::min<Index>(count, threads));
  return (threads + indices - 1) / indices;
}

}  // namespace favor::detail
