// How many threads a call uses (internal). A region invites every thread it may use; a call
// whose work would not repay waking them all limits them first.
#pragma once

#include <utility>
#include <vector>

#include "favor/types.hpp"

namespace favor {

// Multiply-adds a thread is woken for: about the time a sleeping thread takes to wake and join,
// so a call uses one thread per this much of its work, and all of them from 2^19 x threads on.
constexpr double kWorkPerThread = 524288.0;

// The threads worth using for `multiply_adds` of work: one per kWorkPerThread, at least 1, at
// most max_threads().
int threads_for_work(double multiply_adds);

// Multiply-adds from which one part of a call (a head of a causal state's append, say) is worth a
// thread of its own: below it, handing the part over costs more than it saves.
constexpr double kWorkPerPart = 16384.0;

// The threads for `parts` independent parts of `work_per_part` multiply-adds each: 1 if a part
// is not worth a thread, else one per part, or more where the whole is worth more (the threads
// beyond the parts help with their inner loops); at most max_threads().
int threads_for_parts(Index parts, double work_per_part);

// A segment's features cut into blocks folded in parallel, `segments` segments at once, on
// `threads` threads: the fewest blocks per segment that give each thread the least work, the
// parts (segments x blocks) dealt out one at a time (pieces_per_block, in quanta: 2 segments on
// 3 threads take 3 blocks each, 2 rounds of a third, rather than 2 of a half); each block a whole
// number of `quantum` features (the last also takes features % quantum), block widths within 2x
// of each other. starts[b] is block b's first feature; starts.back() = features.
struct FeatureBlocks {
  std::vector<Index> starts;
  Index count() const { return static_cast<Index>(starts.size()) - 1; }
  Index width(Index b) const { return starts[static_cast<std::size_t>(b) + 1] - starts[static_cast<std::size_t>(b)]; }
};
FeatureBlocks plan_feature_blocks(Index segments, Index features, int threads, Index quantum);

// Rows from which a block of rows (a chunk of keys, a block of queries) may be cut into pieces
// made on several threads, where the blocks alone would leave threads idle (fewer blocks than
// threads, or a last round that not every thread has): smaller pieces would cost their threads
// more in hand-overs than they save (region_pieces goes down to half of it only to give a region
// its rounds). A call wakes at most one thread per kPieceRows rows.
constexpr Index kPieceRows = 32;

// Exact attention's least piece: its 64-row query blocks in halves only would leave 8 blocks on
// 12 threads 2 rounds of a half, as on 8 threads; thirds take 2 of a third (3, 3 and 2 strips of
// queries: exact attention computes whole strips, so its pieces are whole strips too, and a piece
// of 21 rows would cost as much as one of 24). An exact row costs S (d + dv) multiply-adds, and
// the threads a call wakes still follow its work and kPieceRows: finer pieces share the rows
// among the same threads.
constexpr Index kExactPieceRows = 16;

// The pieces each of `blocks` blocks of (up to) `units` units (rows, or strips of rows where a
// kernel computes whole strips) is cut into on `threads` threads, pieces of whole units and at
// least `min_units` (>= 1): the fewest that give each thread the least work, ceil(blocks p / T)
// pieces of at most ceil(units / p) units, the pieces dealt out one at a time (1 when the blocks
// share out evenly).
Index pieces_per_block(Index blocks, Index units, int threads, Index min_units = kPieceRows);

// The rounds of pieces a region is cut into at least, where its rows allow (region_pieces).
constexpr Index kLeastRounds = 8;

// The pieces each block of a region is cut into on `threads` threads: never fewer than
// pieces_per_block, and enough for blocks x pieces >= kLeastRounds x T, as long as each piece
// keeps at least half of min_units. Why: threads start late (woken one after another, or a
// virtual CPU the host runs late) or run slower (a core shared with the host or a sibling
// thread, a slower kind of core). A thread takes its own pieces before the others', so the
// others can take over only the pieces it has not begun when they run out: in a region of one
// or two rounds, one thread 1.5x slower ends it 1.5x late all the same; in four, the others take
// its last piece, and the region still ends about a piece late, a quarter over its share; in
// eight, about half a piece (the pool model with a slow thread, docs/design.md §12). Calls of
// more blocks already have the rounds and are not cut; on one thread nothing is.
Index region_pieces(Index blocks, Index units, int threads, Index min_units = kPieceRows);

// Rows [begin, end) of piece p of a block of `rows` rows cut into `pieces`: in order, sizes within
// one of each other.
inline std::pair<Index, Index> piece_rows(Index rows, Index pieces, Index p) {
  return {rows * p / pieces, rows * (p + 1) / pieces};
}

// The indices [begin, end) of a region of `count` that thread `thread` of `threads` (the caller
// 0) takes first, before it helps with what is left of the others' ranges: contiguous, sizes
// within one of each other, index t its own for thread t where there are fewer indices than
// threads. The same index goes to the same thread at every call of the same shape, so a thread
// that keeps a part's data in its cache (a decoder's state per head) finds it there at the next
// call.
std::pair<Index, Index> home_range(Index count, int threads, int thread);

// What the waves of a causal call's heads keep at once, all its heads together (causal_sweep.cpp).
constexpr double kWaveBytes = 128.0 * (1 << 20);

// A region's threads and its count of indices.
struct RegionShape {
  int threads = 1;
  Index count = 1;
};

// Rounds of indices run whole (causal heads) from which they share out without more (below).
constexpr Index kWholeIndexRounds = 4;

// Whether the indices of `region`, each run on one thread, share out among its threads well
// enough that an index need not be cut into pieces the others could take: kWholeIndexRounds
// rounds of them or more (the others take over a slow thread's last indices, and a short last
// round is a small part of the whole), or 2 or 3 rounds that every thread has whole. Fewer
// rounds than for pieces (kLeastRounds): cutting a causal head costs up to 15% more work
// (causal_sweep.cpp), cutting rows none that timings tell. In one round, one thread 1.5x slower
// than the rest makes the whole region 1.5x late, and a short last round leaves threads idle.
bool indices_share_out(RegionShape region);

// The segments of `segment_bytes` each (what a segment keeps for its sweeps: ~6 MiB at m = 256,
// dv = 64) a causal head with `threads` threads folds at once (a wave), the head an index of
// `region` (enclosing_region()): up to four per thread, so that a thread slowed down does not
// hold up the wave's end, or two on one thread (a head on one thread runs waves only to leave
// pieces for the threads that have no head left: the folds of two segments and their sweeps);
// within the head's share of kWaveBytes, so that the heads that run at once (min(count,
// threads) of the region) keep at most kWaveBytes together (8 heads of L = 16384 on 16 threads
// kept 400 MiB when each took all of it); at least one (a wave of fewer segments than threads
// folds them by blocks of features).
Index wave_segments(int threads, RegionShape region, double segment_bytes);

// The region this thread runs an index of (the outermost, where regions nest): its threads and
// indices; outside any region, {available_threads(), 1}. An index that could be cut into pieces
// reads it to know whether other threads could take them, and how many of its kind run at once.
RegionShape enclosing_region();

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
