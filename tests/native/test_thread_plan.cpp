// The thread planning of thread_plan.hpp, for machines this 2-core one cannot be: every thread
// count up to 64. Feature blocks cover every feature once, in whole quanta, within 2x of each
// other in width, as many as give each thread the least work, so that where the features allow
// it, parts dealt out one at a time leave no thread idle while another has more than one left. A
// region's home ranges give every index to one thread, in order and evenly. And the threads a
// call uses grow with its work and never pass the threads there are.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include <favor/parallel.hpp>
#include <favor/threads/thread_plan.hpp>

namespace {

using favor::Index;

// Dealt out one at a time on `threads` threads, `blocks` blocks (segments, blocks of rows) of
// `units` units (quanta of features, rows, strips of rows) cut into p pieces of whole units each
// give a thread rounds(p) = ceil(blocks p / T) pieces of at most ceil(units / p) units: `chosen`
// pieces give the least of that any p up to `most` gives, and no fewer pieces give as little.
// Returns rounds(chosen).
Index expect_least_rounds(Index chosen, Index blocks, Index units, int threads, Index most, const std::string& at) {
  const auto rounds = [&](Index p) { return (blocks * p + threads - 1) / threads; };
  const auto cost = [&](Index p) { return rounds(p) * ((units + p - 1) / p); };
  for (Index p = 1; p <= most; ++p) {
    EXPECT_LE(cost(chosen), cost(p)) << at << ": " << p << " pieces do better";
    if (p < chosen) EXPECT_LT(cost(chosen), cost(p)) << at << ": " << p << " pieces do as well";
  }
  return rounds(chosen);
}

// The time of `sizes` (units of work, in order) dealt out one at a time on `threads` threads, each
// thread taking the next part when it is free: the most units any thread gets.
Index dealt_time(const std::vector<Index>& sizes, int threads) {
  std::vector<Index> busy(static_cast<std::size_t>(threads), 0);
  for (Index size : sizes) *std::min_element(busy.begin(), busy.end()) += size;
  return *std::max_element(busy.begin(), busy.end());
}

TEST(ThreadPlan, FeatureBlocksCoverBalanceAndFeedEveryThread) {
  for (int threads = 1; threads <= 64; ++threads) {
    for (Index segments : {1, 2, 3, 7, 16, 64}) {
      for (Index features : {16, 33, 64, 100, 256, 512, 1000}) {
        const Index quantum = 16;
        const favor::FeatureBlocks plan = favor::plan_feature_blocks(segments, features, threads, quantum);
        const std::string at = "T " + std::to_string(threads) + " segments " + std::to_string(segments) + " M " +
                               std::to_string(features);
        ASSERT_GE(plan.count(), 1) << at;
        ASSERT_EQ(plan.starts.front(), 0) << at;
        ASSERT_EQ(plan.starts.back(), features) << at;
        Index narrow = features, wide = 0;
        for (Index b = 0; b < plan.count(); ++b) {
          ASSERT_GT(plan.width(b), 0) << at;
          if (b + 1 < plan.count()) ASSERT_EQ(plan.width(b) % quantum, 0) << at << " block " << b;
          narrow = std::min(narrow, plan.width(b)), wide = std::max(wide, plan.width(b));
        }
        EXPECT_LE(wide, 2 * narrow) << at;
        // The least work per thread of any count of blocks up to the quanta, with the fewest blocks.
        const Index blocks = plan.count(), quanta = std::max<Index>(1, features / quantum);
        expect_least_rounds(blocks, segments, quanta, threads, std::min<Index>(quanta, threads), at);
        // Dealt out, the parts end as soon as that promises, and where the quanta allow a block
        // per thread, as soon as every segment cut in T blocks would: a thread left without a
        // part in the last round is one that finer blocks would not have ended sooner.
        std::vector<Index> sizes;
        for (Index s = 0; s < segments; ++s)
          for (Index b = 0; b < blocks; ++b) sizes.push_back(quanta / blocks + (b < quanta % blocks ? 1 : 0));
        const Index time = dealt_time(sizes, threads);
        EXPECT_LE(time, (segments * blocks + threads - 1) / threads * ((quanta + blocks - 1) / blocks)) << at;
        if (quanta >= threads) EXPECT_LE(time, segments * ((quanta + threads - 1) / threads)) << at;
      }
    }
  }
}

// Blocks of rows cut into pieces, for every T up to 64 and the least piece sizes the engines use
// (kPieceRows rows; exact attention's kExactPieceRows, in strips of 8 or 16 rows): none below the
// least (in a whole block); the pieces of a block cover its units once, in order, within one of
// each other; dealt out one at a time, the most work a thread gets (rounds of at most
// ceil(units / p) units) is as little as any cut allows, and no more pieces than that take it;
// where the units allow a piece per thread, the work ends as soon as with every block cut in T.
TEST(ThreadPlan, RowPiecesFeedEveryThreadAndCoverTheRows) {
  for (int threads = 1; threads <= 64; ++threads) {
    for (Index blocks : {1, 2, 3, 7, 64}) {
      for (Index rows : {1, 4, 8, 31, 32, 64, 100, 128, 1000}) {
        for (Index least : {favor::kPieceRows, favor::kExactPieceRows, favor::kExactPieceRows / 8,
                            favor::kExactPieceRows / 16}) {
          const Index pieces = favor::pieces_per_block(blocks, rows, threads, least);
          const std::string at = "T " + std::to_string(threads) + " blocks " + std::to_string(blocks) + " rows " +
                                 std::to_string(rows) + " least " + std::to_string(least);
          ASSERT_GE(pieces, 1) << at;
          if (blocks % threads == 0) EXPECT_EQ(pieces, 1) << at;
          const Index most = std::min<Index>(threads, std::max<Index>(1, rows / least));
          expect_least_rounds(pieces, blocks, rows, threads, most, at);
          Index next = 0, small = rows, large = 0;
          std::vector<Index> block;  // its pieces' sizes
          for (Index p = 0; p < pieces; ++p) {
            const auto [begin, end] = favor::piece_rows(rows, pieces, p);
            ASSERT_EQ(begin, next) << at << " piece " << p;
            next = end;
            small = std::min(small, end - begin), large = std::max(large, end - begin);
            block.push_back(end - begin);
          }
          std::vector<Index> sizes;
          for (Index b = 0; b < blocks; ++b) sizes.insert(sizes.end(), block.begin(), block.end());
          if (rows / least >= threads) EXPECT_LE(dealt_time(sizes, threads), blocks * ((rows + threads - 1) / threads)) << at;
          EXPECT_EQ(next, rows) << at;
          EXPECT_LE(large - small, 1) << at;
          if (pieces > 1) EXPECT_GE(small, least) << at;
        }
      }
    }
  }
}

// A region's pieces: never fewer than pieces_per_block cuts, and the fewest that give
// kLeastRounds rounds (blocks x pieces >= 8 T), or as many as pieces of half the least size
// allow; on one thread, one.
TEST(ThreadPlan, RegionsAreCutIntoAtLeastEightRounds) {
  using favor::kLeastRounds;
  ASSERT_EQ(kLeastRounds, 8);
  // The thread bench's short calls on 16 threads: exact attention at L = 512 (8 blocks of 8
  // strips, least 2 strips) in 64 pieces of a strip, and FAVOR+ at L = 1024 (8 blocks of 128
  // rows) in 64 of 16 rows, as fine as they go; one head of FAVOR+ at L = 4096 (32 blocks) in
  // quarters, of exact attention (64 blocks) in halves.
  EXPECT_EQ(favor::region_pieces(8, 8, 16, 2), 8);
  EXPECT_EQ(favor::region_pieces(8, 128, 16), 8);
  EXPECT_EQ(favor::region_pieces(32, 128, 16), 4);
  EXPECT_EQ(favor::region_pieces(64, 8, 16, 2), 2);
  EXPECT_EQ(favor::region_pieces(128, 8, 16, 2), 1);
  EXPECT_EQ(favor::region_pieces(16, 128, 10), 5);  // past pieces_per_block's thirds: 80 pieces, 8 rounds
  // On 2 and 4 threads: exact attention at L = 512 in 16 and 32 pieces, at L = 256 (4 blocks) in
  // 16 on 2; one FAVOR+ chunk of 128 rows in 8 pieces of 16 rows on 2.
  EXPECT_EQ(favor::region_pieces(8, 8, 2, 2), 2);
  EXPECT_EQ(favor::region_pieces(8, 8, 4, 2), 4);
  EXPECT_EQ(favor::region_pieces(4, 8, 2, 2), 4);
  EXPECT_EQ(favor::region_pieces(1, 128, 2), 8);
  EXPECT_EQ(favor::region_pieces(1, 128, 1), 1);
  for (int threads = 1; threads <= 64; ++threads) {
    for (Index blocks : {1, 2, 3, 7, 8, 16, 64, 1000}) {
      for (Index rows : {1, 8, 15, 16, 31, 32, 63, 64, 100, 128, 1000}) {
        for (Index least : {Index{1}, Index{2}, favor::kPieceRows}) {
          const std::string at = "T " + std::to_string(threads) + " blocks " + std::to_string(blocks) + " rows " +
                                 std::to_string(rows) + " least " + std::to_string(least);
          const Index for_t = favor::pieces_per_block(blocks, rows, threads, least);
          const Index pieces = favor::region_pieces(blocks, rows, threads, least);
          if (threads == 1) {
            EXPECT_EQ(pieces, 1) << at;
            continue;
          }
          ASSERT_GE(pieces, for_t) << at;
          const Index half = std::max<Index>(1, least / 2);
          if (pieces > for_t) {
            EXPECT_GE(rows / pieces, half) << at << ": no piece below half the least";
            EXPECT_LT(blocks * (pieces - 1), kLeastRounds * threads) << at << ": the fewest pieces for the rounds";
          }
          EXPECT_TRUE(blocks * pieces >= kLeastRounds * threads || rows / (pieces + 1) < half)
              << at << ": the rounds, or as fine as the rows allow";
        }
      }
    }
  }
}

TEST(ThreadPlan, HomeRangesCoverEveryIndexOnceInOrder) {
  for (int threads = 1; threads <= 64; ++threads) {
    for (Index count : {1, 2, 3, 7, 8, 16, 63, 64, 65, 100, 1000}) {
      const std::string at = "T " + std::to_string(threads) + " count " + std::to_string(count);
      Index next = 0, few = count, many = 0;
      for (int t = 0; t < threads; ++t) {
        const auto [begin, end] = favor::home_range(count, threads, t);
        ASSERT_EQ(begin, next) << at << " thread " << t << ": contiguous, in thread order";
        ASSERT_LE(begin, end) << at;
        if (t < count) ASSERT_GT(end, begin) << at << ": no thread without an index while there are enough";
        if (count < threads && t < count) ASSERT_EQ(begin, t) << at << ": index t is thread t's";
        few = std::min(few, end - begin), many = std::max(many, end - begin);
        next = end;
      }
      EXPECT_EQ(next, count) << at << ": every index once";
      EXPECT_LE(many - few, 1) << at << ": sizes within one";
    }
  }
}

// A region's indices share out (an index on one thread need not be cut into pieces) with 4
// rounds or more, or 2 or 3 whole ones; not in one round, nor with a short last round among
// fewer than 4.
TEST(ThreadPlan, IndicesShareOutInFourRoundsOrInTwoOrThreeWholeOnes) {
  for (int threads = 1; threads <= 64; ++threads) {
    for (Index count = 1; count <= 300; ++count) {
      const std::string at = std::to_string(count) + " indices on " + std::to_string(threads) + " threads";
      const bool share = favor::indices_share_out({threads, count});
      if (count <= threads) EXPECT_FALSE(share) << at << ": one round";
      if (count >= 4 * threads) EXPECT_TRUE(share) << at << ": 4 rounds or more";
      if (count > threads && count < 4 * threads) EXPECT_EQ(share, count % threads == 0) << at << ": 2 or 3 rounds, whole or not";
    }
  }
  EXPECT_FALSE(favor::indices_share_out({8, 8})) << "one round";
  EXPECT_FALSE(favor::indices_share_out({3, 8})) << "a short last round";
  EXPECT_TRUE(favor::indices_share_out({4, 8}));
  EXPECT_TRUE(favor::indices_share_out({2, 8}));
  EXPECT_TRUE(favor::indices_share_out({8, 33}));
}

// A causal head's waves: 1 to 4 segments per thread (2 on one thread), as many as fit in its
// share of kWaveBytes, so that the heads that run at once (min(count, threads) of the region)
// keep at most kWaveBytes together unless each keeps a single segment; outside a region a head
// has all of it.
TEST(ThreadPlan, CausalWavesShareTheirBytesAmongTheHeadsAtOnce) {
  for (const double segment : {0.7e6, 6.4e6, 50e6, 300e6}) {
    for (int region_threads = 1; region_threads <= 64; ++region_threads) {
      for (Index count : {1, 2, 3, 7, 8, 16, 64, 100}) {
        const Index at_once = std::min<Index>(count, region_threads);
        const int threads = std::max(1, region_threads / static_cast<int>(at_once));  // a head's share
        const std::string at = "segment " + std::to_string(segment) + ", T " + std::to_string(region_threads) + ", " +
                               std::to_string(count) + " heads";
        const Index wave = favor::wave_segments(threads, {region_threads, count}, segment);
        ASSERT_GE(wave, 1) << at;
        const Index most = threads == 1 ? 2 : 4 * threads;
        ASSERT_LE(wave, most) << at;
        if (wave > 1) EXPECT_LE(static_cast<double>(at_once * wave) * segment, favor::kWaveBytes) << at;
        if (wave < most) EXPECT_GT(static_cast<double>(at_once * (wave + 1)) * segment, favor::kWaveBytes) << at << ": one more fits";
      }
    }
    // One head outside any region: all of it.
    EXPECT_EQ(favor::wave_segments(16, {16, 1}, segment),
              std::clamp<Index>(static_cast<Index>(favor::kWaveBytes / segment), 1, 64));
  }
  // 8 heads of m = 256, dv = 64 (about 6.4 MB a segment) on 16 threads: 2 segments each, not 8;
  // 2 heads on 2 threads, each on one: 2, not 4.
  EXPECT_EQ(favor::wave_segments(2, {16, 8}, 6.4e6), 2);
  EXPECT_EQ(favor::wave_segments(1, {2, 2}, 6.4e6), 2);
}

TEST(ThreadPlan, ThreadsFollowTheWork) {
  for (int threads : {1, 2, 3, 8, 16, 64}) {
    favor::set_max_threads(threads);
    EXPECT_EQ(favor::threads_for_work(0), 1);
    EXPECT_EQ(favor::threads_for_work(favor::kWorkPerThread - 1), 1) << "a small call wakes nobody";
    EXPECT_EQ(favor::threads_for_work(1e15), threads) << "a large call uses them all";
    int previous = 1;
    for (double work = 1; work < 1e12; work *= 1.7) {
      const int t = favor::threads_for_work(work);
      EXPECT_GE(t, previous) << "more work never gets fewer threads";
      EXPECT_LE(t, threads);
      previous = t;
    }
    // A causal state's append: one thread per head worth one, more for a large whole.
    EXPECT_EQ(favor::threads_for_parts(8, favor::kWorkPerPart / 2), 1);
    EXPECT_EQ(favor::threads_for_parts(1, 1e12), 1) << "one part: its inner loops decide";
    EXPECT_EQ(favor::threads_for_parts(8, favor::kWorkPerPart), std::min(8, threads));
    EXPECT_EQ(favor::threads_for_parts(2, 1e12), threads);
    {
      const favor::ThreadLimit limit(2);
      EXPECT_EQ(favor::available_threads(), std::min(2, threads));
      EXPECT_EQ(favor::threads_for_work(1e15), threads) << "the limit caps regions, not the estimate";
    }
    EXPECT_EQ(favor::available_threads(), threads) << "the limit ends with its scope";
  }
  favor::set_max_threads(1);
}

}  // namespace
