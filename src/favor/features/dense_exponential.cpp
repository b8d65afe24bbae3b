// FAVOR#'s variance-optimal dense-exponential parameters (docs/design.md §3).
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "favor/error.hpp"
#include "favor/feature_map.hpp"
#include "favor/features/symmetric_eigen.hpp"
#include "favor/kernels/gemm.hpp"
#include "favor/features/row_blocks.hpp"

namespace favor {

namespace {

// Means and (uncentred) second moments of the scaled rows, from blocks of rows in parallel
// (row_blocks.hpp): a block's sum of x x^T is the lower triangle of a GEMM in float (x^T times x,
// summed over the block's rows in order: the same bits in the SIMD and scalar builds), and the
// blocks' sums are added in double. Float rounding moves the parameters, not the estimator's
// unbiasedness.
struct Moments {
  VectorD mean;
  MatrixD second;  // mean of x x^T
};

Moments moments(ConstMatrixRef x, double scale) {
  const Index n = x.rows(), d = x.cols();
  Moments m;
  m.mean = VectorD::Zero(d);
  m.second = MatrixD::Zero(d, d);
  if (n == 0) return m;
  struct Part {
    VectorD sum;
    Matrix product;  // lower triangle
  };
  const double work = 0.5 * static_cast<double>(n) * static_cast<double>(d) * static_cast<double>(d);
  const std::vector<Part> parts = over_row_blocks(n, work, [&](Index row0, Index rows) {
    Part part{VectorD::Zero(d), Matrix(d, d)};
    for (Index i = row0; i < row0 + rows; ++i)
      for (Index p = 0; p < d; ++p) part.sum(p) += x(i, p);
    const Matrix xt = x.middleRows(row0, rows).transpose();
    FloatBuffer scratch;
    gemm::gemm_nt_lower(d, d, rows, xt.data(), rows, xt.data(), rows, part.product.data(), d, scratch);
    return part;
  });
  for (const Part& part : parts) {
    m.mean += part.sum;
    for (Index q = 0; q < d; ++q)
      for (Index p = 0; p <= q; ++p) m.second(p, q) += static_cast<double>(part.product(q, p));
  }
  const double inv = 1.0 / static_cast<double>(n);
  for (Index p = 0; p < d; ++p) {
    m.mean(p) *= std::sqrt(scale) * inv;
    for (Index q = p; q < d; ++q) m.second(p, q) = m.second(q, p) = m.second(p, q) * scale * inv;
  }
  return m;
}

double trace(const MatrixD& a) {
  double t = 0.0;
  for (Index p = 0; p < a.rows(); ++p) t += a(p, p);
  return t;
}

// c = a * b, scalar loops in a fixed order.
MatrixD product(const MatrixD& a, const MatrixD& b) {
  MatrixD c = MatrixD::Zero(a.rows(), b.cols());
  for (Index i = 0; i < a.rows(); ++i)
    for (Index k = 0; k < a.cols(); ++k) {
      const double aik = a(i, k);
      for (Index j = 0; j < b.cols(); ++j) c(i, j) += aik * b(k, j);
    }
  return c;
}

// V diag(f(values)) V^T.
template <class F>
MatrixD spectral(const SymmetricEigen& e, F f) {
  const Index d = e.values.size();
  MatrixD scaled(d, d);
  for (Index p = 0; p < d; ++p)
    for (Index k = 0; k < d; ++k) scaled(p, k) = e.vectors(p, k) * f(e.values(k));
  return product(scaled, e.vectors.transpose());
}

// The eigendecomposition of a positive definite matrix with its spectrum kept >= floor (against
// rounding below it).
SymmetricEigen at_least(const MatrixD& moment, double floor) {
  SymmetricEigen e = symmetric_eigen(moment);
  for (Index k = 0; k < e.values.size(); ++k) e.values(k) = std::max(e.values(k), floor);
  return e;
}

DenseExponentialParameters symmetric(const Moments& x, const Moments& y) {
  const Index d = x.mean.size();
  // mean over pairs of (x + y)(x + y)^T
  MatrixD both(d, d);
  for (Index p = 0; p < d; ++p)
    for (Index q = 0; q < d; ++q)
      both(p, q) = x.second(p, q) + y.second(p, q) + x.mean(p) * y.mean(q) + y.mean(p) * x.mean(q);
  const SymmetricEigen e = symmetric_eigen(both);
  DenseExponentialParameters out;
  out.query_transform = e.vectors.transpose();
  out.key_transform = out.query_transform;
  out.a.resize(d);
  for (Index k = 0; k < d; ++k) {
    // Each eigen-direction is OPRF's problem in one dimension.
    const OprfCoefficients c = oprf_coefficients(std::max(0.0, e.values(k)), 1);
    out.a(k) = c.a;
    out.log_d += c.log_d;
  }
  return out;
}

DenseExponentialParameters asymmetric(const Moments& x, const Moments& y) {
  const Index d = x.mean.size();
  // Both moments get the same ridge delta I, 1e-6 of their mean eigenvalue (and 1e-30, for
  // all-zero inputs): Psi then exists for rank-deficient inputs (L < d, zero rows), and its
  // condition stays within ~(1e6)^(1/4) where one side's moment vanishes, instead of following
  // the ratio of the two. Any invertible Psi is unbiased; the ridge only moves the variance along
  // directions the inputs hardly use.
  const double delta = 1e-6 * std::max(0.0, trace(x.second) + trace(y.second)) / (2.0 * static_cast<double>(d)) + 1e-30;
  MatrixD mx = x.second, my = y.second;
  for (Index k = 0; k < d; ++k) mx(k, k) += delta, my(k, k) += delta;
  const SymmetricEigen ex = at_least(mx, delta);
  const MatrixD root_x = spectral(ex, [](double v) { return std::sqrt(v); });
  const MatrixD inv_root_x = spectral(ex, [](double v) { return 1.0 / std::sqrt(v); });
  // P = Mx^1/2 My Mx^1/2; Psi = P^1/4 Mx^-1/2 gives Psi Mx Psi^T = Psi^-T My Psi^-1 = P^1/2.
  const SymmetricEigen ep = at_least(product(product(root_x, my), root_x), delta * delta);
  const MatrixD psi = product(spectral(ep, [](double v) { return std::sqrt(std::sqrt(v)); }), inv_root_x);
  const MatrixD psi_inv_t = product(spectral(ep, [](double v) { return 1.0 / std::sqrt(std::sqrt(v)); }), root_x);
  // OPRF's rho of the balanced rows Psi x and Psi^-T y: tr(Psi Mx Psi^T) + tr(Psi^-T My Psi^-1)
  // + 2 mean(x).mean(y), from the moments as they are (without the ridge).
  const double rho = trace(product(product(psi, x.second), psi.transpose())) +
                     trace(product(product(psi_inv_t, y.second), psi_inv_t.transpose())) + 2.0 * x.mean.dot(y.mean);
  const OprfCoefficients c = oprf_coefficients(std::max(0.0, rho), d);
  DenseExponentialParameters out;
  out.query_transform = psi;
  out.key_transform = psi_inv_t;
  out.a = VectorD::Constant(d, c.a);
  out.log_d = c.log_d;
  return out;
}

}  // namespace

DenseExponentialParameters dense_exponential_parameters(Kernel kernel, ConstMatrixRef x, ConstMatrixRef y,
                                                        double scale) {
  if (kernel != Kernel::sderf && kernel != Kernel::aderf)
    throw_range("kernel", std::string("dense-exponential parameters are for 'sderf' and 'aderf', got '") +
                              to_string(kernel) + "'");
  if (x.cols() != y.cols())
    throw_range("k", "expected " + std::to_string(x.cols()) + " columns (the queries' d), got " +
                         std::to_string(y.cols()));
  if (x.cols() > kMaxDenseExponentialDim)
    throw_range("dim", std::string("the '") + to_string(kernel) + "' kernel takes d <= " +
                           std::to_string(kMaxDenseExponentialDim) + ", got " + std::to_string(x.cols()));
  if (!(std::isfinite(scale) && scale > 0.0))
    throw_range("scale", "expected a finite number > 0, got " + std::to_string(scale));
  const Moments mx = moments(x, scale), my = moments(y, scale);
  if (!mx.second.allFinite() || !my.second.allFinite())
    throw_range("q, k", "not finite or too large for the dense-exponential parameters (a second moment overflows)");
  return kernel == Kernel::sderf ? symmetric(mx, my) : asymmetric(mx, my);
}

}  // namespace favor
