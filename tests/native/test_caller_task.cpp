// CallerTask: the calling thread's task runs once, on that thread, at the first region that has
// helper threads, before the caller takes an index and while the helpers take them; never where
// no helper runs; and what it throws does not reach the call.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

#include "favor/threads/caller_task.hpp"
#include "favor/parallel.hpp"
#include "favor/threads/thread_plan.hpp"
#include "thread_count.hpp"

namespace {

using favor::Index;

using threads_test::Threads;

// Counts a region's indices: all of them, and those the calling thread ran.
struct Indices {
  std::thread::id caller = std::this_thread::get_id();
  std::vector<std::atomic<int>> runs = std::vector<std::atomic<int>>(8);
  std::atomic<int> by_caller{0}, by_helpers{0};

  void region() {
    favor::parallel_for(static_cast<Index>(runs.size()), [&](Index i) {
      ++runs[static_cast<std::size_t>(i)];
      ++(std::this_thread::get_id() == caller ? by_caller : by_helpers);
    });
  }
  bool each_ran(int times) const {
    for (const auto& r : runs)
      if (r.load() != times) return false;
    return true;
  }
};

TEST(CallerTask, RunsOnceOnTheCallerWhileHelpersTakeItsIndices) {
  Threads t(2);
  Indices indices;
  int runs = 0, caller_indices_before = -1;
  bool on_caller = false, helpers_meanwhile = false;
  {
    const favor::CallerTask task([&] {
      ++runs;
      on_caller = std::this_thread::get_id() == indices.caller;
      caller_indices_before = indices.by_caller.load();
      // A helper takes indices while this runs (bounded, so that a failure cannot hang the test).
      const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
      while (!indices.by_helpers.load() && std::chrono::steady_clock::now() < give_up) std::this_thread::yield();
      helpers_meanwhile = indices.by_helpers.load() > 0;
    });
    indices.region();
    indices.region();  // not again
  }
  EXPECT_EQ(runs, 1);
  EXPECT_TRUE(on_caller);
  EXPECT_EQ(caller_indices_before, 0) << "the task runs before the caller takes an index";
  EXPECT_TRUE(helpers_meanwhile);
  EXPECT_TRUE(indices.each_ran(2));
}

TEST(CallerTask, NeverRunsWhereNoHelperDoes) {
  Indices indices;
  int runs = 0;
  std::atomic<int> inner_runs{0};
  {
    const Threads t(1);
    const favor::CallerTask task([&] { ++runs; });
    indices.region();  // one thread: no helpers
  }
  {
    const Threads t(2);
    {
      const favor::CallerTask task([&] { ++runs; });
      {
        const favor::ThreadLimit limit(1);  // a call that takes one thread
        indices.region();
      }
      EXPECT_EQ(runs, 0);
      indices.region();  // the first with a helper
      EXPECT_EQ(runs, 1);
      // Inside a region, a thread's nested regions are not the ones it runs tasks at.
      favor::parallel_for(2, [&](Index) {
        const favor::CallerTask inner([&] { ++inner_runs; });
        favor::parallel_for(4, [](Index) {});
      });
    }
    indices.region();  // the task's scope has ended
    favor::CallerTask empty(nullptr);
    indices.region();
  }
  EXPECT_EQ(runs, 1);
  EXPECT_EQ(inner_runs.load(), 0);
  EXPECT_TRUE(indices.each_ran(5));
}

TEST(CallerTask, WhatItThrowsDoesNotReachTheCall) {
  Threads t(2);
  Indices indices;
  bool ran = false;
  {
    const favor::CallerTask task([&] {
      ran = true;
      throw std::runtime_error("dropped");
    });
    EXPECT_NO_THROW(indices.region());
  }
  EXPECT_TRUE(ran);
  EXPECT_TRUE(indices.each_ran(1));
}

}  // namespace
