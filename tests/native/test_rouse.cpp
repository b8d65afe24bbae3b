// rouse_threads: it wakes, of the helpers that sleep, as many as the last RousedCall's regions
// took threads less the caller, no more; a helper woken so goes back to sleep when no job comes;
// helpers spinning after a job spin on past their usual time; and regions after a rousing compute
// what they compute without one.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "favor/parallel.hpp"
#include "favor/rouse.hpp"
#include "favor/thread_plan.hpp"

namespace {

using favor::Index;

struct Threads {
  explicit Threads(int n) { favor::set_max_threads(n); }
  ~Threads() { favor::set_max_threads(1); }
};

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
  favor::rouse_threads();
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

TEST(Rouse, NeverPastTheThreadsSetNow) {
  {
    Threads t(4);
    roused_call(4);
  }
  Threads t(2);  // the last RousedCall took 4: only 1 helper may be woken now
  EXPECT_EQ(rousings_from_sleep(), 1);
}

// Helpers spinning after a job keep spinning after a rousing, past the ~100 us after which they
// sleep otherwise: of those awake when it came, 300 us after it all still spin but for the odd one
// that a race let sleep (its spin ending as the rousing came). Counted only in tries where the
// test's own thread ran on time (a host can stall any thread), until 20 helpers were awake.
TEST(Rouse, SpinningHelpersSpinOn) {
  Threads t(2);  // with more threads than cores (the build machine has 2), helpers wait for a core
  roused_call(2);
  int awake = 0, slept = 0;
  for (int attempt = 0; attempt < 2000 && awake < 20; ++attempt) {
    favor::parallel_for(2, [](Index) { std::this_thread::sleep_for(std::chrono::microseconds(200)); });
    const auto roused = std::chrono::steady_clock::now();
    favor::rouse_threads();
    const std::vector<bool> before = favor::detail::helpers_asleep();
    while (std::chrono::steady_clock::now() - roused < std::chrono::microseconds(300)) {
    }
    const std::vector<bool> after = favor::detail::helpers_asleep();
    if (std::chrono::steady_clock::now() - roused > std::chrono::microseconds(400)) continue;  // stalled
    for (std::size_t id = 0; id < before.size(); ++id)
      if (!before[id]) ++awake, slept += after[id] ? 1 : 0;
  }
  ASSERT_GE(awake, 20);
  EXPECT_LE(4 * slept, awake) << slept << " of " << awake << " helpers awake at a rousing slept 300 us after it";
}

TEST(Rouse, RegionsAfterARousingComputeTheSame) {
  Threads t(4);
  roused_call(4);
  std::vector<double> serial(1000), rousedRun(1000);
  for (std::size_t i = 0; i < serial.size(); ++i) serial[i] = static_cast<double>(i) * 0.5 + 1.0;
  for (int round = 0; round < 20; ++round) {
    if (round % 2) std::this_thread::sleep_for(std::chrono::milliseconds(2));  // helpers asleep
    favor::rouse_threads();
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
