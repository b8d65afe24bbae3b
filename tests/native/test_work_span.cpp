// measure_work_span (src/favor/threads/work_span.hpp), which bench/work-span.mjs reads how far calls can
// scale with: a call's regions split as on T threads but run on the calling thread, and its span
// the longest chain. The timing checks are inequalities that hold whatever else the machine runs
// (a preempted step only adds time to the work and to every chain through it), from steps that
// spin for a set time.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

#include <favor/parallel.hpp>
#include <favor/threads/thread_plan.hpp>

#include "favor/threads/work_span.hpp"

namespace {

using favor::Index;

void spin(double milliseconds) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double, std::milli>(milliseconds);
  while (std::chrono::steady_clock::now() < end) {
  }
}

TEST(WorkSpan, RegionsSplitAsOnTheirThreadsAndRunOnTheCaller) {
  favor::set_max_threads(2);
  const std::thread::id caller = std::this_thread::get_id();
  int outer_threads = 0, worth = 0;
  std::vector<int> index_threads, nested_threads;
  std::vector<Index> order;
  bool elsewhere = false;
  const favor::WorkSpan ws = favor::measure_work_span(8, [&] {
    outer_threads = favor::available_threads();
    worth = favor::threads_for_work(1e12);
    favor::parallel_for(2, [&](Index i) {
      index_threads.push_back(favor::available_threads());  // unsynchronized: one thread, or a failure
      order.push_back(i);
      elsewhere = elsewhere || std::this_thread::get_id() != caller;
      favor::parallel_for(3, [&](Index j) {
        nested_threads.push_back(favor::available_threads());
        order.push_back(10 * (i + 1) + j);
        elsewhere = elsewhere || std::this_thread::get_id() != caller;
      });
    });
  });
  EXPECT_EQ(outer_threads, 8);
  EXPECT_EQ(worth, 8);  // the thread planning reads the traced count
  EXPECT_EQ(index_threads, (std::vector<int>{4, 4}));  // 8 threads over 2 indices, as the pool shares them
  EXPECT_EQ(nested_threads, (std::vector<int>(6, 1)));
  EXPECT_EQ(order, (std::vector<Index>{0, 10, 11, 12, 1, 20, 21, 22}));  // in order, depth first
  EXPECT_FALSE(elsewhere);
  // The trace has the same shape: the call's one region (8 threads invited), two indices of one
  // nested region of three each, and a serial stretch around every region.
  ASSERT_EQ(ws.call.regions.size(), 1u);
  EXPECT_EQ(ws.call.serial.size(), 2u);
  const favor::TracedRegion& outer = ws.call.regions[0];
  EXPECT_EQ(outer.threads, 8);
  ASSERT_EQ(outer.indices.size(), 2u);
  for (const favor::TracedIndex& index : outer.indices) {
    ASSERT_EQ(index.regions.size(), 1u);
    EXPECT_EQ(index.serial.size(), 2u);
    EXPECT_EQ(index.regions[0].threads, 1);
    ASSERT_EQ(index.regions[0].indices.size(), 3u);
    for (const favor::TracedIndex& inner : index.regions[0].indices) EXPECT_EQ(inner.serial.size(), 1u);
  }
  EXPECT_EQ(favor::max_threads(), 2);
  EXPECT_EQ(favor::available_threads(), 2);
  favor::set_max_threads(1);
}

TEST(WorkSpan, SpanIsTheLongestChainAndWorkTheWhole) {
  // 2 ms alone, then a region: index 0 spins 1 ms and runs a nested region of 4 x 3 ms, index 1
  // spins 2 ms. Work >= 2 + 1 + 12 + 2 = 17 ms. The longest chain passes the serial 2 ms and
  // index 0's 1 ms and one nested index (>= 6 ms in all); it leaves out at least three nested
  // indices and index 1 (9 + 2 ms), or all of index 0 (13 ms) if index 1 is the longer.
  const favor::WorkSpan ws = favor::measure_work_span(4, [] {
    spin(2);
    favor::parallel_for(2, [](Index i) {
      if (i == 1) return spin(2);
      spin(1);
      favor::parallel_for(4, [](Index) { spin(3); });
    });
  });
  EXPECT_GE(ws.work, 0.017);
  EXPECT_GE(ws.span, 0.006);
  EXPECT_LE(ws.span, ws.work - 0.011);
}

TEST(WorkSpan, CallWithoutRegionsIsOneChain) {
  const favor::WorkSpan ws = favor::measure_work_span(16, [] { spin(1); });
  EXPECT_GE(ws.work, 0.001);
  EXPECT_DOUBLE_EQ(ws.span, ws.work);
}

