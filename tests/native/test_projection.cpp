// Sampling of the projection W (docs/design.md §2): block orthogonality, row norms, and the
// distribution of iid entries. All statistics are computed in double from the float W.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

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
  for (Sampling s : {Sampling::iid, Sampling::orthogonal, Sampling::orthogonal_fixed})
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

// Marginally each row of `orthogonal` is N(0, I_d): entries have mean 0 and variance 1 (same
// statistics and tolerances as for iid below).
TEST(Projection, EntryStatistics) {
  const Index m = 1000, d = 64;  // n = 64000 entries
  for (Sampling s : {Sampling::iid, Sampling::orthogonal}) {
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

}  // namespace
