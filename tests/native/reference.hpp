// Independent float64 reference implementations for the native tests, written directly from the
// formulas of docs/design.md §1–§5 and §10. Nothing here calls the library's internals: tests take
// the projection W from the library (or make their own) and evaluate every formula here, in
// double, without any numerical stabilization tricks (inputs in the tests are kept small enough
// that plain double arithmetic is exact to ~1e-15 relative).
#pragma once

#include <Eigen/Core>
#include <Eigen/Dense>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "favor/favor.hpp"

namespace ref {

using Index = Eigen::Index;
using MatD = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using VecD = Eigen::VectorXd;
using MatF = favor::Matrix;

// ---------------------------------------------------------------------------------------------
// Test inputs (std::mt19937 with fixed seeds).

inline MatF normal_matrix(Index rows, Index cols, std::mt19937& gen, double stddev = 1.0) {
  std::normal_distribution<double> dist(0.0, stddev);
  MatF m(rows, cols);
  for (Index i = 0; i < rows; ++i)
    for (Index j = 0; j < cols; ++j) m(i, j) = static_cast<float>(dist(gen));
  return m;
}

inline MatF uniform_matrix(Index rows, Index cols, std::mt19937& gen, double lo, double hi) {
  std::uniform_real_distribution<double> dist(lo, hi);
  MatF m(rows, cols);
  for (Index i = 0; i < rows; ++i)
    for (Index j = 0; j < cols; ++j) m(i, j) = static_cast<float>(dist(gen));
  return m;
}

inline MatD to_double(const MatF& m) { return m.cast<double>(); }

inline double default_scale(Index d) { return 1.0 / std::sqrt(static_cast<double>(d)); }

// ---------------------------------------------------------------------------------------------
// Comparisons. Both return +inf if `got` has a non-finite entry, so a NaN can never pass.

inline bool all_finite(const MatD& m) {
  for (Index i = 0; i < m.rows(); ++i)
    for (Index j = 0; j < m.cols(); ++j)
      if (!std::isfinite(m(i, j))) return false;
  return true;
}

// |got - ref|_F / |ref|_F
inline double rel_frobenius(const MatD& got, const MatD& expected) {
  if (got.rows() != expected.rows() || got.cols() != expected.cols() || !all_finite(got))
    return std::numeric_limits<double>::infinity();
  const double denom = expected.norm();
  return denom > 0 ? (got - expected).norm() / denom : (got - expected).norm();
}

// max_ij |got - ref| / max_ij |ref|  (per entry, relative to the largest reference entry)
inline double max_rel(const MatD& got, const MatD& expected) {
  if (got.rows() != expected.rows() || got.cols() != expected.cols() || !all_finite(got))
    return std::numeric_limits<double>::infinity();
  if (got.size() == 0) return 0.0;
  const double denom = expected.cwiseAbs().maxCoeff();
  const double diff = (got - expected).cwiseAbs().maxCoeff();
  return denom > 0 ? diff / denom : diff;
}

// max_ij |got - ref| / |ref|  (every entry relative to itself; for strictly positive refs)
inline double max_entry_rel(const MatD& got, const MatD& expected) {
  if (got.rows() != expected.rows() || got.cols() != expected.cols() || !all_finite(got))
    return std::numeric_limits<double>::infinity();
  double worst = 0.0;
  for (Index i = 0; i < got.rows(); ++i)
    for (Index j = 0; j < got.cols(); ++j) {
      const double e = std::abs(got(i, j) - expected(i, j)) / std::abs(expected(i, j));
      if (!(e <= worst)) worst = e;  // also catches NaN from 0/0
    }
  return worst;
}

// ---------------------------------------------------------------------------------------------
// Exact softmax attention, brute force (docs/design.md §1).

inline MatD softmax_matrix(const MatD& q, const MatD& k, double scale, bool causal) {
  const Index L = q.rows(), S = k.rows();
  MatD a = MatD::Zero(L, S);
  for (Index i = 0; i < L; ++i) {
    const Index end = causal ? i + 1 : S;
    double mx = -std::numeric_limits<double>::infinity();
    for (Index j = 0; j < end; ++j) {
      a(i, j) = scale * q.row(i).dot(k.row(j));
      mx = std::max(mx, a(i, j));
    }
    double sum = 0.0;
    for (Index j = 0; j < end; ++j) {
      a(i, j) = std::exp(a(i, j) - mx);
      sum += a(i, j);
    }
    for (Index j = 0; j < end; ++j) a(i, j) /= sum;
  }
  return a;
}

inline MatD softmax_output(const MatD& q, const MatD& k, const MatD& v, double scale,
                           bool causal) {
  return softmax_matrix(q, k, scale, causal) * v;
}

// ---------------------------------------------------------------------------------------------
// Feature maps phi (docs/design.md §3), x already scaled, W is m x d.

struct Oprf {
  double a = 0.0;
  double b = 1.0;
  double log_d = 0.0;  // log D
};

// rho = mean over all pairs (i, j) of |x_i + y_j|^2, by brute force.
inline double oprf_rho(const MatD& x, const MatD& y) {
  double sum = 0.0;
  for (Index i = 0; i < x.rows(); ++i)
    for (Index j = 0; j < y.rows(); ++j) sum += (x.row(i) + y.row(j)).squaredNorm();
  return sum / (static_cast<double>(x.rows()) * static_cast<double>(y.rows()));
}

// phi = rho / d; A* = (1 - 2phi - sqrt((2phi+1)^2 + 8phi)) / 16; B = sqrt(1 - 4A);
// D = (1 - 4A)^(d/4).
inline Oprf oprf_coefficients(double rho, Index d) {
  const double p = rho / static_cast<double>(d);
  Oprf o;
  o.a = (1.0 - 2.0 * p - std::sqrt((2.0 * p + 1.0) * (2.0 * p + 1.0) + 8.0 * p)) / 16.0;
  o.b = std::sqrt(1.0 - 4.0 * o.a);
  o.log_d = static_cast<double>(d) / 4.0 * std::log(1.0 - 4.0 * o.a);
  return o;
}

inline Index num_features(favor::Kernel kernel, Index m) {
  return (kernel == favor::Kernel::hyperbolic || kernel == favor::Kernel::trigonometric) ? 2 * m
                                                                                         : m;
}

// phi(x) for each row of x (rows x M), straight from the docs/design.md §3 table.
inline MatD phi(favor::Kernel kernel, const MatD& w, const MatD& x, double epsilon = 1e-3,
                const Oprf& oprf = Oprf{}) {
  const Index m = w.rows(), n = x.rows();
  const double md = static_cast<double>(m);
  const MatD wx = x * w.transpose();  // n x m, entry (i, r) = w_r . x_i
  MatD out(n, num_features(kernel, m));
  for (Index i = 0; i < n; ++i) {
    const double sq = x.row(i).squaredNorm();
    for (Index r = 0; r < m; ++r) {
      const double t = wx(i, r);
      switch (kernel) {
        case favor::Kernel::positive:
          out(i, r) = std::exp(t - sq / 2.0) / std::sqrt(md);
          break;
        case favor::Kernel::hyperbolic:
          out(i, r) = std::exp(-sq / 2.0) / std::sqrt(2.0 * md) * std::exp(t);
          out(i, m + r) = std::exp(-sq / 2.0) / std::sqrt(2.0 * md) * std::exp(-t);
          break;
        case favor::Kernel::trigonometric:
          out(i, r) = std::exp(sq / 2.0) / std::sqrt(md) * std::cos(t);
          out(i, m + r) = std::exp(sq / 2.0) / std::sqrt(md) * std::sin(t);
          break;
        case favor::Kernel::relu:
          out(i, r) = std::max(t, 0.0) + epsilon;
          break;
        case favor::Kernel::oprf:
          out(i, r) = std::exp(oprf.log_d + oprf.a * w.row(r).squaredNorm() + oprf.b * t -
                               sq / 2.0) /
                      std::sqrt(md);
          break;
        case favor::Kernel::sderf:
        case favor::Kernel::aderf:  // parameters fitted to the data: test_dense_exponential.cpp's reference
          throw std::invalid_argument("phi: no fixed-formula reference for the dense-exponential kernels");
      }
    }
  }
  return out;
}

// phi(x) . phi(y) for all pairs; OPRF coefficients from rho over all pairs of (x, y).
inline MatD kernel_estimate(favor::Kernel kernel, const MatD& w, const MatD& x, const MatD& y,
                            double epsilon = 1e-3) {
  const Oprf o = kernel == favor::Kernel::oprf ? oprf_coefficients(oprf_rho(x, y), x.cols())
                                                : Oprf{};
  return phi(kernel, w, x, epsilon, o) * phi(kernel, w, y, epsilon, o).transpose();
}

// ---------------------------------------------------------------------------------------------
// FAVOR attention (docs/design.md §5): inputs unscaled, x~ = x sqrt(scale).

// A^ = diag(Q'K'^T 1)^-1 Q'K'^T, masked (j <= i) when causal.
inline MatD favor_matrix(favor::Kernel kernel, const MatD& w, const MatD& q, const MatD& k,
                         double scale, bool causal, double epsilon = 1e-3) {
  const MatD qs = q * std::sqrt(scale), ks = k * std::sqrt(scale);
  MatD a = kernel_estimate(kernel, w, qs, ks, epsilon);
  for (Index i = 0; i < a.rows(); ++i) {
    if (causal)
      for (Index j = i + 1; j < a.cols(); ++j) a(i, j) = 0.0;
    a.row(i) /= a.row(i).sum();
  }
  return a;
}

// D^-1 (Q'K'^T) V (masked when causal).
inline MatD favor_output(favor::Kernel kernel, const MatD& w, const MatD& q, const MatD& k,
                         const MatD& v, double scale, bool causal, double epsilon = 1e-3) {
  return favor_matrix(kernel, w, q, k, scale, causal, epsilon) * v;
}

// The same A^ in the log domain, for inputs so large that phi itself under/overflows double
// (positive-valued kernels only: positive, hyperbolic, oprf). log phi_r(x) is taken straight from
// the section 4 table, log(phi(x_i).phi(y_j)) = logsumexp_r(log phi_r(x_i) + log phi_r(y_j)),
// and each row of A^ is a softmax over j of those logs (masked when causal).
inline MatD log_phi(favor::Kernel kernel, const MatD& w, const MatD& x, const Oprf& oprf) {
  const Index m = w.rows();
  const double md = static_cast<double>(m);
  const MatD wx = x * w.transpose();
  MatD out(x.rows(), num_features(kernel, m));
  for (Index i = 0; i < x.rows(); ++i) {
    const double sq = x.row(i).squaredNorm();
    for (Index r = 0; r < m; ++r) {
      const double t = wx(i, r);
      switch (kernel) {
        case favor::Kernel::positive:
          out(i, r) = t - sq / 2.0 - 0.5 * std::log(md);
          break;
        case favor::Kernel::hyperbolic:
          out(i, r) = t - sq / 2.0 - 0.5 * std::log(2.0 * md);
          out(i, m + r) = -t - sq / 2.0 - 0.5 * std::log(2.0 * md);
          break;
        case favor::Kernel::oprf:
          out(i, r) = oprf.log_d + oprf.a * w.row(r).squaredNorm() + oprf.b * t - sq / 2.0 -
                      0.5 * std::log(md);
          break;
        default:
          out(i, r) = std::numeric_limits<double>::quiet_NaN();  // not positive-valued
      }
    }
  }
  return out;
}

inline MatD favor_matrix_log_domain(favor::Kernel kernel, const MatD& w, const MatD& q,
                                    const MatD& k, double scale, bool causal) {
  const MatD qs = q * std::sqrt(scale), ks = k * std::sqrt(scale);
  const Oprf o = kernel == favor::Kernel::oprf ? oprf_coefficients(oprf_rho(qs, ks), q.cols())
                                                : Oprf{};
  const MatD lq = log_phi(kernel, w, qs, o), lk = log_phi(kernel, w, ks, o);
  const Index L = q.rows(), S = k.rows(), M = lq.cols();
  MatD a = MatD::Zero(L, S);
  for (Index i = 0; i < L; ++i) {
    const Index end = causal ? i + 1 : S;
    VecD logk(end);
    for (Index j = 0; j < end; ++j) {
      double mx = -std::numeric_limits<double>::infinity();
      for (Index r = 0; r < M; ++r) mx = std::max(mx, lq(i, r) + lk(j, r));
      double s = 0.0;
      for (Index r = 0; r < M; ++r) s += std::exp(lq(i, r) + lk(j, r) - mx);
      logk(j) = mx + std::log(s);
    }
    const double mx = logk.maxCoeff();
    double total = 0.0;
    for (Index j = 0; j < end; ++j) total += (a(i, j) = std::exp(logk(j) - mx));
    for (Index j = 0; j < end; ++j) a(i, j) /= total;
  }
  return a;
}

// Linear attention from explicit features: out_i = sum_j (qf_i.kf_j) v_j / sum_j (qf_i.kf_j),
// j <= i when causal.
inline MatD linear_output(const MatD& qf, const MatD& kf, const MatD& v, bool causal) {
  MatD a = qf * kf.transpose();
  for (Index i = 0; i < a.rows(); ++i) {
    if (causal)
      for (Index j = i + 1; j < a.cols(); ++j) a(i, j) = 0.0;
    a.row(i) /= a.row(i).sum();
  }
  return a * v;
}

// ---------------------------------------------------------------------------------------------
// Error measures (docs/design.md §10, conventions of metrics.hpp).

struct Errors {
  double mse = 0.0;
  double rel_frobenius = 0.0;
  double max_abs = 0.0;
  double mean_row_kl = 0.0;
};

inline Errors compare(const MatD& exact, const MatD& approx, double kl_floor = 1e-12) {
  Errors e;
  const MatD diff = exact - approx;
  e.mse = diff.squaredNorm() / static_cast<double>(diff.size());
  e.rel_frobenius = diff.norm() / exact.norm();
  e.max_abs = diff.cwiseAbs().maxCoeff();
  double kl_sum = 0.0;
  for (Index i = 0; i < exact.rows(); ++i) {
    // Both rows normalized to sum 1; approx entries <= 0 or not finite floored first.
    VecD row = approx.row(i).transpose();
    for (Index j = 0; j < row.size(); ++j)
      if (!(std::isfinite(row(j)) && row(j) > 0.0)) row(j) = kl_floor;
    row /= row.sum();
    VecD p = exact.row(i).transpose().cwiseMax(0.0);
    if (p.sum() > 0.0) p /= p.sum();
    double kl = 0.0;
    for (Index j = 0; j < row.size(); ++j)
      if (p(j) > 0.0) kl += p(j) * std::log(p(j) / row(j));
    kl_sum += kl;
  }
  e.mean_row_kl = kl_sum / static_cast<double>(exact.rows());
  return e;
}

inline double output_relative_error(const MatD& exact, const MatD& approx) {
  return (exact - approx).norm() / exact.norm();
}

// ---------------------------------------------------------------------------------------------
// Tensor helpers: head h of a row-major [..., rows, cols] buffer.

inline MatF head(const std::vector<float>& data, Index h, Index rows, Index cols) {
  MatF m(rows, cols);
  for (Index i = 0; i < rows; ++i)
    for (Index j = 0; j < cols; ++j)
      m(i, j) = data[static_cast<std::size_t>(h * rows * cols + i * cols + j)];
  return m;
}

inline std::vector<float> normal_buffer(std::size_t n, std::mt19937& gen, double stddev = 1.0) {
  std::normal_distribution<double> dist(0.0, stddev);
  std::vector<float> out(n);
  for (auto& x : out) x = static_cast<float>(dist(gen));
  return out;
}

// Monte-Carlo summary: mean and standard error of the mean.
struct MeanSe {
  double mean = 0.0;
  double se = 0.0;
};

inline MeanSe mean_se(const std::vector<double>& xs) {
  const double n = static_cast<double>(xs.size());
  double mean = 0.0;
  for (double x : xs) mean += x;
  mean /= n;
  double var = 0.0;
  for (double x : xs) var += (x - mean) * (x - mean);
  var /= (n - 1.0);
  return {mean, std::sqrt(var / n)};
}

}  // namespace ref
