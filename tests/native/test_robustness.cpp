// Regression tests for the bugs found by the fuzzer (tests/fuzz/) and the Node
// extremes tests (tests/node/robustness.test.mjs): each input below used to crash, return NaN, or return a wrong row.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <new>

#include <favor/favor.hpp>
#include <favor/kernels/vector_math.hpp>

namespace {

using favor::Matrix;

Matrix rows(std::initializer_list<std::initializer_list<float>> values) {
  Matrix m(static_cast<favor::Index>(values.size()), static_cast<favor::Index>(values.begin()->size()));
  favor::Index i = 0;
  for (const auto& row : values) {
    favor::Index j = 0;
    for (float x : row) m(i, j++) = x;
    ++i;
  }
  return m;
}

// Orthogonal sampling allocated its d x d block as a std::vector sized d * d: in wasm32 (32-bit
// Index) d = 65536 overflowed to 0 and the block was written out of bounds, killing the instance
// ("memory access out of bounds"). Blocks and W are Eigen matrices now: a size that cannot exist
// throws std::bad_alloc (turned into a RangeError in JS).
TEST(Robustness, HugeOrthogonalProjectionThrowsBadAlloc) {
  const favor::Index huge = favor::Index(1) << 20;
  EXPECT_THROW(favor::sample_projection(huge, huge, favor::Sampling::orthogonal, 0), std::bad_alloc);
}

// A block holds only the rows W uses (min(m, d) of d): 2 rows of d = 2^20 are 16 MiB of doubles
// and two Gram-Schmidt steps, where the whole d x d block would be 8 TiB. The rows are still
// orthogonal, each of norm sqrt(d) (orthogonal-fixed).
TEST(Robustness, OrthogonalSamplingBuildsOnlyTheRowsItUses) {
  const favor::Index d = favor::Index(1) << 20;
  const Matrix w = favor::sample_projection(2, d, favor::Sampling::orthogonal_fixed, 0);
  const Eigen::VectorXd a = w.row(0).cast<double>().transpose(), b = w.row(1).cast<double>().transpose();
  const double norm = std::sqrt(static_cast<double>(d));
  // float32 entries: each norm within ~1e-7 relative, the dot within ~1e-7 of |a||b| = d
  EXPECT_NEAR(a.norm() / norm, 1.0, 1e-5);
  EXPECT_NEAR(b.norm() / norm, 1.0, 1e-5);
  EXPECT_LT(std::abs(a.dot(b)) / static_cast<double>(d), 1e-5);
}

// Hard codebook attention: keys carried one-hot *values* with log 0 everywhere, so a query's row
// shift was taken over every codeword, including ones no key uses; exp of the assigned
// codeword's score relative to it underflowed and the row came out 0 (expected 1.5).
TEST(Robustness, HardCodebookUnusedCodewordDoesNotZeroTheRow) {
  const Matrix c = rows({{-10}, {10}}), k = rows({{-10}, {-9}}), v = rows({{1}, {2}});
  favor::CodebookOptions o;
  o.scale = 1.0;
  EXPECT_FLOAT_EQ(favor::codebook_attention(c, rows({{10}}), k, v, o)(0, 0), 1.5f);
  o.causal = true;
  const Matrix out = favor::codebook_attention(c, rows({{10}, {10}}), k, v, o);
  EXPECT_FLOAT_EQ(out(0, 0), 1.0f);
  EXPECT_FLOAT_EQ(out(1, 0), 1.5f);
}

// The double-precision fallback of the matrix form multiplied exp(log) by a value of 0 for
// codewords without keys: inf * 0 = NaN in the row.
TEST(Robustness, MatrixFallbackSkipsWeightlessTerms) {
  const Matrix a = favor::codebook_attention_matrix(rows({{0}, {453.125f}, {640.625f}}), rows({{0.03125f}, {2.375f}}), rows({{0}}));
  EXPECT_FLOAT_EQ(a(0, 0), 1.0f);
  EXPECT_FLOAT_EQ(a(1, 0), 1.0f);
}

// Explicit features of 1e-40: their products underflowed and the output was 0 instead of v.
TEST(Robustness, TinyExplicitFeatures) {
  EXPECT_FLOAT_EQ(favor::linear_attention(rows({{1e-40f}}), rows({{1e-40f}}), rows({{1.40625f}}))(0, 0), 1.40625f);
  // a key whose features are all 0 must not set the shift for the others (the row became 0)
  const Matrix out = favor::linear_attention(rows({{1.96875f}}), rows({{7.6e-36f}, {0}, {9.9e-36f}}),
                                             rows({{5e-22f}, {5e-22f}, {5e-22f}}));
  EXPECT_FLOAT_EQ(out(0, 0), 5e-22f);
}

// relu with epsilon 0 and a subnormal key: the float guard of the double fallback inflated the
// row's total to 1.2e-38 and the single weight came out 0.00115 instead of 1.
TEST(Robustness, ReluSubnormalKeyMatrixRowSumsToOne) {
  const Matrix w = rows({{2.48f}, {-0.79f}, {1.83f}, {0.05f}});
  const favor::FeatureMap map(favor::Kernel::relu, w, 0.0);
  EXPECT_FLOAT_EQ(favor::favor_attention_matrix(map, rows({{1}}), rows({{1.1479437e-41f}}))(0, 0), 1.0f);
}

// Keys whose squared norm overflows float32 got log -inf; the row of a 1 x 1 matrix came out 0.
// Such inputs are reported now instead.
TEST(Robustness, OverflowingSquaredNormIsReported) {
  favor::FeatureMapOptions o;
  o.dim = 1;
  o.features = 8;
  const favor::FeatureMap map(o);
  EXPECT_THROW(favor::favor_attention_matrix(map, rows({{0.09375f}}), rows({{-3.4e35f}})), favor::Error);
  EXPECT_THROW(favor::exact_attention(rows({{3e19f, 3e19f}}), rows({{3e19f, 3e19f}}), rows({{1}})), favor::Error);
}

// Soft assignment divided by the temperature before subtracting the row max: for T = 1e-40,
// 1/T overflowed float and the logs became NaN. It now tends to hard assignment as it should.
TEST(Robustness, SoftAssignmentWithTinyTemperatureEqualsHard) {
  const Matrix c = rows({{1}, {-1}}), q = rows({{1}, {2}}), k = rows({{1}, {-1}}), v = rows({{1}, {2}});
  favor::CodebookOptions soft;
  soft.assignment = favor::Assignment::soft;
  soft.temperature = 1e-40;
  favor::CodebookOptions hard;
  const Matrix a = favor::codebook_attention(c, q, k, v, soft), b = favor::codebook_attention(c, q, k, v, hard);
  for (favor::Index i = 0; i < a.size(); ++i) EXPECT_NEAR(a.data()[i], b.data()[i], 1e-6f);
}

// The vectorized exp clamped NaN to its lower bound and returned ~1e-38: an overflow upstream
// (all scores -inf, max - max = NaN) came out as a plausible number.
TEST(Robustness, VectorExpPropagatesNaN) {
  float x[5] = {std::numeric_limits<float>::quiet_NaN(), 2.0f, 1.0f, -std::numeric_limits<float>::infinity(), 0.0f};
  favor::vec::exp_shifted(x, 5, 2.0f);
  EXPECT_TRUE(std::isnan(x[0]));
  EXPECT_FLOAT_EQ(x[1], 1.0f);
  EXPECT_EQ(x[3], 0.0f);
  // scores that all overflow to -inf in a row are reported, not turned into a row of numbers
  favor::AttentionOptions o;
  o.scale = 1e38;
  EXPECT_THROW(favor::attention_matrix(rows({{10, 10}}), rows({{-10, -10}}), o), favor::Error);
}

// Log magnitudes ~1e21 (an explicit W of 1e19): the causal fallback took its scale from a float
// and its terms from doubles; their mismatch (~1e14 in the exponent) made the only visible
// weight exp(-5e14) = 0 and the row 0.
TEST(Robustness, CausalFallbackAtHugeLogMagnitudes) {
  Matrix w(4, 2);
  for (int r = 0; r < 4; ++r) w.row(r) << 0.0f, 1e19f;
  const favor::FeatureMap map(favor::Kernel::positive, w);
  favor::FavorOptions o;
  o.causal = true;
  o.chunk = 41;
  const Matrix v = Matrix::Constant(2, 2, -367.1875f);
  const Matrix out = favor::favor_attention(map, rows({{-1.46875f, 1.25f}, {-1.46875f, 1.25f}}),
                                            rows({{835.9375f, -867.1875f}, {500, 492.1875f}}), v, o);
  for (favor::Index i = 0; i < out.size(); ++i) EXPECT_FLOAT_EQ(out.data()[i], -367.1875f);
}

// kernel_estimate multiplied each row by one exp(row log): 0 * inf = NaN where keys of very
// different norms meet (here |y| = 500 next to |y| = 7.8, trigonometric features).
TEST(Robustness, KernelEstimateHasNoNaN) {
  favor::FeatureMapOptions o;
  o.dim = 1;
  o.features = 9;
  o.kernel = favor::Kernel::trigonometric;
  const favor::FeatureMap map(o);
  const favor::MatrixD est = favor::kernel_estimate(map, rows({{-7.7e-40f}, {0.5f}}), rows({{500}, {-7.8125f}}));
  for (favor::Index i = 0; i < est.size(); ++i) EXPECT_FALSE(std::isnan(est.data()[i])) << i;
  EXPECT_TRUE(std::isfinite(est(1, 1)));
}

}  // namespace
