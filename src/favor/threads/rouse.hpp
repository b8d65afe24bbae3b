// Waking a call's helper threads before the call starts (internal).
//
// Why: a helper that has gone to sleep (after ~100 us without a job) takes a while to run again
// once woken: a few microseconds on a quiet machine, up to a few hundred where a virtual machine
// wakes idle virtual CPUs, and each region waits for it. A call made from JS first copies its
// inputs into the wasm heap on the calling thread; woken before that copy, the helpers wake
// while it runs, and are spinning, ready, when the call's first region starts.
#pragma once

#include <vector>

namespace favor {

// Wakes as many sleeping helpers as the last RousedCall took threads, less the caller (none
// before the first such call: a call of the same kind and shape usually comes next). The caller
// wakes two and returns; those wake the others (pool.cpp, waves). A helper woken so waits for
// a job spinning a while (long enough for a copy of a few MB) before it sleeps again.
//
// `cores`: the cores the process's threads run on (0: not known). Where those threads are no more
// than the cores, a helper still spinning after its last job when this is called spins on as
// long as one woken (rather than sleep during the copy, with the job's wave to wake it late);
// where they are more, it is left as it is: a spinning helper would hold a core the calling
// thread needs to copy the inputs in. Does nothing in a build without threads, or while a job
// runs.
void rouse_threads(int cores);

// While it lives, the most threads this thread's regions take are counted; when it ends, they are
// what rouse_threads() wakes next.
class RousedCall {
 public:
  RousedCall();
  ~RousedCall();
  RousedCall(const RousedCall&) = delete;
  RousedCall& operator=(const RousedCall&) = delete;

 private:
  int previous_;
};

namespace detail {
// For tests: helpers that rouse_threads() has reached so far (woken, or kept spinning); whether
// each helper started sleeps now (with no wake-up on its way).
long long rousings();
std::vector<bool> helpers_asleep();
}  // namespace detail

}  // namespace favor
