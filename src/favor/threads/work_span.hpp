// The work and the span of a call (internal; bench/native/work_span.cpp reports them), so that
// how far a call's split into regions lets it scale can be read on a machine with few cores.
#pragma once

#include <functional>
#include <vector>

#include "favor/types.hpp"

namespace favor {

struct TracedRegion;

// What the call, or one index of a region, did in order, in seconds: serial[0], regions[0],
// serial[1], ..., regions.back(), serial.back() (serial has one more entry than regions).
struct TracedIndex {
  std::vector<double> serial{0.0};
  std::vector<TracedRegion> regions;
};

// A region: its indices, and the threads the pool would invite to it (available_threads() where
// it starts; 1 for a nested region, which the threads of the region around it help with).
struct TracedRegion {
  int threads = 1;
  std::vector<TracedIndex> indices;
};

// work: the call's time on one thread. span: its longest chain of steps that run one after
// another, recursively the time outside its regions plus, for each region, its longest index. On
// T threads that each run as fast as one alone, the call takes at least max(work / T, span), and
// a scheduler that leaves no thread idle while an index waits takes at most
// (work - span) / T + span (Brent's bound). call: the trace they are read from.
struct WorkSpan {
  double work = 0, span = 0;
  TracedIndex call;
};

// Runs call() on the calling thread with every region's indices one after another, each index
// timed, while the call splits its work as it would on `threads` threads (max_threads() reads
// `threads` meanwhile). No other thread may start a region while it runs.
WorkSpan measure_work_span(int threads, const std::function<void()>& call);

// Runs of the same split (the same regions and indices: the same call on the same thread count)
// as one: each serial stretch and each index at its least time over the runs, what it takes when
// nothing else on the machine slows it. A preempted step costs one run of one step, not the whole
// run it fell in, as the fastest whole run would keep. Throws std::invalid_argument if the runs
// are none or their traces differ in shape.
WorkSpan least_per_step(const std::vector<WorkSpan>& runs);

namespace detail {
// Whether measure_work_span is tracing this thread's call; if so, run_parallel hands each region
// to run_traced, which runs its indices here one after another, each as it would run among
// available_threads() threads, and times them.
bool tracing();
void run_traced(Index count, void (*call)(void*, Index), void* context);
}  // namespace detail

}  // namespace favor
