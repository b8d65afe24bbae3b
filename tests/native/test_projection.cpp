// Sampling of the projection W (docs/design.md §2): block orthogonality, row norms, and the
// distribution of iid entries. All statistics are computed in double from the float W.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "favor/features/random.hpp"
#include "reference.hpp"

namespace {

using favor::Sampling;
using ref::Index;
using ref::MatD;

// Within every d x d block (rows [b d, min((b+1) d, m))), W W^T must be diagonal:
// |w_i.w_j| / (|w_i| |w_j|) < 1e-5 for i != j. A float32 rounding of orthonormal rows gives
// cosines ~ sqrt(d) * 6e-8 ~ 3e-7 at d=16; 1e-5 leaves margin and still rejects anything that
// is not orthogonalized (random Gaussian rows have cosines ~ 1/sqrt(d) = 0.25).
void check_blocks_orthogonal(const MatD& w, Index d) {
  const Index m = w.rows();
  for (Index start = 0; start < m; start += d) {
    const Index end = std::min(m, start + d);
    for (Index i = start; i < end; ++i)
      for (Index j = start; j < i; ++j) {
        const double c = w.row(i).dot(w.row(j)) / (w.row(i).norm() * w.row(j).norm());
        ASSERT_LT(std::abs(c), 1e-5) << "rows " << i << ", " << j << " (block at " << start << ")";
      }
  }
}

// Largest |cosine| between two rows of the same d x d block.
double max_within_block_cosine(const MatD& w, Index d) {
  double worst = 0.0;
  for (Index i = 0; i < w.rows(); ++i)
    for (Index j = 0; j < i; ++j)
      if (i / d == j / d)
        worst = std::max(worst, std::abs(w.row(i).dot(w.row(j)) / (w.row(i).norm() * w.row(j).norm())));
  return worst;
}

// Largest |cosine| between rows of different blocks: independent blocks are NOT mutually
// orthogonal, so this must be clearly nonzero when m > d.
double max_cross_block_cosine(const MatD& w, Index d) {
  double worst = 0.0;
  for (Index i = 0; i < w.rows(); ++i)
    for (Index j = 0; j < i; ++j)
      if (i / d != j / d)
        worst = std::max(worst, std::abs(w.row(i).dot(w.row(j)) / (w.row(i).norm() * w.row(j).norm())));
  return worst;
}

TEST(Projection, ShapesForAllModes) {
  for (Sampling s : {Sampling::iid, Sampling::orthogonal, Sampling::orthogonal_fixed, Sampling::simplex,
                     Sampling::structured})
    for (Index m : {1, 5, 16, 40}) {
      const favor::Matrix w = favor::sample_projection(m, 16, s, 3);
      EXPECT_EQ(w.rows(), m);
      EXPECT_EQ(w.cols(), 16);
      EXPECT_TRUE(ref::all_finite(ref::to_double(w)));
    }
}

TEST(Projection, OrthogonalBlocksAreOrthogonal) {
  const Index d = 16;
  for (Sampling s : {Sampling::orthogonal, Sampling::orthogonal_fixed}) {
    for (Index m : {5, 16, 40, 67}) {
      for (std::uint64_t seed : {0ull, 1ull, 987654321ull}) {
        SCOPED_TRACE(testing::Message() << favor::to_string(s) << " m=" << m << " seed=" << seed);
        const MatD w = ref::to_double(favor::sample_projection(m, d, s, seed));
        check_blocks_orthogonal(w, d);
        if (m > d) {
          EXPECT_GT(max_cross_block_cosine(w, d), 0.1);
        }
      }
    }
  }
}

// orthogonal-fixed: every row norm is sqrt(d), relative error < 1e-5 (float32 rounding of the
// entries gives ~1e-7).
TEST(Projection, OrthogonalFixedRowNorms) {
  for (Index d : {4, 16, 33}) {
    for (Index m : {5, 16, 40}) {
      const MatD w = ref::to_double(favor::sample_projection(m, d, Sampling::orthogonal_fixed, 77));
      for (Index i = 0; i < m; ++i)
        EXPECT_NEAR(w.row(i).norm() / std::sqrt(static_cast<double>(d)), 1.0, 1e-5)
            << "d=" << d << " m=" << m << " row " << i;
    }
  }
}

// orthogonal: row norms are chi_d, so squared norms are chi^2_d: mean d, variance 2d. With
// n = 4096 rows (d = 16): the standard error of the mean of squared norms is sqrt(2d/n) = 0.088
// and of their sample variance sqrt((mu4 - sigma^4)/n) with mu4 = 12d(d+4) = 3840, i.e.
// sqrt((3840 - 1024)/4096) = 0.83. Tolerances are 4 standard errors (0.35 and 3.3): a
// fixed-norm sampler (variance 0) or plain unit rows (mean 1) fail by far.
TEST(Projection, OrthogonalRowNormsAreChi) {
  const Index d = 16, m = 4096;
  const MatD w = ref::to_double(favor::sample_projection(m, d, Sampling::orthogonal, 2024));
  std::vector<double> sq(static_cast<std::size_t>(m));
  for (Index i = 0; i < m; ++i) sq[static_cast<std::size_t>(i)] = w.row(i).squaredNorm();
  const ref::MeanSe ms = ref::mean_se(sq);
  EXPECT_NEAR(ms.mean, 16.0, 4 * 0.088);
  const double var = ms.se * ms.se * static_cast<double>(m);
  EXPECT_NEAR(var, 32.0, 4 * 0.83);
  // Norms inside one block differ (not all sqrt(d)).
  EXPECT_GT(std::abs(w.row(0).norm() - w.row(1).norm()), 1e-3);
}

// Marginally each row of `orthogonal` and of `simplex` is N(0, I_d): entries have mean 0 and variance 1 (same
// statistics and tolerances as for iid below).
TEST(Projection, EntryStatistics) {
  const Index m = 1000, d = 64;  // n = 64000 entries
  for (Sampling s : {Sampling::iid, Sampling::orthogonal, Sampling::simplex}) {
    const MatD w = ref::to_double(favor::sample_projection(m, d, s, 99));
    const double n = static_cast<double>(w.size());
    const double mean = w.sum() / n;
    const double var = (w.array() - mean).square().sum() / (n - 1);
    // Standard errors: mean 1/sqrt(n) = 0.004, variance sqrt(2/n) = 0.0056 (Gaussian fourth
    // moment 3); tolerance 4 standard errors.
    EXPECT_NEAR(mean, 0.0, 4 * 0.004) << favor::to_string(s);
    EXPECT_NEAR(var, 1.0, 4 * 0.0056) << favor::to_string(s);
    if (s == Sampling::iid) {
      // Fourth moment ~3 (Gaussian, not uniform): SE sqrt((105 - 9)/n) = 0.039; 4 SE.
      const double m4 = (w.array() - mean).pow(4).sum() / n;
      EXPECT_NEAR(m4, 3.0, 4 * 0.039);
      // iid rows are not orthogonal within a block.
      EXPECT_GT(max_within_block_cosine(w.topRows(64), d), 0.1);
    }
  }
}

// simplex: within a block the unit directions have pairwise cosine exactly -1/(d-1) in double;
// the float32 rounding of W moves each row by a relative 2^-24 ~ 6e-8 at most, hence a cosine by
// ~2.4e-7 at most, so 1e-6 is a bound with margin. Orthogonal rows (cosine 0) miss it by 1/(d-1)
// >= 0.03 for every d tested, iid rows by ~1/sqrt(d). A full block's directions sum to zero
// (the simplex is centred at the origin): |sum| < 1e-5 against ~sqrt(d) for anything else.
TEST(Projection, SimplexBlocksHaveCosineMinusOneOverDMinusOne) {
  for (Index d : {2, 3, 5, 16, 33}) {
    const double expected = -1.0 / static_cast<double>(d - 1);
    for (Index m : {Index{1}, Index{2}, d, 2 * d + 1}) {
      for (std::uint64_t seed : {0ull, 5ull, 987654321ull}) {
        SCOPED_TRACE(testing::Message() << "d=" << d << " m=" << m << " seed=" << seed);
        const MatD w = ref::to_double(favor::sample_projection(m, d, Sampling::simplex, seed));
        MatD u = w;
        for (Index i = 0; i < m; ++i) u.row(i) /= w.row(i).norm();
        for (Index i = 0; i < m; ++i)
          for (Index j = 0; j < i; ++j)
            if (i / d == j / d) ASSERT_NEAR(u.row(i).dot(u.row(j)), expected, 1e-6) << "rows " << i << ", " << j;
        for (Index start = 0; start + d <= m; start += d)
          EXPECT_LT(u.middleRows(start, d).colwise().sum().norm(), 1e-5) << "block at " << start;
        if (m > d && d >= 5) EXPECT_GT(max_cross_block_cosine(w, d), 0.1);
      }
    }
  }
  // d = 1: the one direction of a block is +-1 (no second vertex to be opposite to).
  const MatD w1 = ref::to_double(favor::sample_projection(6, 1, Sampling::simplex, 3));
  for (Index i = 0; i < 6; ++i) EXPECT_GT(std::abs(w1(i, 0)), 0.0);
}

// simplex shares the seed's Haar blocks (stream 0) and chi_d norms (stream 1) with orthogonal:
// same row norms, different directions.
TEST(Projection, SimplexRowNormsAreTheOrthogonalChiDraws) {
  const Index d = 16, m = 4096;
  const MatD w = ref::to_double(favor::sample_projection(m, d, Sampling::simplex, 2024));
  const MatD o = ref::to_double(favor::sample_projection(m, d, Sampling::orthogonal, 2024));
  std::vector<double> sq(static_cast<std::size_t>(m));
  for (Index i = 0; i < m; ++i) {
    sq[static_cast<std::size_t>(i)] = w.row(i).squaredNorm();
    ASSERT_NEAR(w.row(i).norm() / o.row(i).norm(), 1.0, 1e-6) << "row " << i;
  }
  // chi^2_16: mean 16, variance 32; same standard errors and 4-SE tolerances as for orthogonal.
  const ref::MeanSe ms = ref::mean_se(sq);
  EXPECT_NEAR(ms.mean, 16.0, 4 * 0.088);
  EXPECT_NEAR(ms.se * ms.se * static_cast<double>(m), 32.0, 4 * 0.83);
  // The first row of a block is the first Haar row itself (L(0,0) = 1); the second is not.
  EXPECT_LT((w.row(0) - o.row(0)).norm(), 1e-5);
  EXPECT_GT((w.row(1) - o.row(1)).norm(), 0.1);
}

// The SORF block of a power-of-two p, recomputed independently: the Sylvester Hadamard matrix
// H(i, j) = (-1)^popcount(i & j) / sqrt(p) as dense matrices in double, the diagonals D1, D2, D3
// drawn as the library documents (3p uniforms of NormalStream(seed, 4), -1 below 1/2, in the
// order D1, D2, D3), and sqrt(p) H D1 H D2 H D3.
MatD sorf_reference(Index p, ref::Index blocks, std::uint64_t seed) {
  MatD h(p, p);
  for (Index i = 0; i < p; ++i)
    for (Index j = 0; j < p; ++j)
      h(i, j) = (__builtin_popcountll(static_cast<unsigned long long>(i & j)) % 2 ? -1.0 : 1.0) /
                std::sqrt(static_cast<double>(p));
  favor::NormalStream signs(seed, 4);
  MatD out(blocks * p, p);
  for (Index b = 0; b < blocks; ++b) {
    MatD diag[3];
    for (auto& dg : diag) {
      dg = MatD::Zero(p, p);
      for (Index t = 0; t < p; ++t) dg(t, t) = signs.uniform() < 0.5 ? -1.0 : 1.0;
    }
    out.middleRows(b * p, p) = std::sqrt(static_cast<double>(p)) * h * diag[0] * h * diag[1] * h * diag[2];
  }
  return out;
}

// structured, d a power of two: W equals the formula to float rounding (1e-6 absolute on entries
// of size <= sqrt(d)), every block's rows are orthogonal and of norm sqrt(d); the entries are
// integers divided by d, so the float W has them exactly.
TEST(Projection, StructuredIsSqrtDTimesHD1HD2HD3) {
  for (Index d : {1, 2, 4, 8, 16}) {
    for (std::uint64_t seed : {0ull, 11ull, 4242424242ull}) {
      SCOPED_TRACE(testing::Message() << "d=" << d << " seed=" << seed);
      const Index m = 2 * d + 1;
      const MatD w = ref::to_double(favor::sample_projection(m, d, Sampling::structured, seed));
      const MatD r = sorf_reference(d, 3, seed);
      ASSERT_LT((w - r.topRows(m)).cwiseAbs().maxCoeff(), 1e-6);
      for (Index i = 0; i < m; ++i) {
        EXPECT_NEAR(w.row(i).squaredNorm(), static_cast<double>(d), 1e-9) << "row " << i;
        for (Index c = 0; c < d; ++c) EXPECT_EQ(w(i, c) * d, std::round(w(i, c) * d));
      }
      if (d > 1) check_blocks_orthogonal(w, d);
    }
  }
  // A literal golden: d = m = 4, seed 7, from the formula above (rows of sqrt(4) H D1 H D2 H D3).
  const MatD w = ref::to_double(favor::sample_projection(4, 4, Sampling::structured, 7));
  const MatD r = sorf_reference(4, 1, 7);
  for (Index i = 0; i < 4; ++i)
    for (Index c = 0; c < 4; ++c) EXPECT_EQ(w(i, c), r(i, c)) << i << "," << c;  // exact: k / 4
}

// The diagonals are a function of the seed: the same seed gives the same W, another seed another
// W (two seeds agree with probability 2^-(3p) per block), and the row order of a cut block is that
// of the full one.
TEST(Projection, StructuredSignsComeFromTheSeed) {
  const favor::Matrix a = favor::sample_projection(40, 16, Sampling::structured, 99);
  EXPECT_TRUE(a == favor::sample_projection(40, 16, Sampling::structured, 99));
  EXPECT_FALSE(a == favor::sample_projection(40, 16, Sampling::structured, 100));
  EXPECT_TRUE(a.topRows(5) == favor::sample_projection(5, 16, Sampling::structured, 99));
}

// structured, d not a power of two: each block is the first d rows and d columns of the p x p
// block sqrt(p) H D1 H D2 H D3 (p the next power of two), with no further scaling. Each entry has
// E[entry^2] = 1 (from the independence of D1, D2), so E|w|^2 = d; the norms vary. Over
// n = 4000 rows the mean of |w|^2 is checked against d within 4 standard errors (measured SE).
TEST(Projection, StructuredTruncatedBlocks) {
  for (Index d : {3, 5, 12}) {
    SCOPED_TRACE(testing::Message() << "d=" << d);
    Index p = 1;
    while (p < d) p *= 2;
    const Index m = 4000;
    const Index blocks = (m + d - 1) / d;
    const MatD w = ref::to_double(favor::sample_projection(m, d, Sampling::structured, 8));
    const MatD r = sorf_reference(p, blocks, 8);
    for (Index i = 0; i < m; ++i)
      ASSERT_LT((w.row(i) - r.block((i / d) * p + i % d, 0, 1, d)).cwiseAbs().maxCoeff(), 1e-6) << "row " << i;
    std::vector<double> sq(static_cast<std::size_t>(m));
    for (Index i = 0; i < m; ++i) sq[static_cast<std::size_t>(i)] = w.row(i).squaredNorm();
    const ref::MeanSe ms = ref::mean_se(sq);
    EXPECT_NEAR(ms.mean, static_cast<double>(d), 4 * ms.se) << "se " << ms.se;
    EXPECT_GT(ms.se, 0.0);
  }
}

}  // namespace
