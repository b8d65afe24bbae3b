// Error measures (metrics.hpp, docs/design.md §10) against direct float64 computation
// (ref::compare) on the same float32 matrices.
//
// Tolerance 1e-5 relative: the inputs are exactly representable, so only the accumulation
// precision of the library matters; even float32 accumulation over the <= 2400 entries used here
// stays below ~1e-6 for these sums, and the approximations differ from the exact matrices by
// ~30% per entry so that the KL terms are O(1e-2) and no catastrophic cancellation can hide a
// wrong formula (wrong direction of the KL, a missing renormalization, a sum instead of a mean).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "reference.hpp"

namespace {

using ref::Index;
using ref::MatD;
using ref::MatF;

constexpr double kMetricTol = 1e-5;

void expect_rel(double got, double want, const char* what) {
  EXPECT_TRUE(std::isfinite(got)) << what;
  EXPECT_LE(std::abs(got - want), kMetricTol * std::abs(want)) << what << ": got " << got << " want "
                                                           << want;
}

// Softmax rows of random scores.
MatF stochastic(Index L, Index S, std::mt19937& gen, bool causal = false) {
  const MatD scores = ref::to_double(ref::normal_matrix(L, S, gen, 1.5));
  MatD a = MatD::Zero(L, S);
  for (Index i = 0; i < L; ++i) {
    const Index end = causal ? i + 1 : S;
    for (Index j = 0; j < end; ++j) a(i, j) = std::exp(scores(i, j));
    a.row(i) /= a.row(i).sum();
  }
  return a.cast<float>();
}

// exact * exp(0.3 N(0,1)) per entry, renormalized (zeros stay zeros).
MatF perturbed(const MatF& exact, std::mt19937& gen) {
  std::normal_distribution<double> n01;
  MatD a = ref::to_double(exact);
  for (Index i = 0; i < a.rows(); ++i) {
    for (Index j = 0; j < a.cols(); ++j) a(i, j) *= std::exp(0.3 * n01(gen));
    a.row(i) /= a.row(i).sum();
  }
  return a.cast<float>();
}

void check_against_reference(const MatF& exact, const MatF& approx, bool check_all = true) {
  const favor::MatrixErrors got = favor::compare(exact, approx);
  const ref::Errors want = ref::compare(ref::to_double(exact), ref::to_double(approx));
  if (check_all) {
    expect_rel(got.mse, want.mse, "mse");
    expect_rel(got.rel_frobenius, want.rel_frobenius, "rel_frobenius");
    expect_rel(got.max_abs, want.max_abs, "max_abs");
  }
  expect_rel(got.mean_row_kl, want.mean_row_kl, "mean_row_kl");
}

TEST(Metrics, PositiveStochasticMatrices) {
  std::mt19937 gen(4000);
  const MatF exact = stochastic(30, 40, gen);
  const MatF approx = perturbed(exact, gen);
  check_against_reference(exact, approx);
  // Hand-checkable magnitudes: ~30% log-normal noise gives a KL of order 0.3^2/2 per row.
  const favor::MatrixErrors e = favor::compare(exact, approx);
  EXPECT_GT(e.mean_row_kl, 0.01);
  EXPECT_LT(e.mean_row_kl, 0.2);
}

TEST(Metrics, CausalMatricesWithZeros) {
  std::mt19937 gen(4010);
  const MatF exact = stochastic(40, 40, gen, true);
  const MatF approx = perturbed(exact, gen);  // also zero above the diagonal
  check_against_reference(exact, approx);
}

TEST(Metrics, IdenticalMatrices) {
  std::mt19937 gen(4020);
  const MatF a = stochastic(20, 25, gen);
  const favor::MatrixErrors e = favor::compare(a, a);
  EXPECT_EQ(e.mse, 0.0);
  EXPECT_EQ(e.rel_frobenius, 0.0);
  EXPECT_EQ(e.max_abs, 0.0);
  // Zero up to float32 row sums differing from 1 (~1e-7).
  EXPECT_NEAR(e.mean_row_kl, 0.0, 1e-6);
}

// Hand-computed 1 x 2 case: exact [0.5, 0.5], approx [0.25, 0.75]:
// mse = (0.0625 + 0.0625) / 2; rel = sqrt(0.125) / sqrt(0.5) = 0.5; max = 0.25;
// KL = 0.5 log(0.5/0.25) + 0.5 log(0.5/0.75) = 0.5 log(4/3).
TEST(Metrics, HandCase) {
  MatF a(1, 2), b(1, 2);
  a << 0.5f, 0.5f;
  b << 0.25f, 0.75f;
  const favor::MatrixErrors e = favor::compare(a, b);
  EXPECT_NEAR(e.mse, 0.0625, 1e-12);
  EXPECT_NEAR(e.rel_frobenius, 0.5, 1e-12);
  EXPECT_NEAR(e.max_abs, 0.25, 1e-12);
  EXPECT_NEAR(e.mean_row_kl, 0.5 * std::log(4.0 / 3.0), 1e-7);
}

// A trigonometric-style approximation: rows still sum to 1 but contain negative entries and
// exact zeros. Documented KL treatment: entries <= 0 are replaced by kKlFloor = 1e-12 and the
// row renormalized before the KL; the result must be finite and equal that computation.
TEST(Metrics, TrigonometricNegativeEntriesKl) {
  EXPECT_EQ(favor::kKlFloor, 1e-12);
  std::mt19937 gen(4030);
  const Index L = 25, S = 30;
  const MatF exact = stochastic(L, S, gen);
  std::normal_distribution<double> n01;
  MatD approx = ref::to_double(exact);
  int negatives = 0;
  for (Index i = 0; i < L; ++i) {
    // Zero-sum signed noise of the size of the entries: many entries turn negative.
    Eigen::VectorXd noise(S);
    for (Index j = 0; j < S; ++j) noise(j) = n01(gen) * 1.5 / static_cast<double>(S);
    noise.array() -= noise.mean();
    approx.row(i) += noise.transpose();
    if (i % 3 == 0) approx(i, 1) = 0.0;  // an exact zero too
    for (Index j = 0; j < S; ++j) negatives += approx(i, j) < 0;
  }
  ASSERT_GT(negatives, 20);  // the case under test actually occurs
  const MatF approx_f = approx.cast<float>();
  check_against_reference(exact, approx_f);
  const favor::MatrixErrors got = favor::compare(exact, approx_f);
  ASSERT_TRUE(std::isfinite(got.mean_row_kl));
  // The floor matters: with a floor of 1e-6 the KL would be clearly different, so the check
  // above pins the documented constant and treatment.
  const ref::Errors other = ref::compare(ref::to_double(exact), ref::to_double(approx_f), 1e-6);
  EXPECT_GT(std::abs(got.mean_row_kl - other.mean_row_kl), 0.05 * other.mean_row_kl);
}

// Non-finite approximate entries are treated like non-positive ones for the KL.
TEST(Metrics, NonFiniteApproxEntriesKl) {
  std::mt19937 gen(4040);
  const MatF exact = stochastic(6, 10, gen);
  MatF approx = perturbed(exact, gen);
  approx(0, 3) = std::numeric_limits<float>::infinity();
  approx(2, 0) = std::numeric_limits<float>::quiet_NaN();
  approx(4, 9) = -std::numeric_limits<float>::infinity();
  const favor::MatrixErrors got = favor::compare(exact, approx);
  ASSERT_TRUE(std::isfinite(got.mean_row_kl));
  const ref::Errors want = ref::compare(ref::to_double(exact), ref::to_double(approx));
  EXPECT_LE(std::abs(got.mean_row_kl - want.mean_row_kl), kMetricTol * want.mean_row_kl);
}

TEST(Metrics, OutputRelativeError) {
  std::mt19937 gen(4050);
  const MatF exact = ref::normal_matrix(50, 12, gen);
  const MatF approx = exact + ref::normal_matrix(50, 12, gen, 0.1);
  expect_rel(favor::output_relative_error(exact, approx),
             ref::output_relative_error(ref::to_double(exact), ref::to_double(approx)),
             "output_relative_error");
  EXPECT_EQ(favor::output_relative_error(exact, exact), 0.0);
}

// Tensor overload: rows of all heads pooled, i.e. the same as comparing the stacked matrices.
TEST(Metrics, TensorPoolsRowsOfAllHeads) {
  std::mt19937 gen(4060);
  const Index B = 2, H = 3, L = 10, S = 12;
  const MatF exact = stochastic(B * H * L, S, gen);
  const MatF approx = perturbed(exact, gen);
  const favor::MatrixErrors got =
      favor::compare(favor::ConstTensorView{exact.data(), {B, H, L, S}},
                     favor::ConstTensorView{approx.data(), {B, H, L, S}});
  const ref::Errors want = ref::compare(ref::to_double(exact), ref::to_double(approx));
  expect_rel(got.mse, want.mse, "mse");
  expect_rel(got.rel_frobenius, want.rel_frobenius, "rel_frobenius");
  expect_rel(got.max_abs, want.max_abs, "max_abs");
  expect_rel(got.mean_row_kl, want.mean_row_kl, "mean_row_kl");
}

}  // namespace
