// A tiny thread layer: parallel_for over independent indices on up to max_threads() threads.
//
// Results never depend on the thread count as long as fn(i) writes only what index i owns:
// callers partition work by fixed sizes and combine partial results in a fixed order.
// In a WebAssembly build without pthreads everything runs serially on the calling thread.
#pragma once

#include <utility>

#include "types.hpp"

// Emscripten without -pthread has no std::thread: every region is a serial loop, and the thread
// counts below are the constant 1, so that each caller's code for several threads folds away.
#if defined(__EMSCRIPTEN__) && !defined(__EMSCRIPTEN_PTHREADS__)
#define FAVOR_SERIAL_ONLY 1
#endif

namespace favor {

// Threads used by later parallel_for calls (the caller's thread included); clamped to >= 1.
// Default 1. Starts the helper threads it needs now; they are kept (waiting) until the process
// ends, and serve one parallel_for at a time (another thread's call meanwhile runs serially).
// Not meant to be changed while a parallel_for runs.
void set_max_threads(int threads);
// The threads a parallel_for started here would use: 1 inside a parallel region.
#ifdef FAVOR_SERIAL_ONLY
inline int max_threads() { return 1; }
inline int available_threads() { return 1; }
#else
int max_threads();
int available_threads();
#endif
// The most threads a parallel_for has been given since the previous call (1 if none had more):
// each call takes as many as its work is worth (thread_plan.hpp), at most max_threads().
int take_threads_used();

namespace detail {
void run_parallel(Index count, void (*call)(void*, Index), void* context);
}

// Runs fn(i) for every i in [0, count), in no fixed order. Blocks until all are done. Once an
// index throws, indices above it that have not started never start, those below it still run,
// and the exception of the lowest index that threw is rethrown here: the one a serial loop would
// meet. Inside a parallel region (fn calling
// parallel_for) the inner loop is offered to the region's threads that have run out of indices,
// so it may run on several threads.
template <class F>
void parallel_for(Index count, F&& fn) {
#ifdef FAVOR_SERIAL_ONLY
  for (Index i = 0; i < count; ++i) fn(i);  // inlined: no call through a pointer per index
#else
  auto call = [](void* context, Index i) { (*static_cast<std::remove_reference_t<F>*>(context))(i); };
  detail::run_parallel(count, call, const_cast<void*>(static_cast<const void*>(&fn)));
#endif
}

}  // namespace favor
