// A task for the calling thread while a call's helper threads start on its work (internal).
//
// Why: some of what a call costs can only be done on the thread that made it, and does not
// depend on the result: the wasm bindings make the array a large result is copied out into, and
// the system maps its pages in as they are first written, which took as long as copying the
// inputs in and the output out together. Done after the call, that time is serial and caps how
// far threads speed the call up; done here, the helpers compute meanwhile.
#pragma once

#include <functional>

namespace favor {

// While it lives, the first parallel region this thread starts with helper threads runs `task`
// on this thread, once: after the helpers are woken and before this thread takes any of the
// region's indices (the helpers take its share meanwhile, so the region ends no later than the
// task alone would delay the call). A call that starts no such region (on one thread, or in a
// build without threads) never runs it. The task must not throw: what it throws is dropped.
class CallerTask {
 public:
  explicit CallerTask(std::function<void()> task);
  ~CallerTask();
  CallerTask(const CallerTask&) = delete;
  CallerTask& operator=(const CallerTask&) = delete;

 private:
  std::function<void()> task_;
  std::function<void()>* previous_;
};

}  // namespace favor
