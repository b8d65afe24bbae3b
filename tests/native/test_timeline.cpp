// record_thread_time (src/favor/threads/timeline.hpp): a call's thread-seconds on T threads split into
// work, the caller alone, and waiting, on calls whose parts are known (sleeps), checked to add up
// to T x wall and each part to be at least what the call was built to spend there.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>

#include "favor/parallel.hpp"
#include "favor/threads/thread_plan.hpp"
#include "favor/threads/timeline.hpp"
#include "thread_count.hpp"

namespace {

using favor::Index;
using favor::ThreadTime;
using threads_test::Threads;

void sleep_ms(double ms) { std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(ms)); }

double total(const ThreadTime& t) { return t.work + t.serial + t.alone + t.start + t.between + t.end + t.uninvited; }


// Rounding aside, the parts are the threads' whole time.
constexpr double kSum = 1e-9;

TEST(ThreadTime, PartsAddUpToThreadsTimesWallAndEachHoldsWhatWasSpentThere) {
  const Threads threads(2);
  const ThreadTime t = favor::record_thread_time([] {
    sleep_ms(2);                                                // the caller alone
    favor::parallel_for(2, [](Index) { sleep_ms(3); });         // an index each (or both on one)
    favor::parallel_for(1, [](Index) { sleep_ms(2); });         // the helper invited, nothing to do
  });
  EXPECT_EQ(t.threads, 2);
  EXPECT_EQ(t.regions, 2);
  EXPECT_NEAR(total(t), 2 * t.wall, kSum);
  EXPECT_GE(t.serial, 2e-3);
  EXPECT_DOUBLE_EQ(t.alone, t.serial);
  EXPECT_GE(t.work, 8e-3);
  EXPECT_GE(t.start, 2e-3);  // the helper through the one-index region
  EXPECT_EQ(t.uninvited, 0.0);
}

TEST(ThreadTime, ThreadsARegionDoesNotInviteAreCountedApart) {
  const Threads threads(4);
  const ThreadTime t = favor::record_thread_time([] {
    const favor::ThreadLimit limit(2);
    favor::parallel_for(2, [](Index) { sleep_ms(2); });
  });
  EXPECT_EQ(t.threads, 4);
  EXPECT_EQ(t.regions, 1);
  EXPECT_NEAR(total(t), 4 * t.wall, kSum);
  EXPECT_GE(t.uninvited, 2 * 2e-3);  // two threads through the whole region
  EXPECT_GE(t.work, 4e-3);
}

TEST(ThreadTime, NestedIndicesCountOnceInsideTheirIndex) {
  const Threads threads(2);
  const ThreadTime t = favor::record_thread_time([] {
    favor::parallel_for(2, [](Index) { favor::parallel_for(4, [](Index) { sleep_ms(1); }); });
  });
  EXPECT_EQ(t.regions, 1);
  // Counted twice, the nested indices would take the parts past the threads' whole time.
  EXPECT_NEAR(total(t), 2 * t.wall, kSum);
  EXPECT_GE(t.work, 8e-3);
  EXPECT_LE(t.work, 2 * t.wall);
}

// Two indices that wait for each other (each thread runs one), then sleep `first` and `second` ms.
ThreadTime two_at_once(double first, double second) {
  return favor::record_thread_time([&] {
    std::atomic<int> arrived{0};
    favor::parallel_for(2, [&](Index i) {
      arrived.fetch_add(1);
      const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      while (arrived.load() < 2 && std::chrono::steady_clock::now() < give_up) {
      }
      sleep_ms(i == 0 ? first : second);
    });
  });
}

TEST(ThreadTime, ThreadsThatRanIndicesSlowerStandOut) {
  const Threads threads(2);
  // Index 1 four times index 0: the slower thread's ÷ the median (the mean of two) is 1.6 for
  // sleeps of exactly 5 and 20 ms; it stays within [1.3, 2) while the short one overruns by
  // less than 5 ms more than the long one.
  const ThreadTime uneven = two_at_once(5, 20);
  ASSERT_GT(uneven.slowest_index, 0.0);  // both threads ran an index
  EXPECT_GE(uneven.slowest_index, 1.3);
  EXPECT_LT(uneven.slowest_index, 2.0);
  // The caller ran one of the two: 0.4 for the short (home ranges give it index 0), 1.6 for the
  // long.
  EXPECT_TRUE(uneven.caller_index <= 0.7 || uneven.caller_index >= 1.3) << uneven.caller_index;
  const ThreadTime even = two_at_once(10, 10);  // within 1.25 while they differ by < 5 ms
  EXPECT_GE(even.slowest_index, 1.0);
  EXPECT_LE(even.slowest_index, 1.25);
  EXPECT_GE(even.caller_index, 0.75);
  EXPECT_LE(even.caller_index, 1.25);
  // One thread at work in every region: nothing to compare.
  const ThreadTime alone = favor::record_thread_time([] { favor::parallel_for(1, [](Index) { sleep_ms(1); }); });
  EXPECT_EQ(alone.slowest_index, 0.0);
  EXPECT_EQ(alone.caller_index, 0.0);
}

TEST(ThreadTime, OneThreadIsAllSerialAndRecordingsDoNotNest) {
  const Threads threads(1);
  const ThreadTime t = favor::record_thread_time([] { favor::parallel_for(3, [](Index) { sleep_ms(1); }); });
  EXPECT_EQ(t.regions, 0);
  EXPECT_DOUBLE_EQ(t.serial, t.wall);
  EXPECT_EQ(t.work + t.alone + t.start + t.between + t.end + t.uninvited, 0.0);
  EXPECT_THROW(favor::record_thread_time([] { favor::record_thread_time([] {}); }), std::logic_error);
  // A call that throws ends its recording: the next one records.
  EXPECT_THROW(favor::record_thread_time([] { throw std::runtime_error("x"); }), std::runtime_error);
  EXPECT_NO_THROW(favor::record_thread_time([] {}));
}

}  // namespace
