// InputArrival: a call's inputs copied in piece by piece on the calling thread while its helper
// threads already run. The pieces cover every float once; a thread that awaits floats gets them
// only once they are in; and a FAVOR+ call whose inputs arrive that way (into memory poisoned
// with NaN, copied slowly) gives the same bits as the same call on inputs copied beforehand, for
// every path the engine takes (bidirectional, causal, grouped heads, masks, kernels that check
// or fit to the inputs first, errors), and for exact and codebook attention.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "favor/threads/caller_task.hpp"
#include "favor/error.hpp"
#include "favor/threads/input_arrival.hpp"
#include "favor/parallel.hpp"
#include "favor/tensor.hpp"
#include "favor/threads/thread_plan.hpp"
#include "thread_count.hpp"

namespace {

using favor::Index;

using threads_test::Threads;

Index count_of(const std::vector<Index>& dims) {
  Index n = 1;
  for (Index d : dims) n *= d;
  return n;
}

constexpr favor::HeadReading kReadings[] = {favor::HeadReading::whole, favor::HeadReading::by_slices};

// Every float comes once, in a piece within one head's part; a head's keys and values before its
// queries; with several key/value heads, a head's slices in order, and a head read whole all
// together.
TEST(InputArrival, TheOrderCoversEveryFloatOnceAHeadsKeysFirst) {
  struct Case {
    std::vector<Index> q, k, v;
    Index rows;
  };
  for (const favor::HeadReading reading : kReadings)
    for (const Case& c : {Case{{5, 8}, {7, 8}, {7, 3}, 2}, Case{{2, 4, 9, 6}, {2, 2, 11, 6}, {2, 2, 11, 5}, 4},
                          Case{{3, 10, 4}, {3, 10, 4}, {3, 10, 2}, 100}, Case{{6, 5, 4}, {1, 12, 4}, {1, 12, 4}, 1},
                          Case{{5, 9, 4}, {5, 9, 4}, {5, 9, 3}, 2}}) {
      const std::vector<std::vector<Index>> dims{c.q, c.k, c.v};
      std::vector<std::vector<int>> seen(3);
      for (int i = 0; i < 3; ++i) seen[i].assign(static_cast<std::size_t>(count_of(dims[i])), 0);
      const auto pieces = favor::attention_input_order(c.q, c.k, c.v, c.rows, 3, reading);
      const Index heads = count_of(c.k) / (c.k[c.k.size() - 2] * c.k.back());
      const std::string where =
          std::to_string(heads) + " heads, " + (reading == favor::HeadReading::whole ? "whole" : "by slices");
      std::vector<int> head_done(static_cast<std::size_t>(heads), 0);
      std::vector<bool> queries(static_cast<std::size_t>(heads), false);  // a head's queries have begun
      std::vector<std::vector<Index>> next(3, std::vector<Index>(static_cast<std::size_t>(heads), 0));  // in order
      Index head = -1;  // the head whose pieces come now
      for (const favor::InputPiece& p : pieces) {
        ASSERT_GT(p.count, 0);
        const Index per_head = count_of(dims[p.input]) / heads;
        const auto h = static_cast<std::size_t>(p.offset / per_head);
        EXPECT_EQ((p.offset + p.count - 1) / per_head, static_cast<Index>(h))
            << "a piece within one head's part, " << where;
        if (static_cast<Index>(h) != head) {
          if (reading == favor::HeadReading::whole)
            ASSERT_EQ(head_done[h]++, 0) << "a head's pieces together, " << where;
          head = static_cast<Index>(h);
        }
        if (p.input == 0) queries[h] = true;
        else EXPECT_FALSE(queries[h]) << "keys and values before the queries, " << where;
        if (heads > 1) {
          EXPECT_EQ(p.offset, static_cast<Index>(h) * per_head + next[p.input][h])
              << "a head's slices in order, " << where;
          next[p.input][h] += p.count;
        }
        for (Index i = p.offset; i < p.offset + p.count; ++i) ++seen[p.input][static_cast<std::size_t>(i)];
      }
      for (const auto& s : seen)
        for (int n : s) ASSERT_EQ(n, 1) << where;
    }
}

// Each helper's first head (its home range's) comes among the first `threads - 1`, its second
// among the next, ...; the calling thread's last.
TEST(InputArrival, HeadsComeInTheOrderThreadsStartOnThem) {
  for (const favor::HeadReading reading : kReadings)
    for (Index heads : {1, 2, 3, 8, 12, 16, 33, 64})
      for (int threads = 1; threads <= 64; ++threads) {
        const auto pieces =
            favor::attention_input_order({heads, 4, 2}, {heads, 4, 2}, {heads, 4, 2}, 4, threads, reading);
        std::vector<Index> order;  // the heads as they come
        for (const favor::InputPiece& p : pieces)
          if (p.input == 1) order.push_back(p.offset / 8);
        ASSERT_EQ(static_cast<Index>(order.size()), heads);
        const auto at = [&](Index h) { return std::find(order.begin(), order.end(), h) - order.begin(); };
        const auto [own_begin, own_end] = favor::home_range(heads, threads, 0);
        for (Index h = own_begin; h < own_end; ++h)
          EXPECT_EQ(at(h), heads - own_end + h) << "the caller's last, in order";
        for (int t = 1; t < threads; ++t) {
          const auto [begin, end] = favor::home_range(heads, threads, t);
          for (Index h = begin; h < end; ++h)
            EXPECT_LT(at(h), (h - begin + 1) * (threads - 1)) << heads << " heads, thread " << t << " of " << threads;
        }
      }
}

// Heads read by slices: every helper's first head has its first slice of keys and values in
// before any head has its second (not once the heads before it are in whole). The caller's heads,
// which it starts on once it has copied everything, come after every helper's; but with fewer
// heads than threads a helper that has none takes the caller's at once, and it comes with the
// others. With one head, its slices come as the threads start on them.
TEST(InputArrival, HeadsReadBySlicesStartTogether) {
  for (Index heads : {1, 2, 3, 8, 12, 16, 33})
    for (int threads = 2; threads <= 40; ++threads) {
      const Index S = 12, rows = 4;  // three slices a head
      const auto pieces = favor::attention_input_order({heads, S, 2}, {heads, S, 2}, {heads, S, 2}, rows, threads,
                                                       favor::HeadReading::by_slices);
      std::vector<std::pair<Index, Index>> keys;  // (head, slice) as they come
      Index last_helper_piece = -1, first_caller_piece = static_cast<Index>(pieces.size());
      const Index own_end = favor::home_range(heads, threads, 0).second;
      for (std::size_t i = 0; i < pieces.size(); ++i) {
        const favor::InputPiece& p = pieces[i];
        const Index h = p.offset / (S * 2);
        if (p.input == 1) keys.emplace_back(h, p.offset % (S * 2) / (rows * 2));
        if (heads > 1 && h < own_end) first_caller_piece = std::min(first_caller_piece, static_cast<Index>(i));
        if (heads > 1 && h >= own_end) last_helper_piece = static_cast<Index>(i);
      }
      const auto at = [&](Index h, Index s) {
        return std::find(keys.begin(), keys.end(), std::make_pair(h, s)) - keys.begin();
      };
      const std::string where = std::to_string(heads) + " heads, " + std::to_string(threads) + " threads";
      if (heads == 1) {
        // Slice t is helper t's first (home_range of 3 slices), the caller's own last.
        const Index own = favor::home_range(3, threads, 0).second;
        for (Index s = 0; s < 3; ++s) EXPECT_EQ(at(0, s) >= 3 - own, s < own) << where;
        continue;
      }
      Index second_slice = static_cast<Index>(keys.size());
      for (Index h = 0; h < heads; ++h) second_slice = std::min<Index>(second_slice, at(h, 1));
      for (int t = 1; t < threads; ++t)
        if (const auto [begin, end] = favor::home_range(heads, threads, t); begin < end)
          EXPECT_LT(at(begin, 0), second_slice) << where << ", thread " << t;
      if (heads < threads) EXPECT_LT(at(0, 0), second_slice) << where << ", the caller's head";
      else EXPECT_LT(last_helper_piece, first_caller_piece) << where;
    }
}

// Floats copied from `from` into `to` piece by piece, `delay` after each.
struct Arrival {
  std::vector<const float*> from;
  std::vector<float*> to;
  std::chrono::microseconds delay{0};
  int fail_at = -1;  // the copy of this piece throws
  std::atomic<int> copies{0};
  std::thread::id copier = std::this_thread::get_id();
  bool wrong_thread = false;

