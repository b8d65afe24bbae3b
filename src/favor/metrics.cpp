#include "favor/metrics.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "favor/error.hpp"

namespace favor {

namespace {
double relative(double diff_sq, double ref_sq) {
  if (ref_sq > 0.0) return std::sqrt(diff_sq / ref_sq);
  return diff_sq == 0.0 ? 0.0 : std::numeric_limits<double>::infinity();
}

void check_same_shape(ConstMatrixRef exact, ConstMatrixRef approx) {
  if (exact.rows() != approx.rows() || exact.cols() != approx.cols() || exact.size() == 0)
    throw_range("approx", "expected the non-empty shape of exact [" + std::to_string(exact.rows()) + ", " +
                              std::to_string(exact.cols()) + "], got [" + std::to_string(approx.rows()) +
                              ", " + std::to_string(approx.cols()) + "]");
}
}  // namespace

MatrixErrors compare(ConstMatrixRef exact, ConstMatrixRef approx) {
  check_same_shape(exact, approx);
  MatrixErrors e;
  double diff_sq = 0.0, ref_sq = 0.0, kl_sum = 0.0;
  VectorD q(exact.cols());
  for (Index i = 0; i < exact.rows(); ++i) {
    double q_total = 0.0, p_total = 0.0;
    for (Index j = 0; j < exact.cols(); ++j) {
      const double a = exact(i, j), b = approx(i, j);
      const double d = a - b;
      diff_sq += d * d;
      ref_sq += a * a;
      e.max_abs = std::max(e.max_abs, std::abs(d));
      if (std::isnan(d)) e.max_abs = d;
      q(j) = (std::isfinite(b) && b > 0.0) ? b : kKlFloor;
      q_total += q(j);
      if (a > 0.0) p_total += a;
    }
    double kl = 0.0;
    for (Index j = 0; j < exact.cols(); ++j) {
      const double p = exact(i, j);
      if (p > 0.0) kl += p * std::log(p * q_total / (q(j) * p_total));
    }
    kl_sum += p_total > 0.0 ? kl / p_total : 0.0;
  }
  e.mse = diff_sq / static_cast<double>(exact.size());
  e.rel_frobenius = relative(diff_sq, ref_sq);
  e.mean_row_kl = kl_sum / static_cast<double>(exact.rows());
  return e;
}

double output_relative_error(ConstMatrixRef exact, ConstMatrixRef approx) {
  check_same_shape(exact, approx);
  const MatrixD d = exact.cast<double>() - approx.cast<double>();
  return relative(d.squaredNorm(), exact.cast<double>().squaredNorm());
}

}  // namespace favor
