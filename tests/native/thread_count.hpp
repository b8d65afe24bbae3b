// The thread count of a test, and the check that a computation gives the same bits on several
// threads as on one (test_parallel.cpp, test_threaded_calls.cpp).
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <initializer_list>
#include <string>
#include <vector>

#include <favor/parallel.hpp>

#include "reference.hpp"

namespace threads_test {

using ref::MatF;

// Restores the thread count when a test ends, whatever happens.
struct Threads {
  explicit Threads(int n) { favor::set_max_threads(n); }
  ~Threads() { favor::set_max_threads(1); }
};

inline bool same_bits(const MatF& a, const MatF& b) {
  return a.rows() == b.rows() && a.cols() == b.cols() &&
         std::memcmp(a.data(), b.data(), sizeof(float) * static_cast<std::size_t>(a.size())) == 0;
}

// run() (a list of outputs) on one thread, then on each of `counts` threads: the same bits.
template <class Run>
void expect_same_bits_as_one_thread(const Run& run, std::initializer_list<int> counts, const std::string& what) {
  std::vector<MatF> one;
  {
    Threads t(1);
    one = run();
  }
  for (int threads : counts) {
    Threads t(threads);
    const std::vector<MatF> many = run();
    ASSERT_EQ(many.size(), one.size());
    for (std::size_t i = 0; i < one.size(); ++i)
      EXPECT_TRUE(same_bits(many[i], one[i])) << what << ", output " << i << ", " << threads << " threads";
  }
}

}  // namespace threads_test
