// Where a parallel call's time goes on T threads (internal; bench/native/work_span.cpp reports
// it): each thread's time split into computing an index, the caller working alone outside
// regions, and waiting (for its first index of a region, between indices, for the region's last
// index to end, or for a region it was not invited to), so that a speed-up below the pool model's
// can be read as threads slower together (the work grown) or threads idle (and where), on the
// machine that ran it.
#pragma once

#include <chrono>
#include <functional>

namespace favor {

// Thread-seconds of one call on `threads` threads; they add up to threads x wall.
struct ThreadTime {
  int threads = 1;       // max_threads() during the call
  int regions = 0;       // the regions that ran on the pool
  double wall = 0;       // seconds, the call
  double work = 0;       // in an index (a thread's outermost one: nested indices run inside it)
  double serial = 0;     // the calling thread outside regions
  double alone = 0;      // the other threads meanwhile
  double start = 0;      // a region's invited thread before its first index (all of it if none)
  double between = 0;    // ... between its indices (waiting for nested work to help with)
  double end = 0;        // ... after its last index, until the region ends
  double uninvited = 0;  // threads a region did not invite (it was worth fewer), all of it
  // Whether threads ran their indices at unequal speeds: over the regions where two threads or
  // more ran indices, weighted by each region's length, each thread's mean index time there ÷ the
  // median thread's; for the slowest thread (1 where all ran alike; the pieces of a region are
  // cut alike, so a thread's longer indices are a slower thread's), and for the calling thread
  // (where it ran one). Regions where a thread helped with a region inside an index are left out
  // (that index's time holds its helpers' share). 0 where no region is left.
  double slowest_index = 0, caller_index = 0;
};

// Runs call() on this thread with its regions on the pool as usual, each index's start and end
// on each thread recorded, and returns where the time went. Only one recording at a time, and no
// other thread may start a region while it runs.
ThreadTime record_thread_time(const std::function<void()>& call);

namespace detail {

// The pool's hooks while a recording runs (recording() is null otherwise): a region starts (with
// the threads it invites) and ends on the calling thread; an index's interval is noted by the
// thread that ran it (`thread`: 0 the caller, h + 1 helper h), outermost indices only: the
// region's own, or (`inner`) those of a region inside another thread's index that it helped with.
struct Recording;
Recording* recording();
void region_started(Recording& r, int invited);
void region_ended(Recording& r);
void note_index(Recording& r, int thread, std::chrono::steady_clock::time_point start,
                std::chrono::steady_clock::time_point end, bool inner);

}  // namespace detail

}  // namespace favor
