// Exact softmax attention (exact_attention, attention_matrix; Matrix and TensorView APIs)
// against the brute-force float64 softmax of reference.hpp.
//
// Tolerance 1e-5 (max entry error relative to the largest reference entry, and relative
// Frobenius for outputs): inputs are float32 (unit roundoff 6e-8); a score scale*q.k with
// |score| <~ 10 accumulated over d <= 64 terms carries an absolute error ~1e-6, i.e. ~1e-6
// relative error in exp(score), and the normalizing sums over S <= 300 add ~sqrt(S)*6e-8. So a
// correct float32 implementation lands at ~1e-6; 1e-5 leaves a 10x margin while any real
// mistake (wrong scale, off-by-one mask, lost block) is orders of magnitude larger.
#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include <favor/engine/exact_block.hpp>

#include "reference.hpp"

namespace {

using ref::Index;
using ref::MatD;
using ref::MatF;

constexpr double kTol = 1e-5;

struct Case {
  Index L, S, d, dv;
  bool causal;
  double scale;  // <= 0: default 1/sqrt(d)
};

void check_case(const Case& c, unsigned seed) {
  std::mt19937 gen(seed);
  const MatF q = ref::normal_matrix(c.L, c.d, gen);
  const MatF k = ref::normal_matrix(c.S, c.d, gen);
  const MatF v = ref::normal_matrix(c.S, c.dv, gen);
  favor::AttentionOptions opt;
  opt.causal = c.causal;
  if (c.scale > 0) opt.scale = c.scale;
  const double scale = c.scale > 0 ? c.scale : ref::default_scale(c.d);
  const MatD a_ref = ref::softmax_matrix(ref::to_double(q), ref::to_double(k), scale, c.causal);
  const MatD out_ref = a_ref * ref::to_double(v);

  SCOPED_TRACE(testing::Message() << "L=" << c.L << " S=" << c.S << " d=" << c.d
                                  << " dv=" << c.dv << " causal=" << c.causal
                                  << " scale=" << scale);

  // Returning overloads.
  const MatF out = favor::exact_attention(q, k, v, opt);
  EXPECT_LT(ref::max_rel(ref::to_double(out), out_ref), kTol);
  EXPECT_LT(ref::rel_frobenius(ref::to_double(out), out_ref), kTol);
  const MatF a = favor::attention_matrix(q, k, opt);
  EXPECT_LT(ref::max_rel(ref::to_double(a), a_ref), kTol);
  if (c.causal) {
    // Masked entries must be exactly zero.
    for (Index i = 0; i < c.L; ++i)
      for (Index j = i + 1; j < c.S; ++j) ASSERT_EQ(a(i, j), 0.0f) << i << "," << j;
  }

  // Output-parameter overloads.
  MatF out2(c.L, c.dv), a2(c.L, c.S);
  out2.setConstant(123.0f);
  a2.setConstant(123.0f);
  favor::exact_attention(q, k, v, out2, opt);
  favor::attention_matrix(q, k, a2, opt);
  EXPECT_LT(ref::max_rel(ref::to_double(out2), out_ref), kTol);
  EXPECT_LT(ref::max_rel(ref::to_double(a2), a_ref), kTol);

  // The streaming (online softmax) output equals the materialized matrix times V.
  const MatD av = ref::to_double(a) * ref::to_double(v);
  EXPECT_LT(ref::max_rel(ref::to_double(out), av), kTol);
}

TEST(ExactAttention, BidirectionalAcrossBlockSizes) {
  unsigned seed = 100;
  for (Index L : {1, 7, 64, 130, 300}) check_case({L, L, 32, 32, false, 0.0}, seed++);
}

TEST(ExactAttention, CausalAcrossBlockSizes) {
  unsigned seed = 200;
  for (Index L : {1, 7, 64, 130, 300}) check_case({L, L, 32, 32, true, 0.0}, seed++);
}

TEST(ExactAttention, CrossAttentionDifferentLengthsAndValueDim) {
  unsigned seed = 300;
  check_case({70, 130, 24, 40, false, 0.0}, seed++);
  check_case({300, 7, 16, 5, false, 0.0}, seed++);
  check_case({1, 300, 8, 3, false, 0.0}, seed++);
  check_case({129, 257, 64, 17, false, 0.0}, seed++);
}

// A key mask hiding whole key blocks (128 keys) before a query's first attending key (left
// padding): the query's running max is -inf over those blocks, which must give weight 0, not
// exp(-inf + inf) = NaN. Equal to attention over the kept keys alone (to float rounding: their
// blocks start elsewhere, so the online softmax rescales at other keys), bidirectional, and for
// causal rows against the float64 reference.
TEST(ExactAttention, MaskHidingWholeLeadingKeyBlocks) {
  std::mt19937 gen(500);
  const Index L = 420, d = 16, dv = 5, pad = 300;
  const MatF q = ref::normal_matrix(L, d, gen), k = ref::normal_matrix(L, d, gen), v = ref::normal_matrix(L, dv, gen);
  std::vector<std::uint8_t> mask(static_cast<std::size_t>(L), 0);
  for (Index j = pad; j < L; ++j) mask[static_cast<std::size_t>(j)] = 1;
  favor::AttentionOptions opt;
  opt.key_mask = mask.data();
  const MatF out = favor::exact_attention(q, k, v, opt);
  const MatF kept = favor::exact_attention(q, k.bottomRows(L - pad), v.bottomRows(L - pad));
  EXPECT_LT(ref::max_rel(ref::to_double(out), ref::to_double(kept)), kTol);
  opt.causal = true;
  const MatF causal = favor::exact_attention(q, k, v, opt);
  const double scale = ref::default_scale(d);
  for (Index i = 0; i < L; ++i) {
    if (i < pad) {
      ASSERT_TRUE((causal.row(i).array() == 0.0f).all()) << "row " << i << " sees no key";
      continue;
    }
    const MatD a = ref::softmax_matrix(ref::to_double(MatF(q.row(i))), ref::to_double(MatF(k.middleRows(pad, i + 1 - pad))),
                                       scale, false);
    const MatD want = a * ref::to_double(MatF(v.middleRows(pad, i + 1 - pad)));
    ASSERT_LT(ref::max_rel(ref::to_double(MatF(causal.row(i))), want), kTol) << "row " << i;
  }
}

// A single query (decoding) takes its own kernel, with the keys across the vector lanes; it must
// give the bits of the same query inside a strip of 8. Every row alone against the whole call:
// bidirectional, causal (a row alone is the last query: bottom-right) and with a key mask; d = 13
// and dv = 7 leave feature and column tails, S = 301 several key blocks and a key tail.
TEST(ExactAttention, SingleQueryEqualsItsRowInTheBlockBitForBit) {
  std::mt19937 gen(600);
  const Index S = 301, d = 13, dv = 7;
  const MatF q = ref::normal_matrix(S, d, gen), k = ref::normal_matrix(S, d, gen), v = ref::normal_matrix(S, dv, gen);
  std::vector<std::uint8_t> mask(static_cast<std::size_t>(S));
  for (Index j = 0; j < S; ++j) mask[static_cast<std::size_t>(j)] = j % 5 != 2;
  for (int variant = 0; variant < 3; ++variant) {
    favor::AttentionOptions opt;
    opt.causal = variant == 1;
    if (variant == 2) opt.key_mask = mask.data();
    const MatF all = favor::exact_attention(q, k, v, opt);
    for (Index i : {Index{0}, Index{1}, Index{7}, Index{128}, Index{200}, S - 1}) {
      // causal: row i alone sees keys [0, i] as the last of i + 1 positions
      const Index keys = opt.causal ? i + 1 : S;
      const MatF one = favor::exact_attention(q.row(i), k.topRows(keys), v.topRows(keys), opt);
      ASSERT_EQ(0, std::memcmp(one.data(), &all(i, 0), sizeof(float) * static_cast<std::size_t>(dv)))
          << "variant " << variant << " row " << i;
    }
  }
}

// An exact causal state caches its keys in packed strips (kernel::Keys): the strip kernel and
// the single-query kernel must give the same bits on them as on row-major keys. Slots past the
// keys are NaN: the kernels must not let them into a result.
TEST(ExactAttention, PackedKeysEqualRowMajorBitForBit) {
  std::mt19937 gen(620);
  constexpr Index strip = favor::kernel::kStrip;
  for (Index d : {13, 64})
    for (Index S : {1, 37, 301}) {
      const Index dv = 7;
      const MatF k = ref::normal_matrix(S, d, gen), v = ref::normal_matrix(S, dv, gen);
      std::vector<float> packed(static_cast<std::size_t>((S + strip - 1) / strip * d * strip),
                                std::numeric_limits<float>::quiet_NaN());
      for (Index j = 0; j < S; ++j) favor::kernel::put_packed_key(packed.data(), d, j, &k(j, 0));
      const auto keys = favor::kernel::Keys::packed(packed.data(), S, d);
      std::vector<std::uint8_t> mask(static_cast<std::size_t>(S));
      for (Index j = 0; j < S; ++j) mask[static_cast<std::size_t>(j)] = j % 5 != 2 || S == 1;
      for (Index L : {Index{1}, Index{5}, Index{70}}) {
        if (L > S) continue;
        const MatF q = ref::normal_matrix(L, d, gen);
        for (int variant = 0; variant < 3; ++variant) {
          favor::AttentionOptions opt;
          opt.causal = variant == 1;
          if (variant == 2) opt.key_mask = mask.data();
          const MatF want = favor::exact_attention(q, k, v, opt);
          MatF got(L, dv);
          favor::detail::exact_attention(q, keys, v, got, opt);
          ASSERT_EQ(0, std::memcmp(want.data(), got.data(), sizeof(float) * static_cast<std::size_t>(L * dv)))
              << "d " << d << " S " << S << " L " << L << " variant " << variant;
        }
      }
    }
}

TEST(ExactAttention, CustomScale) {
  unsigned seed = 400;
  // scale 0.5 with d=16 gives scores of std 2 (up to ~10): peaked rows that stress the running
  // max; scale 0.01 gives nearly uniform rows.
  check_case({130, 130, 16, 16, false, 0.5}, seed++);
  check_case({130, 130, 16, 16, true, 0.5}, seed++);
  check_case({64, 200, 16, 8, false, 0.01}, seed++);
  check_case({300, 300, 64, 32, true, 0.02}, seed++);
}

// A scale other than the default must actually change the result (guards against an ignored
// option that the comparisons above could only catch through the reference).
TEST(ExactAttention, ScaleIsUsed) {
  std::mt19937 gen(450);
  const MatF q = ref::normal_matrix(10, 16, gen), k = ref::normal_matrix(10, 16, gen);
  favor::AttentionOptions a, b;
  b.scale = 1.0;
  const MatD x = ref::to_double(favor::attention_matrix(q, k, a));
  const MatD y = ref::to_double(favor::attention_matrix(q, k, b));
  EXPECT_GT((x - y).cwiseAbs().maxCoeff(), 1e-2);
}

TEST(ExactAttention, ResolveScale) {
  favor::AttentionOptions opt;
  EXPECT_DOUBLE_EQ(favor::resolve_scale(opt, 64), 0.125);
  opt.scale = 0.3;
  EXPECT_DOUBLE_EQ(favor::resolve_scale(opt, 64), 0.3);
}

// TensorView API: leading head/batch dims, each head against the brute-force reference.
void check_tensor(const std::vector<Index>& lead, Index L, Index S, Index d, Index dv, bool causal,
                  unsigned seed) {
  std::mt19937 gen(seed);
  Index heads = 1;
  for (Index x : lead) heads *= x;
  auto dims = [&](Index rows, Index cols) {
    std::vector<Index> out = lead;
    out.push_back(rows);
    out.push_back(cols);
    return out;
  };
  std::vector<float> q = ref::normal_buffer(static_cast<std::size_t>(heads * L * d), gen);
  std::vector<float> k = ref::normal_buffer(static_cast<std::size_t>(heads * S * d), gen);
  std::vector<float> v = ref::normal_buffer(static_cast<std::size_t>(heads * S * dv), gen);
  std::vector<float> out(static_cast<std::size_t>(heads * L * dv), -7.0f);
  std::vector<float> mat(static_cast<std::size_t>(heads * L * S), -7.0f);
  favor::AttentionOptions opt;
  opt.causal = causal;
  favor::exact_attention(favor::ConstTensorView{q.data(), dims(L, d)},
                         favor::ConstTensorView{k.data(), dims(S, d)},
                         favor::ConstTensorView{v.data(), dims(S, dv)},
                         favor::TensorView{out.data(), dims(L, dv)}, opt);
  favor::attention_matrix(favor::ConstTensorView{q.data(), dims(L, d)},
                          favor::ConstTensorView{k.data(), dims(S, d)},
                          favor::TensorView{mat.data(), dims(L, S)}, opt);
  for (Index h = 0; h < heads; ++h) {
    SCOPED_TRACE(testing::Message() << "head " << h << " of " << heads);
    const MatD qh = ref::to_double(ref::head(q, h, L, d));
    const MatD kh = ref::to_double(ref::head(k, h, S, d));
    const MatD vh = ref::to_double(ref::head(v, h, S, dv));
    const MatD a_ref = ref::softmax_matrix(qh, kh, ref::default_scale(d), causal);
    EXPECT_LT(ref::max_rel(ref::to_double(ref::head(out, h, L, dv)), a_ref * vh), kTol);
    EXPECT_LT(ref::max_rel(ref::to_double(ref::head(mat, h, L, S)), a_ref), kTol);
  }
}

TEST(ExactAttentionTensor, HeadsLd) {
  check_tensor({3}, 65, 65, 16, 16, false, 500);
  check_tensor({3}, 65, 65, 16, 16, true, 501);
  check_tensor({2}, 33, 70, 8, 12, false, 502);
}

TEST(ExactAttentionTensor, BatchHeadsLd) {
  check_tensor({2, 3}, 40, 40, 16, 16, false, 510);
  check_tensor({2, 3}, 40, 40, 16, 16, true, 511);
  check_tensor({2, 2}, 17, 130, 32, 4, false, 512);
}

}  // namespace
