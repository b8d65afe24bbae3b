// Every call the library splits among threads gives the same bits with 1, 2, 3 and more threads
// as with one (the split never changes what is computed), and its errors are the serial ones.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include <favor/favor.hpp>

#include "favor/threads/work_span.hpp"
#include "reference.hpp"
#include "thread_count.hpp"

namespace {

using ref::Index;
using ref::MatF;
using threads_test::Threads;
using threads_test::expect_same_bits_as_one_thread;
using threads_test::same_bits;

favor::AttentionOptions causal(bool c) {
  favor::AttentionOptions o;
  o.causal = c;
  return o;
}

TEST(ThreadedCalls, ExactAttentionSameBitsForAnyThreadCount) {
  std::mt19937 gen(7);
  // Odd sizes: partial last query block, partial key blocks, dv != d, cross attention.
  struct Case { Index L, S, d, dv; bool causal; };
  for (const Case c : {Case{1, 1, 3, 2, false}, Case{257, 257, 16, 5, true}, Case{257, 300, 16, 5, false},
                       Case{700, 700, 8, 8, true}, Case{130, 513, 7, 3, false}}) {
    const MatF q = ref::normal_matrix(c.L, c.d, gen), k = ref::normal_matrix(c.S, c.d, gen),
               v = ref::normal_matrix(c.S, c.dv, gen);
    MatF one;
    {
      Threads t(1);
      one = favor::exact_attention(q, k, v, causal(c.causal));
    }
    for (int threads : {2, 3}) {
      Threads t(threads);
      EXPECT_TRUE(same_bits(favor::exact_attention(q, k, v, causal(c.causal)), one))
          << "L " << c.L << " S " << c.S << " causal " << c.causal << ", " << threads << " threads";
    }
  }
}

// FAVOR+ on 1 thread, expected bit for bit on each of `counts` threads; returns the 1-thread
// result.
MatF favor_same_bits_on(const std::vector<int>& counts, const favor::FeatureMap& map, const MatF& q, const MatF& k,
                        const MatF& v, const favor::FavorOptions& o, const std::string& what) {
  MatF one;
  {
    Threads t(1);
    one = favor::favor_attention(map, q, k, v, o);
  }
  for (int threads : counts) {
    Threads t(threads);
    EXPECT_TRUE(same_bits(favor::favor_attention(map, q, k, v, o), one)) << what << ", " << threads << " threads";
  }
  return one;
}

// With more threads than segments, a segment's keys are folded by blocks of features in parallel
// (every step of the fold acts on each feature alone): the bits of the one-thread fold, for
// every kernel (with and without feature values), feature counts that are and are not multiples
// of the block quantum (96, 40), cross attention, a key mask, v far from 1 (the fold reads max |v|
// as it goes), and causal attention (whose folds keep each chunk's state and features for the
// sweeps). S = 1000: one segment, bidirectional (1024 rows) and causal (2048: a prefix of 700
// keys, then the 300 aligned with the queries), on 2 threads and more. L = 2200, S = 2300: three
// bidirectional segments (by feature blocks on 5 and 8 threads) and two causal ones in a wave (on
// 3, 5 and 8; 2 threads fold whole segments there, as FavorAttentionSegmentsSameBitsAndCorrect
// checks). With fewer features than two blocks (m = 12), the folds take the key chunks made
// before them whole.
TEST(ThreadedCalls, FavorFeatureBlocksSameBits) {
  std::mt19937 gen(23);
  const Index d = 8, dv = 5;
  struct Lengths {
    Index L, S;
    std::vector<Index> features;
    std::vector<int> threads;
  };
  const std::vector<Lengths> lengths = {{300, 1000, {12, 40, 96}, {2, 3, 5, 8}}, {2200, 2300, {12, 40, 96}, {3, 5, 8}}};
  for (favor::Kernel kernel : {favor::Kernel::positive, favor::Kernel::hyperbolic, favor::Kernel::trigonometric,
                               favor::Kernel::relu}) {
    for (const Lengths& c : lengths) {
      const Index L = c.L, S = c.S;
      const MatF q = 0.5f * ref::normal_matrix(L, d, gen), k = 0.5f * ref::normal_matrix(S, d, gen);
      MatF v = ref::normal_matrix(S, dv, gen);
      if (S == 1000) v *= 1e7f;
      std::vector<std::uint8_t> mask(static_cast<std::size_t>(S), 1);
      for (Index j = 0; j < S; j += 7) mask[static_cast<std::size_t>(j)] = 0;
      for (const Index m : c.features) {
        const favor::FeatureMap map(kernel, ref::normal_matrix(m, d, gen));
        for (const auto [masked, is_causal] : {std::pair{false, false}, {true, false}, {false, true}, {true, true}}) {
          favor::FavorOptions o;
          if (masked) o.key_mask = mask.data();
          o.causal = is_causal;
          favor_same_bits_on(c.threads, map, q, k, v, o,
                             std::string(favor::to_string(kernel)) + " m " + std::to_string(m) + " L " + std::to_string(L) +
                                 " S " + std::to_string(S) + " masked " + std::to_string(masked) + " causal " +
                                 std::to_string(is_causal));
        }
      }
    }
  }
}

// A causal call takes max |v| as its folds read v, and stops at the first wave that leaves it far
// from 1; all of v then decides whether it runs again scaled or as it is. v far above 1 in its
// last rows, far below 1 in its first rows only, and far below 1 everywhere: the bits of one
// thread on several, for segments in waves (L = 5000: three segments) and for a short call's
// one segment folded by blocks of features (L = 700).
TEST(ThreadedCalls, CausalVFarFromOneInSomeRowsSameBits) {
  std::mt19937 gen(37);
  const Index d = 8, dv = 5, m = 40;
  const favor::FeatureMap map(favor::Kernel::positive, ref::normal_matrix(m, d, gen));
  for (const Index L : {Index{700}, Index{5000}}) {
    const MatF q = 0.5f * ref::normal_matrix(L, d, gen), k = 0.5f * ref::normal_matrix(L, d, gen);
    const MatF v0 = ref::normal_matrix(L, dv, gen);
    // (1e9 and 1e-9 give the same bits scaled or not: a power of two scales exactly where
    // nothing overflows or underflows. 1e36 overflows the sums and 1e-36 sinks the products into
    // subnormals unless v is scaled, so there only a call that missed the far rows differs.)
    for (const int kind : {0, 1, 2, 3, 4}) {
      MatF v = v0;
      if (kind == 0) v.bottomRows(50) *= 1e9f;
      if (kind == 1) v.topRows(50) *= 1e-9f;
      if (kind == 2) v *= 1e-9f;
      if (kind == 3) v *= 1e36f;
      if (kind == 4) v *= 1e-36f;
      favor::FavorOptions o;
      o.causal = true;
      const std::string what = "L " + std::to_string(L) + " kind " + std::to_string(kind);
      EXPECT_TRUE(favor_same_bits_on({2, 3, 8}, map, q, k, v, o, what).allFinite()) << what;
    }
  }
}

// A short call (fewer blocks of rows than threads) cuts its key chunks and query blocks into
// pieces of rows made on several threads; every kernel and sampling's features, masks, a v that
// is rescaled (1e7), grouped query heads, codebooks and exact attention (bidirectional and
// causal) then still give the bits of one thread. The lengths make one chunk of keys (S <= 128,
// a short last piece at S = 90), a chunk and a short one (S = 150), and query blocks cut into
// 2-4 pieces.
TEST(ThreadedCalls, ShortCallsCutIntoPiecesSameBits) {
  std::mt19937 gen(31);
  const Index d = 32, dv = 8;  // (work enough for several threads)
  struct Map {
    favor::Kernel kernel;
    favor::Sampling sampling;
  };
  const std::vector<Map> maps = {{favor::Kernel::positive, favor::Sampling::orthogonal},
                                 {favor::Kernel::positive, favor::Sampling::structured},
                                 {favor::Kernel::hyperbolic, favor::Sampling::iid},
                                 {favor::Kernel::trigonometric, favor::Sampling::orthogonal},
                                 {favor::Kernel::relu, favor::Sampling::simplex},
                                 {favor::Kernel::oprf, favor::Sampling::orthogonal},
                                 {favor::Kernel::sderf, favor::Sampling::orthogonal},
                                 {favor::Kernel::aderf, favor::Sampling::iid}};
  std::vector<favor::FeatureMap> feature_maps;
  for (const Map& m : maps) {
    favor::FeatureMapOptions fo;
    fo.dim = d, fo.features = 128, fo.kernel = m.kernel, fo.sampling = m.sampling, fo.seed = 9;
    feature_maps.emplace_back(fo);
  }
  for (const auto& lengths : {std::pair<Index, Index>{128, 128}, {100, 90}, {40, 150}, {200, 64}}) {
    const Index L = lengths.first, S = lengths.second, H = 2;
    const MatF q = 0.4f * ref::normal_matrix(2 * H * L, d, gen), k = 0.4f * ref::normal_matrix(H * S, d, gen);
    MatF v = ref::normal_matrix(H * S, dv, gen);
    if (L == 100) v *= 1e7f;
    std::vector<std::uint8_t> mask(static_cast<std::size_t>(H * S), 1);
    for (Index j = 3; j < H * S; j += 11) mask[static_cast<std::size_t>(j)] = 0;
    const favor::ConstTensorView qt{q.data(), {2 * H, L, d}}, kt{k.data(), {H, S, d}}, vt{v.data(), {H, S, dv}};
    const MatF codebook = ref::normal_matrix(24, d, gen);
    auto run = [&] {
      std::vector<MatF> outs;
      for (const favor::FeatureMap& map : feature_maps) {
        for (bool masked : {false, true}) {
          const favor::ConstMaskView mv{masked ? mask.data() : nullptr, {H, S}};
          MatF out(2 * H * L, dv);
          favor::favor_attention(map, qt, kt, vt, {out.data(), {2 * H, L, dv}}, {}, mv);
          outs.push_back(out);
        }
      }
      for (bool c : {false, true}) {
        if (c && L > S) continue;  // (causal: L <= S)
        for (bool masked : {false, true}) {
          MatF out(2 * H * L, dv);
          favor::exact_attention(qt, kt, vt, {out.data(), {2 * H, L, dv}}, causal(c),
                                 favor::ConstMaskView{masked ? mask.data() : nullptr, {H, S}});
          outs.push_back(out);
        }
      }
      for (favor::Assignment a : {favor::Assignment::hard, favor::Assignment::soft}) {
        favor::CodebookOptions o;
        o.assignment = a;
        MatF out(2 * H * L, dv);
        favor::codebook_attention({codebook.data(), {24, d}}, qt, kt, vt, {out.data(), {2 * H, L, dv}}, o);
        outs.push_back(out);
      }
      return outs;
    };
    expect_same_bits_as_one_thread(run, {2, 3, 4, 8}, "L " + std::to_string(L) + " S " + std::to_string(S));
  }
}

// Exact attention's query blocks of 64 rows cut into pieces of whole strips, 16 rows or more,
// where one head's blocks would not share out evenly among the threads (L = 40: one short block;
// 128: two blocks, in thirds of 16, 24 and 24 rows on 3 threads; 200: four and a short one),
// bidirectional and causal, with a key mask: the bits of one thread.
TEST(ThreadedCalls, ExactQueryBlocksCutIntoPiecesSameBits) {
  std::mt19937 gen(32);
  const Index S = 512, d = 64, dv = 64;  // (work enough for 16 threads at L = 128)
  const MatF k = 0.5f * ref::normal_matrix(S, d, gen), v = ref::normal_matrix(S, dv, gen);
  std::vector<std::uint8_t> mask(static_cast<std::size_t>(S), 1);
  for (Index j = 5; j < S; j += 13) mask[static_cast<std::size_t>(j)] = 0;
  for (Index L : {40, 128, 200}) {
    const MatF q = 0.5f * ref::normal_matrix(L, d, gen);
    auto run = [&] {
      std::vector<MatF> outs;
      for (bool c : {false, true}) {
        for (bool masked : {false, true}) {
          MatF out(L, dv);
          favor::exact_attention({q.data(), {1, L, d}}, {k.data(), {1, S, d}}, {v.data(), {1, S, dv}},
                                 {out.data(), {1, L, dv}}, causal(c),
                                 favor::ConstMaskView{masked ? mask.data() : nullptr, {1, S}});
          outs.push_back(out);
        }
      }
      return outs;
    };
    expect_same_bits_as_one_thread(run, {2, 3, 4, 8}, "L " + std::to_string(L));
  }
}

// FAVOR+ runs in fixed segments of ~2048 rows (key states in parallel, merged in order; causal
// segments from their prefix state): L = 4500 makes 3 segments (2 and 5 with the chunk sizes
// below). Same bits for any thread count, and still the estimator: equal to the masked matrix
// form (A^ v, a different computation) within 2e-4 relative to the largest entry (float32 sums
// over 4500 rows; a lost or double-counted segment is off by O(1)).
TEST(ThreadedCalls, FavorAttentionSegmentsSameBitsAndCorrect) {
  std::mt19937 gen(11);
  const Index L = 4500, d = 8, dv = 3, m = 16;
  const MatF w = ref::normal_matrix(m, d, gen);
  const MatF q = ref::normal_matrix(L, d, gen), k = ref::normal_matrix(L, d, gen), v = ref::normal_matrix(L, dv, gen);
  for (favor::Kernel kernel : {favor::Kernel::positive, favor::Kernel::relu}) {
    const favor::FeatureMap map(kernel, w);
    for (bool is_causal : {false, true}) {
      for (Index chunk : {Index{0}, Index{1000}, Index{64}}) {
        favor::FavorOptions o;
        o.causal = is_causal;
        o.chunk = chunk;
        const MatF one = favor_same_bits_on({2, 3}, map, q, k, v, o,
                                                std::string(favor::to_string(kernel)) + " causal " + std::to_string(is_causal) +
                                                    " chunk " + std::to_string(chunk));
        if (chunk == 0) {
          const MatF a = favor::favor_attention_matrix(map, q, k, causal(is_causal));
          EXPECT_LT(ref::max_rel(ref::to_double(one), ref::to_double(a) * ref::to_double(v)), 2e-4)
              << favor::to_string(kernel) << " causal " << is_causal;
        }
      }
    }
  }
}

// Causal segments go in waves of up to four per thread: 14 segments make two waves on 2 and 3
// threads (and 14 of one segment on 1 thread); a prefix carried wrongly from one wave to the
// next changes every later row. On 3 threads the second wave has 2 segments, fewer than the
// threads: its key chunks are made in parallel before the folds, and its sweeps are cut.
TEST(ThreadedCalls, CausalFavorAcrossWavesSameBits) {
  std::mt19937 gen(12);
  const Index L = 2048 * 13 + 5, d = 4, dv = 2, m = 8;
  const favor::FeatureMap map(favor::Kernel::positive, ref::normal_matrix(m, d, gen));
  const MatF q = ref::normal_matrix(L, d, gen), k = ref::normal_matrix(L, d, gen), v = ref::normal_matrix(L, dv, gen);
  favor::FavorOptions o;
  o.causal = true;
  favor_same_bits_on({2, 3}, map, q, k, v, o, "causal across waves");
}

// One thread folds and sweeps each causal segment in one pass, keeping nothing per chunk; several
// threads fold a wave's segments first and keep every chunk's state and features for the sweeps.
// The same bits through every branch of the sweep: keys of large norm first (log magnitudes near
// -200) make the later keys jump far above the carried shift (the per-row log-space path), a key
// mask (1 in 7 absent) and S > L (a prefix folded before the aligned keys).
TEST(ThreadedCalls, CausalFavorOnePassEqualsWaves) {
  std::mt19937 gen(13);
  const Index L = 4500, S = 4700, d = 8, dv = 3, m = 16;
  const favor::FeatureMap map(favor::Kernel::positive, ref::normal_matrix(m, d, gen));
  const MatF q = ref::normal_matrix(L, d, gen), v = ref::normal_matrix(S, dv, gen);
  MatF k = ref::normal_matrix(S, d, gen);
  k.topRows(1200) *= 12.0f;
  std::vector<std::uint8_t> mask(static_cast<std::size_t>(S));
  for (Index j = 0; j < S; ++j) mask[static_cast<std::size_t>(j)] = j % 7 != 3;
  for (Index chunk : {Index{0}, Index{100}}) {
    favor::FavorOptions o;
    o.causal = true;
    o.chunk = chunk;
    o.key_mask = mask.data();
    const MatF one = favor_same_bits_on({2, 3}, map, q, k, v, o, "one pass vs waves, chunk " + std::to_string(chunk));
    EXPECT_TRUE(one.allFinite());
  }
}

// A causal input shorter than a segment is swept in pieces of its own chunks, up to 4 per thread
// (so that a thread slowed down leaves the others work): the call's last region, traced as on T
// threads, has min(chunks, 4 T) pieces. (Sized from a whole segment, L = 512 on 2 threads had 2.)
TEST(ThreadedCalls, ShortCausalInputsSweepInPiecesOfTheirChunks) {
  std::mt19937 gen(14);
  const Index d = 8, dv = 4, m = 32, chunk = 64;
  const favor::FeatureMap map(favor::Kernel::positive, ref::normal_matrix(m, d, gen));
  for (Index L : {Index{256}, Index{512}, Index{1024}}) {
    const MatF q = ref::normal_matrix(L, d, gen), k = ref::normal_matrix(L, d, gen), v = ref::normal_matrix(L, dv, gen);
    favor::FavorOptions o;
    o.causal = true;
    o.chunk = chunk;
    for (int threads : {2, 4}) {
      const favor::WorkSpan ws = favor::measure_work_span(threads, [&] { favor::favor_attention(map, q, k, v, o); });
      ASSERT_FALSE(ws.call.regions.empty());
      EXPECT_EQ(static_cast<Index>(ws.call.regions.back().indices.size()), std::min<Index>(L / chunk, 4 * threads))
          << "L = " << L << ", " << threads << " threads";
    }
  }
}

// Causal heads that do not share out among the threads (8 heads on 8 threads: one round; on 3: a
// short last round) each run their segments in waves, whose folds and sweeps are regions the
// other threads take from once they have no head left, so that a thread slowed down leaves its
// head's last pieces to them; heads that do (8 on 2 or on 4 threads: 4 or 2 whole rounds) are
// each one pass on their thread. Traced as on T threads, and the same bits as one thread either way.
TEST(ThreadedCalls, FewCausalHeadsPerThreadPublishTheirWaves) {
  std::mt19937 gen(16);
  const Index H = 8, L = 2048 * 2 + 100, d = 8, dv = 3;  // 3 segments a head
  const MatF q = ref::normal_matrix(H * L, d, gen), k = ref::normal_matrix(H * L, d, gen),
             v = ref::normal_matrix(H * L, dv, gen);
  favor::FeatureMapOptions fo;
  fo.dim = d, fo.features = 16, fo.seed = 5;
  const favor::FeatureMap map(fo);
  favor::FavorOptions o;
  o.causal = true;
  MatF out(H * L, dv);
  const auto call = [&] {
    favor::favor_attention(map, {q.data(), {H, L, d}}, {k.data(), {H, L, d}}, {v.data(), {H, L, dv}},
                           {out.data(), {H, L, dv}}, o);
    return std::vector<MatF>{out};
  };
  for (int threads : {2, 3, 4, 8}) {
    const favor::WorkSpan ws = favor::measure_work_span(threads, [&] { call(); });
    ASSERT_FALSE(ws.call.regions.empty());
    const favor::TracedRegion& heads = ws.call.regions.front();
    ASSERT_EQ(static_cast<Index>(heads.indices.size()), H) << threads << " threads";
    for (const favor::TracedIndex& head : heads.indices)
      EXPECT_EQ(head.regions.empty(), threads == 2 || threads == 4)
          << threads << " threads: " << head.regions.size() << " regions in a head";
  }
  expect_same_bits_as_one_thread(call, {2, 3, 4, 8}, "8 causal heads");
}

// Leading dims: heads go to threads (3 heads >= 2 threads) or run in turn (3 heads < 4 threads).
TEST(ThreadedCalls, TensorHeadsSameBitsForAnyThreadCount) {
  std::mt19937 gen(11);
  const Index H = 3, L = 150, d = 8, dv = 4;
  const MatF q = ref::normal_matrix(H * L, d, gen), k = ref::normal_matrix(H * L, d, gen),
             v = ref::normal_matrix(H * L, dv, gen);
  favor::FeatureMapOptions fo;
  fo.dim = d;
  fo.features = 32;
  fo.seed = 3;
  const favor::FeatureMap map(fo);
  const favor::ConstTensorView qt{q.data(), {H, L, d}}, kt{k.data(), {H, L, d}}, vt{v.data(), {H, L, dv}};
  auto run = [&] {
    std::vector<MatF> outs;
    for (bool c : {false, true}) {
      MatF exact(H * L, dv), fav(H * L, dv), matrix(H * L, L);
      favor::exact_attention(qt, kt, vt, {exact.data(), {H, L, dv}}, causal(c));
      favor::FavorOptions o;
      o.causal = c;
      favor::favor_attention(map, qt, kt, vt, {fav.data(), {H, L, dv}}, o);
      favor::attention_matrix(qt, kt, {matrix.data(), {H, L, L}}, causal(c));
      outs.insert(outs.end(), {exact, fav, matrix});
    }
    return outs;
  };
  expect_same_bits_as_one_thread(run, {2, 3, 4}, "tensor heads");
}

// run() (a causal state's outputs and its size at the end) on one thread, then on 2, 3 and 5:
// the same bits and the same size.
template <class Run>
void expect_same_state_on_any_thread_count(const Run& run) {
  std::pair<MatF, std::size_t> one;
  {
    Threads t(1);
    one = run();
  }
  EXPECT_TRUE(one.first.allFinite());
  for (int threads : {2, 3, 5}) {
    Threads t(threads);
    const auto many = run();
    EXPECT_TRUE(same_bits(many.first, one.first)) << threads << " threads";
    EXPECT_EQ(many.second, one.second) << threads << " threads";
  }
}

// A FAVOR+ causal state on one and on several threads: prefill pieces that continue the carried
// state (2,400 rows make two segments: on 3 and 5 threads, fewer than the threads, each is folded
// by blocks of features), decode steps, and a prefill after them. Every output and the state's
// size, the same bits.
TEST(ThreadedCalls, CausalStateAppendsSameBitsForAnyThreadCount) {
  std::mt19937 gen(15);
  const Index d = 8, dv = 3, m = 64;
  const std::vector<Index> pieces = {700, 2400, 1, 1, 1, 300};
  Index L = 0;
  for (Index n : pieces) L += n;
  const MatF q = ref::normal_matrix(L, d, gen), k = ref::normal_matrix(L, d, gen), v = ref::normal_matrix(L, dv, gen);
  const favor::FeatureMap map(favor::Kernel::positive, ref::normal_matrix(m, d, gen));
  favor::CausalStateOptions options;
  options.method = favor::StateMethod::favor;
  options.map = &map;
  auto run = [&] {
    favor::CausalState state(options);
    MatF out(L, dv);
    Index a = 0;
    for (Index n : pieces) {
      MatF o(n, dv);  // (rows of one head are contiguous in a row-major MatF)
      state.append({q.data() + a * d, {1, n, d}}, {k.data() + a * d, {1, n, d}}, {v.data() + a * dv, {1, n, dv}},
                   {o.data(), {1, n, dv}});
      out.middleRows(a, n) = o;
      a += n;
    }
    return std::pair{out, state.state_bytes()};
  };
  expect_same_state_on_any_thread_count(run);
}

// A windowed FAVOR+ state runs each append on the window's state and the current block's, which
// reads the features the window's made of a decoding step's rows (windowed_state.cpp,
// lend_features), part by part of heads, and merges the blocks' states as a block starts: with 6
// key/value heads (a decode step's head worth a thread of its own), on 1, 2, 3 and 5 threads, the same bits and the same size, through pieces
// within a block, across block starts, and a prefill of several blocks between decode steps.
TEST(ThreadedCalls, WindowedFavorStateSameBitsForAnyThreadCount) {
  std::mt19937 gen(16);
  const Index H = 6, d = 64, dv = 16, m = 256, window = 12;
  const std::vector<Index> pieces = {1, 1, 2, 5, 1, 1, 1, 1, 1, 1, 1, 1, 1, 20, 1, 1, 1, 2, 1, 1, 1};
  Index L = 0;
  for (Index n : pieces) L += n;
  const MatF q = 0.4f * ref::normal_matrix(H * L, d, gen), k = 0.4f * ref::normal_matrix(H * L, d, gen);
  const MatF v = ref::normal_matrix(H * L, dv, gen);
  const favor::FeatureMap map(favor::Kernel::positive, ref::normal_matrix(m, d, gen));
  favor::CausalStateOptions options;
  options.method = favor::StateMethod::favor;
  options.map = &map;
  options.window = window;
  auto run = [&] {
    favor::CausalState state(options);
    MatF out(H * L, dv);  // head h's rows at h * L
    Index a = 0;
    for (Index n : pieces) {
      MatF qs(H * n, d), ks(H * n, d), vs(H * n, dv), o(H * n, dv);
      for (Index h = 0; h < H; ++h) {
        qs.middleRows(h * n, n) = q.middleRows(h * L + a, n);
        ks.middleRows(h * n, n) = k.middleRows(h * L + a, n);
        vs.middleRows(h * n, n) = v.middleRows(h * L + a, n);
      }
      state.append({qs.data(), {H, n, d}}, {ks.data(), {H, n, d}}, {vs.data(), {H, n, dv}}, {o.data(), {H, n, dv}});
      for (Index h = 0; h < H; ++h) out.middleRows(h * L + a, n) = o.middleRows(h * n, n);
      a += n;
    }
    return std::pair{out, state.state_bytes()};
  };
  expect_same_state_on_any_thread_count(run);
}

// A FAVOR+ state's commits are deferred to each head's next use (factored_state.cpp): an append
// that fails in one head's run (its values overflow in head 5), after some heads committed the previous
// step and ran, and before others did, leaves the state that the appends before it made. A state
// that never saw it gives the same bits afterwards, and the same size, on 1, 2, 3 and 5 threads.
TEST(ThreadedCalls, FailedAppendAmongDeferredCommitsLeavesTheSameState) {
  std::mt19937 gen(16);
  const Index H = 8, d = 64, dv = 16, m = 256;
  const favor::FeatureMap map(favor::Kernel::positive, ref::normal_matrix(m, d, gen) * 0.5f);
  favor::CausalStateOptions options;
  options.method = favor::StateMethod::favor;
  options.map = &map;
  const std::vector<Index> pieces = {40, 1, 1, 1, 1, 1, 1, 20};
  std::vector<MatF> qs, ks, vs;  // [H * n, d] per piece, heads' rows contiguous
  for (Index n : pieces) {
    qs.push_back(ref::normal_matrix(H * n, d, gen) * 0.3f);
    ks.push_back(ref::normal_matrix(H * n, d, gen) * 0.3f);
    vs.push_back(ref::normal_matrix(H * n, dv, gen));
  }
  MatF huge = vs[1];
  huge.row(5).setConstant(3e38f);  // head 5's value: its sums over the features overflow
  const auto run = [&](bool with_failure, bool* threw) {
    favor::CausalState state(options);
    std::vector<float> out;
    for (std::size_t p = 0; p < pieces.size(); ++p) {
      const Index n = pieces[p];
      MatF o(H * n, dv);
      if (with_failure && p == 4) {
        try {
          state.append({qs[1].data(), {H, 1, d}}, {ks[1].data(), {H, 1, d}}, {huge.data(), {H, 1, dv}},
                       {o.data(), {H, 1, dv}});
        } catch (const favor::Error&) {
          *threw = true;
        }
      }
      state.append({qs[p].data(), {H, n, d}}, {ks[p].data(), {H, n, d}}, {vs[p].data(), {H, n, dv}},
                   {o.data(), {H, n, dv}});
      out.insert(out.end(), o.data(), o.data() + o.size());
    }
    return std::tuple{out, state.state_bytes(), state.length()};
  };
  std::tuple<std::vector<float>, std::size_t, Index> want;
  {
    Threads t(1);
    want = run(false, nullptr);
  }
  for (int threads : {1, 2, 3, 5}) {
    Threads t(threads);
    bool threw = false;
    favor::take_threads_used();
    const auto got = run(true, &threw);
    EXPECT_TRUE(threw) << threads << " threads";
    if (threads > 1) EXPECT_EQ(favor::take_threads_used(), threads) << "the decode steps ran on every thread";
    EXPECT_EQ(std::get<0>(got), std::get<0>(want)) << threads << " threads";
    EXPECT_EQ(std::get<1>(got), std::get<1>(want)) << threads << " threads";
    EXPECT_EQ(std::get<2>(got), std::get<2>(want)) << threads << " threads";
  }
}

// OPRF's rho and FAVOR#'s parameters from 10,000 rows (three blocks of rows, summed in
// parallel): the same bits on any number of threads.
TEST(ThreadedCalls, DataDependentParametersSameBitsForAnyThreadCount) {
  std::mt19937 gen(14);
  const Index n = 10000, d = 64;
  const MatF x = ref::normal_matrix(n, d, gen), y = ref::normal_matrix(n, d, gen);
  std::vector<favor::DenseExponentialParameters> params;
  std::vector<double> rho;
  for (int threads : {1, 2, 3}) {
    Threads t(threads);
    for (favor::Kernel kernel : {favor::Kernel::sderf, favor::Kernel::aderf})
      params.push_back(favor::dense_exponential_parameters(kernel, x, y, 0.125));
    rho.push_back(favor::oprf_rho(x, y));
  }
  EXPECT_EQ(rho[1], rho[0]);
  EXPECT_EQ(rho[2], rho[0]);
  for (std::size_t i = 2; i < params.size(); ++i) {
    const favor::DenseExponentialParameters &a = params[i], &b = params[i % 2];
    EXPECT_TRUE(a.a == b.a && a.query_transform == b.query_transform && a.key_transform == b.key_transform &&
                a.log_d == b.log_d) << "kernel " << i % 2 << ", " << (i / 2 + 1) << " threads";
  }
}

TEST(ThreadedCalls, ErrorsFromThreadedHeadsAreTheSerialOnes) {
  std::mt19937 gen(5);
  const Index H = 4, L = 70, d = 4;
  MatF q = ref::normal_matrix(H * L, d, gen), k = ref::normal_matrix(H * L, d, gen);
  const MatF v = ref::normal_matrix(H * L, d, gen);
  MatF out(H * L, d);
  // q.k overflows in heads 0 and 2 at different rows: the messages differ, and the serial
  // (lowest head) one must win whatever thread finishes first.
  for (Index row : {Index{0}, 2 * L + 5}) q(row, 0) = k(row, 0) = 3e38f;
  std::string serial;
  for (int threads : {1, 2, 3}) {
    Threads t(threads);
    try {
      favor::exact_attention(favor::ConstTensorView{q.data(), {H, L, d}}, favor::ConstTensorView{k.data(), {H, L, d}},
                             favor::ConstTensorView{v.data(), {H, L, d}}, favor::TensorView{out.data(), {H, L, d}});
      ADD_FAILURE() << "no error with " << threads << " threads";
    } catch (const favor::Error& e) {
      if (threads == 1) serial = e.what();
      EXPECT_EQ(e.what(), serial) << threads << " threads";
    }
  }
}

}  // namespace
