#include "favor/features/symmetric_eigen.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

namespace favor {

namespace {

// sqrt(x^2 + z^2) without overflow, from IEEE operations only (std::hypot differs between C
// libraries in its last bit).
double norm2(double x, double z) {
  const double top = std::max(std::abs(x), std::abs(z));
  if (top == 0.0) return 0.0;
  const double a = x / top, b = z / top;
  return top * std::sqrt(a * a + b * b);
}

// The plane rotation [c s; -s c] on indices (k, k + 1) of the columns of q, over rows [0, n).
void rotate_columns(MatrixD& q, Index k, double c, double s) {
  for (Index i = 0; i < q.rows(); ++i) {
    const double a = q(i, k), b = q(i, k + 1);
    q(i, k) = c * a + s * b;
    q(i, k + 1) = -s * a + c * b;
  }
}

// a = Q T Q^T with T tridiagonal (left in a), by Householder reflections H = I - 2 v v^T that
// zero each column below its subdiagonal; Q accumulates them.
void tridiagonalize(MatrixD& a, MatrixD& q) {
  const Index n = a.rows();
  std::vector<double> v(static_cast<std::size_t>(n)), p(static_cast<std::size_t>(n));
  for (Index k = 0; k + 2 < n; ++k) {
    const Index m = n - k - 1;  // the entries below the diagonal in column k
    double sq = 0.0;
    for (Index i = 0; i < m; ++i) sq += a(k + 1 + i, k) * a(k + 1 + i, k);
    if (sq == 0.0) continue;
    const double alpha = a(k + 1, k) >= 0.0 ? -std::sqrt(sq) : std::sqrt(sq);
    double vsq = 0.0;
    for (Index i = 0; i < m; ++i) {
      v[static_cast<std::size_t>(i)] = a(k + 1 + i, k) - (i == 0 ? alpha : 0.0);
      vsq += v[static_cast<std::size_t>(i)] * v[static_cast<std::size_t>(i)];
    }
    if (vsq == 0.0) continue;
    const double inv = 1.0 / std::sqrt(vsq);
    for (Index i = 0; i < m; ++i) v[static_cast<std::size_t>(i)] *= inv;
    // H A H = A - 2 (v w^T + w v^T) on the trailing block, w = A v - (v^T A v) v.
    double vp = 0.0;
    for (Index i = 0; i < m; ++i) {
      double sum = 0.0;
      for (Index j = 0; j < m; ++j) sum += a(k + 1 + i, k + 1 + j) * v[static_cast<std::size_t>(j)];
      p[static_cast<std::size_t>(i)] = sum;
      vp += v[static_cast<std::size_t>(i)] * sum;
    }
    for (Index i = 0; i < m; ++i) p[static_cast<std::size_t>(i)] -= vp * v[static_cast<std::size_t>(i)];
    for (Index i = 0; i < m; ++i)
      for (Index j = 0; j < m; ++j)
        a(k + 1 + i, k + 1 + j) -= 2.0 * (v[static_cast<std::size_t>(i)] * p[static_cast<std::size_t>(j)] +
                                          p[static_cast<std::size_t>(i)] * v[static_cast<std::size_t>(j)]);
    a(k + 1, k) = a(k, k + 1) = alpha;
    for (Index i = 1; i < m; ++i) a(k + 1 + i, k) = a(k, k + 1 + i) = 0.0;
    for (Index r = 0; r < n; ++r) {
      double w = 0.0;
      for (Index j = 0; j < m; ++j) w += q(r, k + 1 + j) * v[static_cast<std::size_t>(j)];
      for (Index j = 0; j < m; ++j) q(r, k + 1 + j) -= 2.0 * w * v[static_cast<std::size_t>(j)];
    }
  }
}

}  // namespace

SymmetricEigen symmetric_eigen(const MatrixD& input) {
  const Index n = input.rows();
  MatrixD t(n, n);
  for (Index p = 0; p < n; ++p)
    for (Index q = p; q < n; ++q) t(p, q) = t(q, p) = input(p, q);
  SymmetricEigen e;
  e.vectors = MatrixD::Identity(n, n);
  tridiagonalize(t, e.vectors);
  // Implicit QR steps with Wilkinson's shift on the unreduced trailing block of T, the bulge
  // chased down by plane rotations that also turn the eigenvectors. Every rotation is
  // orthogonal to rounding, so the vectors are orthonormal however many steps ran; the cap on
  // steps only guards against a block that would not converge.
  constexpr double kEps = 2.220446049250313e-16;
  Index steps = 0;
  for (Index hi = n - 1; hi > 0 && steps < 64 * n;) {
    for (Index i = 0; i < hi; ++i)
      if (std::abs(t(i + 1, i)) <= kEps * (std::abs(t(i, i)) + std::abs(t(i + 1, i + 1)))) t(i + 1, i) = t(i, i + 1) = 0.0;
    if (t(hi, hi - 1) == 0.0) {
      --hi;
      continue;
    }
    Index lo = hi - 1;
    while (lo > 0 && t(lo, lo - 1) != 0.0) --lo;
    ++steps;
    const double a = t(hi - 1, hi - 1), b = t(hi, hi - 1), c = t(hi, hi);
    const double delta = 0.5 * (a - c);
    const double denominator = delta + (delta >= 0.0 ? 1.0 : -1.0) * norm2(delta, b);
    const double mu = denominator == 0.0 ? c : c - b * (b / denominator);
    for (Index k = lo; k < hi; ++k) {
      const double x = k == lo ? t(lo, lo) - mu : t(k, k - 1);
      const double z = k == lo ? t(lo + 1, lo) : t(k + 1, k - 1);
      const double r = norm2(x, z);
      if (r == 0.0) continue;
      const double cs = x / r, sn = z / r;
      const Index j0 = std::max(lo, k - 1), j1 = std::min(hi, k + 2);
      for (Index j = j0; j <= j1; ++j) {  // rows k, k + 1
        const double u = t(k, j), w = t(k + 1, j);
        t(k, j) = cs * u + sn * w;
        t(k + 1, j) = -sn * u + cs * w;
      }
      for (Index i = j0; i <= j1; ++i) {  // columns k, k + 1
        const double u = t(i, k), w = t(i, k + 1);
        t(i, k) = cs * u + sn * w;
        t(i, k + 1) = -sn * u + cs * w;
      }
      if (k > lo) t(k + 1, k - 1) = t(k - 1, k + 1) = 0.0;  // the bulge, chased on
      rotate_columns(e.vectors, k, cs, sn);
    }
  }
  e.values.resize(n);
  for (Index p = 0; p < n; ++p) e.values(p) = t(p, p);
  return e;
}

}  // namespace favor
