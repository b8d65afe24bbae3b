// A check that every helper a region invites comes to it, for the thread tests.
#pragma once

#include <atomic>
#include <chrono>
#include <thread>

#include <favor/parallel.hpp>

// Whether the indices of a region of `threads` indices on `threads` threads all met: each waits
// (up to 5 s) until all have arrived, so they meet only if every invited helper woke and took an
// index of its own. A lost wake-up would not hang a real call (the caller would take the
// sleeper's indices itself, only slower), so this is how one shows.
inline bool every_helper_came(int threads) {
  std::atomic<int> arrived{0};
  std::atomic<bool> met{true};
  favor::parallel_for(threads, [&](favor::Index) {
    arrived.fetch_add(1);
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (arrived.load() < threads) {
      if (std::chrono::steady_clock::now() > give_up) {
        met = false;
        return;
      }
      std::this_thread::yield();
    }
  });
  return met.load();
}
