// The thread layer: parallel_for covers every index once, carries worker exceptions to the
// caller, lets idle threads help with nested regions, keeps and wakes its helpers. That the
// library's calls give the same bits on any number of threads is test_threaded_calls.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <favor/threads/thread_plan.hpp>
#include <favor/threads/work_span.hpp>

#include "helpers_meet.hpp"
#include "reference.hpp"
#include "thread_count.hpp"

namespace {

using ref::Index;
using ref::MatF;
using threads_test::Threads;

TEST(Parallel, MaxThreadsIsClamped) {
  Threads t(0);
  EXPECT_EQ(favor::max_threads(), 1);
  favor::set_max_threads(-5);
  EXPECT_EQ(favor::max_threads(), 1);
  favor::set_max_threads(3);
  EXPECT_EQ(favor::max_threads(), 3);
}

TEST(Parallel, ThreadsUsedIsTheWidestRegionSinceLastAsked) {
  Threads t(4);
  favor::take_threads_used();
  EXPECT_EQ(favor::take_threads_used(), 1) << "no region since";
  favor::parallel_for(1, [](Index) {});
  favor::parallel_for(8, [](Index) {});
  {
    const favor::ThreadLimit limit(2);
    favor::parallel_for(8, [](Index) {});
  }
  EXPECT_EQ(favor::take_threads_used(), 4);
  EXPECT_EQ(favor::take_threads_used(), 1) << "the count starts again";
  {
    const favor::ThreadLimit limit(3);
    favor::parallel_for(8, [](Index) { favor::parallel_for(4, [](Index) {}); });
  }
  EXPECT_EQ(favor::take_threads_used(), 3) << "a limited region; nested regions are part of it";
}

TEST(Parallel, EveryIndexRunsOnceOnSeveralThreads) {
  Threads t(3);
  std::vector<std::atomic<int>> hits(1000);
  std::mutex m;
  std::vector<std::thread::id> ids;
  favor::parallel_for(static_cast<Index>(hits.size()), [&](Index i) {
    ++hits[static_cast<std::size_t>(i)];
    std::this_thread::sleep_for(std::chrono::microseconds(50));  // lets the helpers take some
    std::lock_guard<std::mutex> lock(m);
    ids.push_back(std::this_thread::get_id());
  });
  for (auto& h : hits) ASSERT_EQ(h.load(), 1);
  std::sort(ids.begin(), ids.end());
  EXPECT_GT(std::unique(ids.begin(), ids.end()) - ids.begin(), 1) << "all work ran on one thread";
  favor::parallel_for(0, [](Index) { FAIL() << "count 0 must not call fn"; });
}

// The helpers are started once and kept: five regions on 3 threads run on at most 3 distinct
// threads (a thread per region would make up to 11), and a region on 2 threads on at most 2.
// Threads are told apart by a thread_local serial number (std::thread::id values are reused).
int thread_serial() {
  static std::atomic<int> next{0};
  thread_local const int serial = ++next;
  return serial;
}

TEST(Parallel, HelperThreadsAreKeptAcrossRegions) {
  std::mutex m;
  std::vector<int> ids;
  auto region = [&] {
    favor::parallel_for(64, [&](Index) {
      std::this_thread::sleep_for(std::chrono::microseconds(50));
      std::lock_guard<std::mutex> lock(m);
      ids.push_back(thread_serial());
    });
  };
  auto distinct = [&] {
    std::vector<int> u = ids;
    std::sort(u.begin(), u.end());
    return std::unique(u.begin(), u.end()) - u.begin();
  };
  {
    Threads t(3);
    for (int r = 0; r < 5; ++r) region();
    EXPECT_LE(distinct(), 3);
    EXPECT_GT(distinct(), 1);
  }
  ids.clear();
  Threads t(2);
  region();
  EXPECT_LE(distinct(), 2);
}

// Helpers that have gone to sleep between regions are woken for the next one, every one of
// them every time: by the caller, and by the helpers it woke, which wake the others too. (At most
// 8 threads, as in the other thread tests: helpers once started are kept, and each thread more
// makes every later test slower under ThreadSanitizer.)
TEST(Parallel, SleepingHelpersWakeForEveryRegion) {
  for (int threads : {4, 8}) {
    Threads t(threads);
    for (int round = 0; round < 20; ++round) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));  // past the helpers' spin: they sleep
      ASSERT_TRUE(every_helper_came(threads)) << threads << " threads, round " << round << ": an invited helper did not wake";
    }
  }
}

