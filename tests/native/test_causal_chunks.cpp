// Causal linear attention computed by chunks with a carried state must equal the masked-matrix
// formulation out_i = sum_{j<=i} (qf_i.kf_j) v_j / sum_{j<=i} qf_i.kf_j for every chunk size:
// 1 (pure recurrence), 3 (does not divide L), 16, 128 (the default), and larger than L (one
// block, pure masked matrix).
#include <gtest/gtest.h>

#include <random>

#include "reference.hpp"

namespace {

using favor::Kernel;
using ref::Index;
using ref::MatD;
using ref::MatF;

const Index kChunks[] = {1, 3, 16, 128, 1000};

// linear_attention on explicit features in [0.05, 1]: every weight is positive and the
// normalizer is >= 0.05^2 * M * (i+1), so the float32 computation is well conditioned. Sums run
// over <= 300 rows of M = 24 products (~1e-6 relative error): tolerance 1e-5.
TEST(CausalLinearAttention, ExplicitFeaturesAllChunkSizes) {
  std::mt19937 gen(2000);
  const Index L = 300, M = 24, dv = 7;
  const MatF qf = ref::uniform_matrix(L, M, gen, 0.05, 1.0);
  const MatF kf = ref::uniform_matrix(L, M, gen, 0.05, 1.0);
  const MatF v = ref::normal_matrix(L, dv, gen);
  const MatD expected =
      ref::linear_output(ref::to_double(qf), ref::to_double(kf), ref::to_double(v), true);
  const MatD bidir =
      ref::linear_output(ref::to_double(qf), ref::to_double(kf), ref::to_double(v), false);
  // Sanity: causal and bidirectional differ substantially, so a missing mask cannot pass.
  ASSERT_GT(ref::max_rel(bidir, expected), 0.1);
  for (Index chunk : kChunks) {
    const MatF out = favor::linear_attention(qf, kf, v, true, chunk);
    EXPECT_LT(ref::max_rel(ref::to_double(out), expected), 1e-5) << "chunk " << chunk;
    MatF out2 = MatF::Constant(L, dv, 5.0f);
    favor::linear_attention(qf, kf, v, out2, true, chunk);
    EXPECT_LT(ref::max_rel(ref::to_double(out2), expected), 1e-5) << "chunk " << chunk;
  }
}

// Same with signed features (the trigonometric case): weights can be negative, but the
// features are chosen as 1 + small signed noise, so every normalizer stays ~ M (i+1) and the
// computation is well conditioned: tolerance 1e-5.
TEST(CausalLinearAttention, SignedFeatures) {
  std::mt19937 gen(2010);
  const Index L = 200, M = 16, dv = 5;
  MatF qf = ref::uniform_matrix(L, M, gen, -0.3, 0.3);
  MatF kf = ref::uniform_matrix(L, M, gen, -0.3, 0.3);
  qf.col(0).array() += 1.0f;
  kf.col(0).array() += 1.0f;
  const MatF v = ref::normal_matrix(L, dv, gen);
  const MatD expected =
      ref::linear_output(ref::to_double(qf), ref::to_double(kf), ref::to_double(v), true);
  for (Index chunk : kChunks)
    EXPECT_LT(ref::max_rel(ref::to_double(favor::linear_attention(qf, kf, v, true, chunk)),
                           expected),
              1e-5)
        << "chunk " << chunk;
}

// Bidirectional linear attention, L != S, any chunk.
TEST(LinearAttention, Bidirectional) {
  std::mt19937 gen(2020);
  const Index L = 150, S = 90, M = 20, dv = 11;
  const MatF qf = ref::uniform_matrix(L, M, gen, 0.05, 1.0);
  const MatF kf = ref::uniform_matrix(S, M, gen, 0.05, 1.0);
  const MatF v = ref::normal_matrix(S, dv, gen);
  const MatD expected =
      ref::linear_output(ref::to_double(qf), ref::to_double(kf), ref::to_double(v), false);
  for (Index chunk : kChunks)
    EXPECT_LT(ref::max_rel(ref::to_double(favor::linear_attention(qf, kf, v, false, chunk)),
                           expected),
              1e-5)
        << "chunk " << chunk;
}

// favor_attention with FavorOptions::chunk: causal output equals the masked reference for every
// chunk size (tolerance 1e-4 as in test_favor_explicit.cpp: the feature exponents add float32
// error and the running key-max rescaling of the carried state adds a few more roundings).
// The inputs have a growing norm along the sequence so that the running column max of the key
// exponents keeps increasing and the carried state must be rescaled across chunks.
TEST(CausalFavorAttention, ChunkSizesMatchMaskedMatrix) {
  const Index L = 260, d = 16, dv = 8, m = 48;
  unsigned seed = 2030;
  for (Kernel kernel : {Kernel::positive, Kernel::hyperbolic, Kernel::oprf, Kernel::relu}) {
    std::mt19937 gen(seed++);
    const MatF w = ref::normal_matrix(m, d, gen);
    MatF q = ref::normal_matrix(L, d, gen, 0.25), k = ref::normal_matrix(L, d, gen, 0.25);
    for (Index i = 0; i < L; ++i) {
      const float g = 0.5f + 1.5f * static_cast<float>(i) / static_cast<float>(L);
      q.row(i) *= g;
      k.row(i) *= g;
    }
    const MatF v = ref::normal_matrix(L, dv, gen);
    const favor::FeatureMap map(kernel, w);
    const MatD expected = ref::favor_output(kernel, ref::to_double(w), ref::to_double(q),
                                            ref::to_double(k), ref::to_double(v), 0.25, true);
    for (Index chunk : kChunks) {
      favor::FavorOptions opt;
      opt.causal = true;
      opt.chunk = chunk;
      EXPECT_LT(ref::max_rel(ref::to_double(favor::favor_attention(map, q, k, v, opt)), expected),
                1e-4)
          << favor::to_string(kernel) << " chunk " << chunk;
    }
    // Bidirectional: the chunk must not change the result either.
    const MatD expected_bi = ref::favor_output(kernel, ref::to_double(w), ref::to_double(q),
                                               ref::to_double(k), ref::to_double(v), 0.25, false);
    for (Index chunk : {Index{1}, Index{16}, Index{1000}}) {
      favor::FavorOptions opt;
      opt.chunk = chunk;
      EXPECT_LT(
          ref::max_rel(ref::to_double(favor::favor_attention(map, q, k, v, opt)), expected_bi),
          1e-4)
          << favor::to_string(kernel) << " bidirectional chunk " << chunk;
    }
  }
}

}  // namespace
