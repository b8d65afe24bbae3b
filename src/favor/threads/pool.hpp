// The helper threads that run parallel regions (internal; pool.cpp says how). Absent from a
// build without threads (FAVOR_SERIAL_ONLY), where every region is a serial loop.
#pragma once

#include "favor/types.hpp"

namespace favor::detail {

// Runs indices [0, count) of a region on `threads` threads, this one and threads - 1 helpers
// (fewer if the platform gave fewer), and returns when all are done, rethrowing the lowest
// index's exception. False if another thread's region is running: the caller then runs the loop
// itself.
bool pool_run(Index count, int threads, void (*call)(void*, Index), void* context);

// A region started inside a region's index: published for that region's threads that have run
// out of indices, run here as well; false if there is no free slot (run it serially).
bool pool_run_nested(Index count, void (*call)(void*, Index), void* context);

// Starts helpers up to `helpers` and runs one region on all of them at once, so that what they
// keep is allocated from the start.
void pool_reserve(int helpers);

// Wakes the first `helpers` helpers that sleep, to spin for a region about to come (rouse.hpp),
// and, if `keep_spinning`, keeps those of them still spinning after their last region spinning
// as long; nothing while a region runs.
void pool_rouse(int helpers, bool keep_spinning);

}  // namespace favor::detail