// Two threads of the caller's own calling parallel_for at once: each region covers its indices
// once (the second runs on its caller alone while the helpers serve the first).
TEST(Parallel, ConcurrentCallersEachGetEveryIndex) {
  Threads t(3);
  std::vector<std::atomic<int>> a(400), b(400);
  auto caller = [](std::vector<std::atomic<int>>& hits) {
    for (int r = 0; r < 20; ++r)
      favor::parallel_for(static_cast<Index>(hits.size()), [&](Index i) { ++hits[static_cast<std::size_t>(i)]; });
  };
  std::thread first(caller, std::ref(a)), second(caller, std::ref(b));
  first.join(), second.join();
  for (auto& h : a) ASSERT_EQ(h.load(), 20);
  for (auto& h : b) ASSERT_EQ(h.load(), 20);
}

TEST(Parallel, WorkerExceptionReachesTheCaller) {
  for (int threads : {1, 2, 3}) {
    Threads t(threads);
    std::atomic<int> calls{0};
    try {
      favor::parallel_for(64, [&](Index i) {
        ++calls;
        if (i == 5 || i == 40) throw std::runtime_error("index " + std::to_string(i));
      });
      ADD_FAILURE() << "no exception with " << threads << " threads";
    } catch (const std::runtime_error& e) {
      // Serially index 5 throws first and stops the loop; in parallel 40 may also have run,
      // but the lowest index's exception wins.
      EXPECT_STREQ(e.what(), "index 5") << threads << " threads";
    }
    EXPECT_LE(calls.load(), 64);
    // The layer still works afterwards.
    std::atomic<int> after{0};
    favor::parallel_for(10, [&](Index) { ++after; });
    EXPECT_EQ(after.load(), 10);
  }
}

// The error is the serial one whichever thread throws first: here index 25 throws at once and
// index 15 only after the indices before it have slept, yet 15's exception is the one rethrown,
// and every index below it ran.
TEST(Parallel, LowestThrowingIndexWinsWhicheverThrowsFirst) {
  for (int threads : {1, 2, 3, 4}) {
    Threads t(threads);
    std::vector<std::atomic<int>> hits(60);
    try {
      favor::parallel_for(static_cast<Index>(hits.size()), [&](Index i) {
        ++hits[static_cast<std::size_t>(i)];
        if (i < 15) std::this_thread::sleep_for(std::chrono::milliseconds(2));
        if (i == 15 || i == 25) throw std::runtime_error("index " + std::to_string(i));
      });
      ADD_FAILURE() << "no exception with " << threads << " threads";
    } catch (const std::runtime_error& e) {
      EXPECT_STREQ(e.what(), "index 15") << threads << " threads";
    }
    for (std::size_t i = 0; i <= 15; ++i) EXPECT_EQ(hits[i].load(), 1) << "index " << i << ", " << threads << " threads";
    for (auto& h : hits) EXPECT_LE(h.load(), 1);
  }
}

// ... and whichever throws last: index 15 throws once index 45 (another thread's) has started,
// and 45 throws after it; 15's exception is still the one rethrown, not the latest.
TEST(Parallel, LowestThrowingIndexWinsWhicheverThrowsLast) {
  for (int threads : {2, 3, 4}) {
    Threads t(threads);
    std::atomic<bool> started{false};
    try {
      favor::parallel_for(60, [&](Index i) {
        if (i == 45) {
          started = true;
          std::this_thread::sleep_for(std::chrono::milliseconds(20));
          throw std::runtime_error("index 45");
        }
        if (i == 15) {
          const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(5);
          while (!started && std::chrono::steady_clock::now() < give_up) std::this_thread::yield();
          throw std::runtime_error("index 15");
        }
      });
      ADD_FAILURE() << "no exception with " << threads << " threads";
    } catch (const std::runtime_error& e) {
      EXPECT_TRUE(started.load()) << threads << " threads: index 45 never ran";
      EXPECT_STREQ(e.what(), "index 15") << threads << " threads";
    }
  }
}

TEST(Parallel, CoreErrorsKeepTheirType) {
  Threads t(2);
  try {
    favor::parallel_for(8, [](Index i) { if (i == 7) favor::throw_range("q", "bad"); });
    ADD_FAILURE() << "no exception";
  } catch (const favor::Error& e) {
    EXPECT_EQ(e.kind(), favor::Error::Kind::range);
    EXPECT_EQ(e.argument(), "q");
  }
}

