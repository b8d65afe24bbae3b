// Self-checks of reference.hpp, independent of the library: if the reference formulas were
// wrong, every comparison against them would be meaningless.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "reference.hpp"

namespace {

using favor::Kernel;
using ref::Index;
using ref::MatD;

// With very many iid N(0,1) projections (m = 400000, in double) every softmax estimator's
// phi(x).phi(y) must approach exp(x.y). The Lemma 2 MSEs at |x|,|y| <= 0.6 are below ~3/m, so
// the standard deviation of the estimate is < 3e-3; the tolerance 1.5e-2 is > 5 sigma, yet a
// wrong sign or a wrong factor 2 in any formula moves the estimate by >= 10%.
TEST(Reference, SoftmaxEstimatorsConvergeToExpDot) {
  const Index d = 4, m = 400000;
  std::mt19937 gen(11);
  std::normal_distribution<double> n01;
  MatD w(m, d);
  for (Index r = 0; r < m; ++r)
    for (Index c = 0; c < d; ++c) w(r, c) = n01(gen);
  MatD x(2, d), y(2, d);
  x << 0.3, -0.2, 0.1, 0.4, -0.1, 0.25, 0.3, -0.2;
  y << 0.2, 0.35, -0.3, 0.1, 0.4, 0.1, -0.2, 0.3;
  MatD expected = (x * y.transpose()).array().exp().matrix();
  for (Kernel kernel : {Kernel::positive, Kernel::hyperbolic, Kernel::trigonometric,
                        Kernel::oprf}) {
    MatD est = ref::kernel_estimate(kernel, w, x, y);
    EXPECT_LT(ref::max_entry_rel(est, expected), 1.5e-2) << favor::to_string(kernel);
  }
}

// The OPRF coefficients satisfy their defining identities: B^2 = 1 - 4A, A < 0 (so < 1/8), and
// D^2 (1 - 4A)^(-d/2) = 1, which is what makes the estimator unbiased (the Gaussian integral of
// exp(2A|w|^2 + B w.(x+y)) is (1-4A)^(-d/2) exp(|x+y|^2/2)). Pure arithmetic: 1e-12.
TEST(Reference, OprfCoefficientIdentities) {
  for (double rho : {0.01, 0.5, 2.0, 17.0}) {
    for (Index d : {4, 16, 64}) {
      const ref::Oprf o = ref::oprf_coefficients(rho, d);
      EXPECT_LT(o.a, 0.0);
      EXPECT_NEAR(o.b * o.b, 1.0 - 4.0 * o.a, 1e-12);
      EXPECT_NEAR(2.0 * o.log_d - (d / 2.0) * std::log(1.0 - 4.0 * o.a), 0.0, 1e-12);
    }
  }
}

// Brute-force softmax: rows sum to 1, causal rows are zero above the diagonal, and a 2x2 case
// checked by hand: softmax([0.5*1, 0.5*(-1)]) = [e^.5, e^-.5] / (e^.5 + e^-.5).
TEST(Reference, SoftmaxHandCase) {
  MatD q(1, 1), k(2, 1);
  q << 1.0;
  k << 1.0, -1.0;
  MatD a = ref::softmax_matrix(q, k, 0.5, false);
  const double e = std::exp(0.5), f = std::exp(-0.5);
  EXPECT_NEAR(a(0, 0), e / (e + f), 1e-15);
  EXPECT_NEAR(a(0, 1), f / (e + f), 1e-15);
  MatD q2(3, 2), k2(3, 2);
  q2 << 1, 2, 3, 4, 5, 6;
  k2 << 0.1, 0.2, -0.3, 0.4, 0.5, -0.6;
  MatD c = ref::softmax_matrix(q2, k2, 0.7, true);
  EXPECT_EQ(c(0, 1), 0.0);
  EXPECT_EQ(c(0, 2), 0.0);
  EXPECT_EQ(c(1, 2), 0.0);
  EXPECT_DOUBLE_EQ(c(0, 0), 1.0);
  for (Index i = 0; i < 3; ++i) EXPECT_NEAR(c.row(i).sum(), 1.0, 1e-15);
}

// The log-domain A^ (used for huge inputs) equals the plain one where both are representable.
TEST(Reference, LogDomainMatrixMatchesPlain) {
  std::mt19937 gen(12);
  std::normal_distribution<double> n01;
  const Index d = 6, m = 10;
  MatD w(m, d), q(9, d), k(9, d);
  for (MatD* z : {&w, &q, &k})
    for (Index i = 0; i < z->rows(); ++i)
      for (Index j = 0; j < d; ++j) (*z)(i, j) = n01(gen) * (z == &w ? 1.0 : 0.6);
  for (Kernel kernel : {Kernel::positive, Kernel::hyperbolic, Kernel::oprf})
    for (bool causal : {false, true})
      EXPECT_LT(ref::max_rel(ref::favor_matrix_log_domain(kernel, w, q, k, 0.4, causal),
                             ref::favor_matrix(kernel, w, q, k, 0.4, causal)),
                1e-12)
          << favor::to_string(kernel) << " causal=" << causal;
}

}  // namespace
