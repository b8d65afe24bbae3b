#include "parallel.hpp"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <system_error>
#include <vector>

// Emscripten without -pthread has no std::thread: compile to a serial loop.
#if defined(__EMSCRIPTEN__) && !defined(__EMSCRIPTEN_PTHREADS__)
#define FAVOR_SERIAL_ONLY 1
#else
#include <thread>
#endif

namespace favor {

namespace {
std::atomic<int> g_max_threads{1};
thread_local bool t_in_parallel = false;  // nested regions run serially (no oversubscription,
                                          // and Emscripten cannot start a thread from a worker
                                          // while the main thread blocks in join)
}  // namespace

void set_max_threads(int threads) { g_max_threads = std::max(1, threads); }

int max_threads() {
#ifdef FAVOR_SERIAL_ONLY
  return 1;
#else
  return g_max_threads;
#endif
}

int available_threads() { return t_in_parallel ? 1 : max_threads(); }

namespace detail {

void run_parallel(Index count, void (*call)(void*, Index), void* context) {
  if (count <= 0) return;
  const Index threads = std::min<Index>(max_threads(), count);
  if (threads <= 1 || t_in_parallel) {
    for (Index i = 0; i < count; ++i) call(context, i);
    return;
  }
#ifndef FAVOR_SERIAL_ONLY
  // Indices are handed out one at a time: work per index may vary (causal blocks), and which
  // thread runs an index never changes what it computes.
  std::atomic<Index> next{0};
  std::atomic<bool> failed{false};
  std::mutex error_mutex;
  Index error_index = count;
  std::exception_ptr error;
  auto work = [&] {
    t_in_parallel = true;
    for (Index i; !failed && (i = next++) < count;) {
      try {
        call(context, i);
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mutex);
        if (i < error_index) error_index = i, error = std::current_exception();
        failed = true;
      }
    }
    t_in_parallel = false;
  };
  std::vector<std::thread> helpers;
  helpers.reserve(static_cast<std::size_t>(threads - 1));
  try {
    for (Index t = 1; t < threads; ++t) helpers.emplace_back(work);
  } catch (const std::system_error&) {
    // No more threads available: the ones started (and this one) do all the work.
  }
  work();
  for (auto& helper : helpers) helper.join();
  if (error) std::rethrow_exception(error);
#endif
}

}  // namespace detail

}  // namespace favor