  std::function<void(const favor::InputPiece&)> copy() {
    return [this](const favor::InputPiece& p) {
      if (std::this_thread::get_id() != copier) wrong_thread = true;
      if (copies.load() == fail_at) favor::throw_range("q, k, v", "could not be copied (a test's copy failed)");
      std::memcpy(to[p.input] + p.offset, from[p.input] + p.offset, sizeof(float) * p.count);
      ++copies;
      if (delay.count()) std::this_thread::sleep_for(delay);
    };
  }
};

TEST(InputArrival, AnotherThreadWaitsAndTheCopierCopiesInOrderUpToWhatItNeeds) {
  std::vector<float> source(100), heap(100, -1.0f);
  for (int i = 0; i < 100; ++i) source[static_cast<std::size_t>(i)] = static_cast<float>(i);
  Arrival arrival{{source.data()}, {heap.data()}};
  std::vector<favor::InputPiece> pieces;
  for (Index i = 0; i < 10; ++i) pieces.push_back({0, (9 - i) * 10, 10});  // back to front
  favor::InputArrival a({heap.data()}, {100}, pieces, arrival.copy());
  // The copier needs floats 55..64: the pieces up to the one at 50 (the fifth) come in, in order.
  favor::await_input(heap.data() + 55, 10);
  EXPECT_EQ(arrival.copies.load(), 5);
  EXPECT_EQ(heap[55], 55.0f);
  EXPECT_EQ(heap[64], 64.0f);
  EXPECT_EQ(heap[49], -1.0f);
  favor::await_input(heap.data() + 90, 10);  // already in: nothing copied
  EXPECT_EQ(arrival.copies.load(), 5);
  // Another thread that needs float 0 waits until the copier has copied the last piece.
  std::atomic<bool> got{false};
  float seen = -1.0f;
  std::thread waiter([&] {
    favor::await_input(heap.data(), 1);
    seen = heap[0];
    got = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(got.load());
  a.copy_all();
  waiter.join();
  EXPECT_TRUE(got.load());
  EXPECT_EQ(seen, 0.0f);
  EXPECT_EQ(arrival.copies.load(), 10);
  EXPECT_EQ(heap, source);
  EXPECT_FALSE(arrival.wrong_thread);
  // Floats outside the inputs: no wait, no copy.
  float elsewhere = 0.0f;
  favor::await_input(&elsewhere, 1);
}

TEST(InputArrival, OneAtATimeAndNoneAfterItsEnd) {
  std::vector<float> heap(4);
  Arrival arrival{{heap.data()}, {heap.data()}};
  {
    favor::InputArrival a({heap.data()}, {4}, {{0, 0, 4}}, arrival.copy());
    EXPECT_THROW(favor::InputArrival({heap.data()}, {4}, {{0, 0, 4}}, arrival.copy()), favor::Error);
  }
  favor::await_input(heap.data(), 4);  // none live: returns at once
  favor::await_all_inputs();
  EXPECT_EQ(arrival.copies.load(), 0);
  favor::InputArrival again({heap.data()}, {4}, {{0, 0, 4}}, arrival.copy());
  favor::await_all_inputs();
  EXPECT_EQ(arrival.copies.load(), 1);
}

struct Call {
  std::vector<Index> q, k, v;
  bool causal = false;
  favor::Kernel kernel = favor::Kernel::positive;
  std::optional<double> rho;
  bool mask = false;
  float v_scale = 1.0f;
  const char* name;
  bool exact = false;     // exact attention (the map unused)
  bool codebook = false;  // codebook attention (the map unused)
  bool codebook_per_query_head = false;
};

std::vector<float> random_floats(Index n, std::mt19937& gen, float scale) {
  std::normal_distribution<float> normal(0.0f, 0.5f);
  std::vector<float> x(static_cast<std::size_t>(n));
  for (float& f : x) f = normal(gen) * scale;
  return x;
}

// The call on inputs in place, or on inputs arriving into memory that holds `poison` until then:
// { output, error }. (NaN makes a read too early throw or show; a finite value gives other bits,
// also where a path takes NaN for a reason to step aside.)
std::pair<std::vector<float>, std::string> run(const Call& c, const favor::FeatureMap& map, const std::vector<float>& q,
                                               const std::vector<float>& k, const std::vector<float>& v,
                                               const std::vector<std::uint8_t>& mask, bool arriving, int* copies,
                                               float poison = std::numeric_limits<float>::quiet_NaN(), int fail_at = -1,
                                               favor::HeadReading reading = favor::HeadReading::whole) {
  favor::FavorOptions o;
  o.causal = c.causal;
  const auto out_dims = favor::attention_output_dims(c.q, c.k, c.v, c.causal);
  std::vector<float> out(static_cast<std::size_t>(count_of(out_dims)));
  std::vector<float> hq(q.size(), poison), hk(k.size(), poison), hv(v.size(), poison);
  const bool in_place = !arriving;
  if (in_place) hq = q, hk = k, hv = v;
  Arrival arrival{{q.data(), k.data(), v.data()}, {hq.data(), hk.data(), hv.data()}, std::chrono::microseconds(30), fail_at};
  std::string error;
  try {
    std::optional<favor::InputArrival> a;
    std::optional<favor::CallerTask> task;
    if (arriving) {
      a.emplace(std::vector<float*>{hq.data(), hk.data(), hv.data()},
                std::vector<Index>{count_of(c.q), count_of(c.k), count_of(c.v)},
                favor::attention_input_order(c.q, c.k, c.v, 16, favor::max_threads(), reading), arrival.copy());
      task.emplace([&] { a->copy_all(); });
    }
    favor::ConstMaskView m;
    if (c.mask) m = {mask.data(), {c.k.begin(), c.k.end() - 1}};
    const favor::ConstTensorView qt{hq.data(), c.q}, kt{hk.data(), c.k}, vt{hv.data(), c.v};
    if (c.exact) {
      favor::exact_attention(qt, kt, vt, favor::TensorView{out.data(), out_dims}, o, m);
    } else if (c.codebook) {
      // 6 codes of d = 16, shared by every head or one set per query head
      std::vector<Index> code_dims{6, 16};
      if (c.codebook_per_query_head) code_dims.insert(code_dims.begin(), c.q.begin(), c.q.end() - 2);
      std::vector<float> codes(static_cast<std::size_t>(count_of(code_dims)));
      for (std::size_t i = 0; i < codes.size(); ++i) codes[i] = std::sin(0.7f * static_cast<float>(i));
      favor::CodebookOptions co;
      co.causal = c.causal;
      favor::codebook_attention(favor::ConstTensorView{codes.data(), code_dims}, qt, kt, vt,
                                favor::TensorView{out.data(), out_dims}, co, m);
    } else {
      favor::favor_attention(map, qt, kt, vt, favor::TensorView{out.data(), out_dims}, o, m);
    }
  } catch (const favor::Error& e) {
    error = e.what();
  }
  if (copies) *copies = arrival.copies.load();
  EXPECT_FALSE(arrival.wrong_thread) << c.name;
  return {out, error};
}

TEST(InputArrival, FavorAttentionGivesTheSameBitsAsOnInputsCopiedBeforehand) {
  const std::vector<Call> calls{
      {{4, 200, 16}, {4, 200, 16}, {4, 200, 8}, false, favor::Kernel::positive, {}, false, 1.0f, "4 heads"},
      {{1, 300, 16}, {1, 300, 16}, {1, 300, 8}, false, favor::Kernel::positive, {}, false, 1.0f, "1 head"},
      {{4, 150, 16}, {4, 150, 16}, {4, 150, 8}, true, favor::Kernel::positive, {}, false, 1.0f, "causal"},
      {{2, 4, 90, 16}, {2, 2, 130, 16}, {2, 2, 130, 8}, false, favor::Kernel::positive, {}, true, 1.0f, "grouped, masked"},
      {{3, 120, 16}, {3, 120, 16}, {3, 120, 8}, false, favor::Kernel::hyperbolic, {}, false, 1.0f, "hyperbolic"},
      {{3, 120, 16}, {3, 120, 16}, {3, 120, 8}, false, favor::Kernel::relu, {}, false, 1.0f, "relu (checked first)"},
      {{3, 120, 16}, {3, 120, 16}, {3, 120, 8}, false, favor::Kernel::oprf, {}, false, 1.0f, "oprf (fitted to q, k)"},
      {{3, 120, 16}, {3, 120, 16}, {3, 120, 8}, false, favor::Kernel::positive, {}, false, 1e9f, "v far from 1"},
      {{3, 120, 16}, {3, 120, 16}, {3, 120, 8}, true, favor::Kernel::positive, {}, false, 1e9f, "causal, v far from 1"},
      {{4, 200, 16}, {4, 200, 16}, {4, 200, 8}, false, favor::Kernel::positive, {}, false, 1.0f, "exact, 4 heads", true},
      {{2, 4, 90, 16}, {2, 2, 130, 16}, {2, 2, 130, 8}, true, favor::Kernel::positive, {}, true, 1.0f, "exact, grouped, causal, masked", true},
      {{4, 200, 16}, {4, 200, 16}, {4, 200, 8}, false, favor::Kernel::positive, {}, false, 1.0f, "codebook, 4 heads", false, true},
      {{2, 4, 90, 16}, {2, 2, 130, 16}, {2, 2, 130, 8}, true, favor::Kernel::positive, {}, true, 1.0f, "codebook, grouped, causal, masked", false, true},
      {{2, 4, 90, 16}, {2, 2, 130, 16}, {2, 2, 130, 8}, false, favor::Kernel::positive, {}, false, 1.0f, "codebook per query head, grouped", false, true, true},
  };
  std::mt19937 gen(11);
  for (const Call& c : calls) {
    favor::FeatureMapOptions fo;
    fo.dim = 16, fo.features = 32, fo.kernel = c.kernel, fo.seed = 5, fo.rho = c.rho;
    const favor::FeatureMap map(fo);
    const auto q = random_floats(count_of(c.q), gen, 1.0f), k = random_floats(count_of(c.k), gen, 1.0f);
    const auto v = random_floats(count_of(c.v), gen, c.v_scale);
    std::vector<std::uint8_t> mask(static_cast<std::size_t>(count_of(c.k) / c.k.back()));
    for (std::size_t i = 0; i < mask.size(); ++i) mask[i] = (i * 7) % 5 != 0;
    const auto [expected, expected_error] = run(c, map, q, k, v, mask, false, nullptr);
    ASSERT_EQ(expected_error, "") << c.name;
    // Either order: the bindings give a bidirectional FAVOR+ call its heads by slices, the others
    // whole, and an order only changes which thread waits when.
    for (const auto reading : {favor::HeadReading::whole, favor::HeadReading::by_slices})
      for (int threads : {1, 2, 4})
        for (const float poison : {std::numeric_limits<float>::quiet_NaN(), 0.25f}) {
          const Threads t(threads);
          int copies = 0;
          const auto [got, error] = run(c, map, q, k, v, mask, true, &copies, poison, -1, reading);
          const std::string where = std::string(c.name) + ", " + std::to_string(threads) + " threads, poison " +
                                    std::to_string(poison) +
                                    (reading == favor::HeadReading::whole ? ", whole" : ", by slices");
          EXPECT_EQ(error, "") << where;
          EXPECT_EQ(std::memcmp(got.data(), expected.data(), sizeof(float) * got.size()), 0) << where;
          const auto order = favor::attention_input_order(c.q, c.k, c.v, 16, favor::max_threads(), reading);
          EXPECT_EQ(copies, static_cast<int>(order.size())) << where;
        }
  }
}

TEST(InputArrival, AnInputsErrorIsTheOneACheckBeforehandGives) {
  // A NaN in the last head's v, and an infinity in the first head's q: the error names q.
  for (const int method : {0, 1, 2}) {  // FAVOR+, exact, codebook
  const Call c{{4, 100, 16}, {4, 100, 16}, {4, 100, 8}, false, favor::Kernel::positive, {}, false, 1.0f, "errors", method == 1, method == 2};
  favor::FeatureMapOptions fo;
  fo.dim = 16, fo.features = 32, fo.seed = 5;
  const favor::FeatureMap map(fo);
  std::mt19937 gen(3);
  auto q = random_floats(count_of(c.q), gen, 1.0f), k = random_floats(count_of(c.k), gen, 1.0f);
  auto v = random_floats(count_of(c.v), gen, 1.0f);
  v[v.size() - 3] = std::numeric_limits<float>::quiet_NaN();
  const auto [unused, v_error] = run(c, map, q, k, v, {}, false, nullptr);
  ASSERT_NE(v_error.find("v"), std::string::npos) << v_error;
  q[5] = std::numeric_limits<float>::infinity();
  const auto [unused2, q_error] = run(c, map, q, k, v, {}, false, nullptr);
  ASSERT_NE(q_error.find("q"), std::string::npos) << q_error;
  for (int threads : {1, 4}) {
    const Threads t(threads);
    EXPECT_EQ(run(c, map, q, k, v, {}, true, nullptr).second, q_error) << threads << " threads";
    q[5] = 0.5f;
    EXPECT_EQ(run(c, map, q, k, v, {}, true, nullptr).second, v_error) << threads << " threads";
    q[5] = std::numeric_limits<float>::infinity();
  }
  }
}

// A copy that throws (in wasm: a JS exception, caught in the bindings) ends the call with an error
// on every thread count: the threads waiting for that piece or a later one throw too, none waits
// for ever, and the next call's inputs arrive as before.
TEST(InputArrival, ACopyThatFailsEndsTheCallWithAnErrorAndNoThreadWaits) {
  const std::vector<Call> calls{
      {{4, 200, 16}, {4, 200, 16}, {4, 200, 8}, false, favor::Kernel::positive, {}, false, 1.0f, "FAVOR+"},
      {{1, 300, 16}, {1, 300, 16}, {1, 300, 8}, true, favor::Kernel::positive, {}, false, 1.0f, "FAVOR+ causal, 1 head"},
      {{4, 200, 16}, {4, 200, 16}, {4, 200, 8}, false, favor::Kernel::positive, {}, false, 1.0f, "exact", true},
      {{4, 200, 16}, {4, 200, 16}, {4, 200, 8}, false, favor::Kernel::positive, {}, false, 1.0f, "codebook", false, true},
  };
  favor::FeatureMapOptions fo;
  fo.dim = 16, fo.features = 32, fo.seed = 5;
  const favor::FeatureMap map(fo);
  std::mt19937 gen(7);
  for (const Call& c : calls) {
    const auto q = random_floats(count_of(c.q), gen, 1.0f), k = random_floats(count_of(c.k), gen, 1.0f);
    const auto v = random_floats(count_of(c.v), gen, 1.0f);
    const auto expected = run(c, map, q, k, v, {}, false, nullptr).first;
    for (int threads : {1, 2, 4})
      for (int fail_at : {0, 5}) {
        const Threads t(threads);
        const std::string where = std::string(c.name) + ", " + std::to_string(threads) + " threads, piece " + std::to_string(fail_at);
        EXPECT_EQ(run(c, map, q, k, v, {}, true, nullptr, 0.25f, fail_at).second,
                  "q, k, v: could not be copied into the WebAssembly heap")
            << where;
        const auto [again, error] = run(c, map, q, k, v, {}, true, nullptr);
        EXPECT_EQ(error, "") << where;
        EXPECT_EQ(again, expected) << where;
      }
  }
}

}  // namespace