// A region of fewer indices than threads (heads, say) keeps every thread busy: the threads left
// without an index help with the inner regions of the others. Every inner index runs once, an
// inner error reaches the caller of the outer region, and regions nest to any depth.
TEST(Parallel, NestedRegionsAreHelpedByIdleThreads) {
  Threads t(4);
  std::mutex m;
  std::vector<int> ids;
  std::vector<std::atomic<int>> hits(2 * 64);
  favor::parallel_for(2, [&](Index outer) {
    EXPECT_EQ(favor::available_threads(), 2) << "4 threads over 2 indices";
    favor::parallel_for(64, [&](Index i) {
      ++hits[static_cast<std::size_t>(outer * 64 + i)];
      std::this_thread::sleep_for(std::chrono::microseconds(200));
      std::lock_guard<std::mutex> lock(m);
      ids.push_back(thread_serial());
    });
  });
  for (auto& h : hits) ASSERT_EQ(h.load(), 1);
  std::sort(ids.begin(), ids.end());
  EXPECT_GT(std::unique(ids.begin(), ids.end()) - ids.begin(), 2) << "the two idle threads never helped";

  // With one thread per index too: the thread whose index ends first helps with the other's
  // inner loop (the slow index is the last, so that it is published even when a helper that
  // wakes late leaves both indices to the caller).
  {
    favor::set_max_threads(2);
    std::vector<std::thread::id> ran(32);
    favor::parallel_for(2, [&](Index outer) {
      EXPECT_EQ(favor::available_threads(), 1);
      if (outer == 0) return;
      favor::parallel_for(32, [&](Index i) {
        std::this_thread::sleep_for(std::chrono::microseconds(300));
        ran[static_cast<std::size_t>(i)] = std::this_thread::get_id();
      });
    });
    std::sort(ran.begin(), ran.end());
    EXPECT_EQ(std::unique(ran.begin(), ran.end()) - ran.begin(), 2) << "the idle thread never helped";
    favor::set_max_threads(4);
  }

  std::atomic<int> deepest{0};
  favor::parallel_for(3, [&](Index) {
    favor::parallel_for(5, [&](Index) { favor::parallel_for(7, [&](Index) { ++deepest; }); });
  });
  EXPECT_EQ(deepest.load(), 3 * 5 * 7);

  EXPECT_THROW(favor::parallel_for(2, [&](Index o) {
                 favor::parallel_for(50, [&](Index i) {
                   if (o == 1 && i == 17) throw std::runtime_error("inner");
                 });
               }),
               std::runtime_error);
  std::atomic<int> after{0};
  favor::parallel_for(8, [&](Index) { favor::parallel_for(8, [&](Index) { ++after; }); });
  EXPECT_EQ(after.load(), 64) << "the pool works after an inner error";
}

// An index knows the region it runs in (the outermost, where regions nest): its threads and
// indices, on every thread that runs one, nested indices included; outside, the threads a region
// started there would have and one index. (A causal head decides from it whether to cut itself
// into pieces the others can take.)
TEST(Parallel, IndicesKnowTheRegionTheyRunIn) {
  const auto same = [](favor::RegionShape a, favor::RegionShape b) { return a.threads == b.threads && a.count == b.count; };
  {
    Threads t(4);
    EXPECT_TRUE(same(favor::enclosing_region(), {4, 1}));
    {
      const favor::ThreadLimit limit(2);
      EXPECT_TRUE(same(favor::enclosing_region(), {2, 1}));
    }
    std::atomic<int> outer_wrong{0}, inner_wrong{0}, inner{0};
    favor::parallel_for(6, [&](Index) {
      if (!same(favor::enclosing_region(), {4, 6})) ++outer_wrong;
      favor::parallel_for(16, [&](Index) {
        std::this_thread::sleep_for(std::chrono::microseconds(50));
        if (!same(favor::enclosing_region(), {4, 6})) ++inner_wrong;
        ++inner;
      });
    });
    EXPECT_EQ(outer_wrong.load(), 0);
    EXPECT_EQ(inner_wrong.load(), 0) << "a nested region's indices read its outer region";
    EXPECT_EQ(inner.load(), 6 * 16);
    EXPECT_TRUE(same(favor::enclosing_region(), {4, 1})) << "restored after the region";
    // Traced as on 8 threads (run here one index after another).
    int traced_wrong = 0;
    favor::measure_work_span(8, [&] {
      favor::parallel_for(3, [&](Index) {
        if (!same(favor::enclosing_region(), {8, 3})) ++traced_wrong;
        favor::parallel_for(2, [&](Index) { traced_wrong += !same(favor::enclosing_region(), {8, 3}); });
      });
    });
    EXPECT_EQ(traced_wrong, 0);
  }
  Threads t(1);
  int serial_wrong = 0;
  favor::parallel_for(3, [&](Index) { serial_wrong += !same(favor::enclosing_region(), {1, 1}); });
  EXPECT_EQ(serial_wrong, 0) << "one thread: a serial loop, no other thread to take a piece";
}

}  // namespace