// A trace built by hand, in seconds: serial stretches s0 and s1 around a region (4 threads) of
// two indices, index 0 one stretch i0, index 1 stretches i1a and i1b around a nested region of
// two indices (n0, n1).
favor::WorkSpan traced(double s0, double s1, double i0, double i1a, double n0, double n1, double i1b) {
  favor::WorkSpan ws;
  ws.call.serial = {s0, s1};
  favor::TracedRegion region;
  region.threads = 4;
  region.indices.resize(2);
  region.indices[0].serial = {i0};
  favor::TracedIndex& one = region.indices[1];
  one.serial = {i1a, i1b};
  favor::TracedRegion nested;
  nested.indices.resize(2);
  nested.indices[0].serial = {n0};
  nested.indices[1].serial = {n1};
  one.regions.push_back(nested);
  ws.call.regions.push_back(region);
  return ws;
}

TEST(WorkSpan, LeastPerStepTakesEachStepsLeastTime) {
  // Each run slowed at another step (a preemption): the least of each is the undisturbed run.
  const favor::WorkSpan least = favor::least_per_step({traced(9, 1, 4, 1, 2, 3, 1), traced(1, 1, 4, 1, 9, 3, 1),
                                                       traced(1, 1, 4, 1, 2, 3, 9), traced(1, 9, 4, 9, 2, 3, 1)});
  const favor::TracedIndex& index1 = least.call.regions[0].indices[1];
  EXPECT_EQ(least.call.serial, (std::vector<double>{1, 1}));
  EXPECT_EQ(least.call.regions[0].threads, 4);
  EXPECT_EQ(least.call.regions[0].indices[0].serial, (std::vector<double>{4}));
  EXPECT_EQ(index1.serial, (std::vector<double>{1, 1}));
  EXPECT_EQ(index1.regions[0].indices[0].serial, (std::vector<double>{2}));
  EXPECT_EQ(index1.regions[0].indices[1].serial, (std::vector<double>{3}));
  // Work: 1 + 1 + 4 + (1 + 2 + 3 + 1) = 13; span: 1 + max(4, 1 + 3 + 1) + 1 = 7.
  EXPECT_DOUBLE_EQ(least.work, 13.0);
  EXPECT_DOUBLE_EQ(least.span, 7.0);
  // One run: itself, its work and span read from its trace.
  const favor::WorkSpan alone = favor::least_per_step({traced(2, 1, 4, 1, 2, 3, 1)});
  EXPECT_DOUBLE_EQ(alone.work, 14.0);
  EXPECT_DOUBLE_EQ(alone.span, 8.0);
}

TEST(WorkSpan, LeastPerStepRefusesRunsOfOtherShapes) {
  EXPECT_THROW(favor::least_per_step({}), std::invalid_argument);
  favor::WorkSpan fewer = traced(1, 1, 4, 1, 2, 3, 1);
  fewer.call.regions[0].indices[1].regions[0].indices.pop_back();
  EXPECT_THROW(favor::least_per_step({traced(1, 1, 4, 1, 2, 3, 1), fewer}), std::invalid_argument);
  favor::WorkSpan other_threads = traced(1, 1, 4, 1, 2, 3, 1);
  other_threads.call.regions[0].threads = 8;
  EXPECT_THROW(favor::least_per_step({traced(1, 1, 4, 1, 2, 3, 1), other_threads}), std::invalid_argument);
  favor::WorkSpan no_region = traced(1, 1, 4, 1, 2, 3, 1);
  no_region.call.regions.clear();
  no_region.call.serial = {1};
  EXPECT_THROW(favor::least_per_step({traced(1, 1, 4, 1, 2, 3, 1), no_region}), std::invalid_argument);
}

TEST(WorkSpan, ErrorsPassThroughAndLeaveThePoolAsItWas) {
  favor::set_max_threads(2);
  std::vector<Index> ran;
  EXPECT_THROW(favor::measure_work_span(8, [&] {
    favor::parallel_for(4, [&](Index i) {
      ran.push_back(i);
      favor::parallel_for(2, [&](Index j) {
        if (i == 1 && j == 0) throw std::runtime_error("index 1");
      });
    });
  }), std::runtime_error);
  EXPECT_EQ(ran, (std::vector<Index>{0, 1}));  // the serial loop's error: nothing after it starts
  EXPECT_EQ(favor::max_threads(), 2);
  EXPECT_EQ(favor::available_threads(), 2);  // not left inside a region
  // Regions run on the pool again: two indices that wait for each other finish only if they run
  // at once (traced, one after the other, each would give up after 10 s).
  std::atomic<int> arrived{0};
  std::atomic<bool> together{true};
  favor::parallel_for(2, [&](Index) {
    arrived.fetch_add(1);
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (arrived.load() < 2)
      if (std::chrono::steady_clock::now() > give_up) return together.store(false);
  });
  EXPECT_TRUE(together.load());
  favor::set_max_threads(1);
}

}  // namespace
