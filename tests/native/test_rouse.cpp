// rouse_threads: it wakes, of the helpers that sleep, as many as the last RousedCall's regions
// took threads less the caller, no more, each once (also when the helpers it wakes wake the
// rest); with a core for every thread it also reaches a helper still spinning after the last
// call, once; a helper woken so goes back to sleep when no job comes; a rousing while a region
// runs leaves every helper that region invited to come to it; and regions after a rousing
// compute what they compute without one.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "favor/parallel.hpp"
#include "favor/threads/rouse.hpp"
#include "favor/threads/thread_plan.hpp"
#include "thread_count.hpp"
#include "helpers_meet.hpp"

namespace {

using favor::Index;

using threads_test::Threads;

// Waits (at most 20 s, so that a failure cannot hang the test) until `done()`; returns done().
template <class Done>
bool eventually(Done done) {
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!done() && std::chrono::steady_clock::now() < give_up) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return done();
}

bool all_asleep() {
  const std::vector<bool> asleep = favor::detail::helpers_asleep();
  return std::find(asleep.begin(), asleep.end(), false) == asleep.end();
}

// A RousedCall whose one region runs on up to `limit` threads.
void roused_call(int limit) {
  const favor::RousedCall call;
  const favor::ThreadLimit threads(limit);
  favor::parallel_for(8, [](Index) { std::this_thread::sleep_for(std::chrono::microseconds(200)); });
}

// The helpers rouse_threads() wakes once every helper sleeps, counted after they have all gone
// back to sleep (so that a second waking of one would be counted too).
long long rousings_from_sleep() {
  EXPECT_TRUE(eventually(all_asleep)) << "the helpers did not all go to sleep";
  const long long before = favor::detail::rousings();
  favor::rouse_threads(0);
  // Every roused helper has woken once it no longer sleeps...
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  // ...and sleeps again after its spin.
  EXPECT_TRUE(eventually(all_asleep)) << "roused helpers did not go back to sleep";
  return favor::detail::rousings() - before;
}

TEST(Rouse, WakesAsManyHelpersAsTheLastRousedCallTook) {
  Threads t(4);
  ASSERT_GE(favor::detail::helpers_asleep().size(), 3u);
  roused_call(4);
  EXPECT_EQ(rousings_from_sleep(), 3);
  roused_call(2);
  EXPECT_EQ(rousings_from_sleep(), 1);
  roused_call(1);
  EXPECT_EQ(rousings_from_sleep(), 0);
  // Calls that are not RousedCalls leave the count as the last one set it.
  roused_call(3);
  {
    const favor::ThreadLimit threads(1);
    favor::parallel_for(8, [](Index) {});
  }
  EXPECT_EQ(rousings_from_sleep(), 2);
}

// The caller wakes two and returns; the helpers it woke wake the others, each once.
TEST(Rouse, WakesEveryHelperOnceWhenTheWokenWakeTheRest) {
  Threads t(8);
  ASSERT_GE(favor::detail::helpers_asleep().size(), 7u);
  roused_call(8);
  for (int round = 0; round < 5; ++round) EXPECT_EQ(rousings_from_sleep(), 7) << "round " << round;
  roused_call(6);
  EXPECT_EQ(rousings_from_sleep(), 5);
}

// Rousings from another thread while regions of 8 threads start with their helpers asleep: each
// region still gets every helper it invited (a rousing of one helper must not take over the
// waking of the seven).
TEST(Rouse, RousingWhileARegionRunsLeavesItsHelpersComing) {
  Threads t(8);
  roused_call(2);  // rouse_threads() wakes one helper
  std::atomic<bool> done{false};
  std::thread rouser([&] {
    while (!done.load()) {
      favor::rouse_threads(64);
      std::this_thread::sleep_for(std::chrono::microseconds(10));
    }
  });
  int round = 0;
  for (; round < 100; ++round) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    if (!every_helper_came(8)) break;
  }
  done = true;
  rouser.join();
  EXPECT_EQ(round, 100) << "round " << round << ": an invited helper did not wake";
}

// Right after a call its helper is still spinning, or, if this thread was held up, asleep; either
// way a rousing with a core for every thread reaches it once (woken, or kept spinning for the next
// call rather than left to sleep while that call copies its inputs in).
TEST(Rouse, ReachesAHelperStillSpinningAfterTheLastCall) {
  Threads t(2);
  for (int round = 0; round < 50; ++round) {
    roused_call(2);
    const long long before = favor::detail::rousings();
    favor::rouse_threads(2);
    // Reached (a helper woken may take a while to run), then asleep again, reached no more often.
    ASSERT_TRUE(eventually([&] { return favor::detail::rousings() > before; })) << "round " << round;
    ASSERT_TRUE(eventually(all_asleep)) << "round " << round;
    EXPECT_EQ(favor::detail::rousings() - before, 1) << "round " << round;
  }
}

TEST(Rouse, NeverPastTheThreadsSetNow) {
  {
    Threads t(4);
    roused_call(4);
  }
  Threads t(2);  // the last RousedCall took 4: only 1 helper may be woken now
  EXPECT_EQ(rousings_from_sleep(), 1);
}

TEST(Rouse, RegionsAfterARousingComputeTheSame) {
  Threads t(4);
  roused_call(4);
  std::vector<double> serial(1000), rousedRun(1000);
  for (std::size_t i = 0; i < serial.size(); ++i) serial[i] = static_cast<double>(i) * 0.5 + 1.0;
  for (int round = 0; round < 20; ++round) {
    if (round % 2) std::this_thread::sleep_for(std::chrono::milliseconds(2));  // helpers asleep
    favor::rouse_threads(round % 3 ? 64 : 0);
    if (round % 4 == 1) std::this_thread::sleep_for(std::chrono::microseconds(300));  // spinning
    const favor::RousedCall call;
    favor::parallel_for(static_cast<Index>(rousedRun.size()), [&](Index i) {
      rousedRun[static_cast<std::size_t>(i)] = static_cast<double>(i) * 0.5 + 1.0;
    });
    ASSERT_EQ(rousedRun, serial) << "round " << round;
    std::fill(rousedRun.begin(), rousedRun.end(), 0.0);
  }
}

}  // namespace
