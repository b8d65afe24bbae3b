// How many threads a call uses (internal). A region invites every thread it may use; a call
// whose work would not repay waking them all limits them first.
#pragma once

#include "favor/types.hpp"

namespace favor {

// The regions this thread starts while it lives use at most `threads` threads (>= 1).
class ThreadLimit {
 public:
  explicit ThreadLimit(int threads);
  ~ThreadLimit();
  ThreadLimit(const ThreadLimit&) = delete;
  ThreadLimit& operator=(const ThreadLimit&) = delete;

 private:
  int previous_;
};

}  // namespace favor
