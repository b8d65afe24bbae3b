// Float64 references for the fuzz target's checks: attention from per-feature logs and values,
// and those logs for every feature map and codebook assignment.
#pragma once

#include <cmath>
#include <limits>
#include <vector>

#include "fuzz.hpp"

namespace fuzz {

// ---------------------------------------------------------------------------------------------
// Float64 references for one head, used when inputs are moderate (every log term <= 50 and
// nothing ill-conditioned), where float32 rounding is far below the 1e-3 tolerance.

// Weights w_ij as (log magnitude, sign) pairs from per-feature logs and values.
struct LogFeatures {
  MatrixD log;    // rows x M (-inf where the value is 0)
  MatrixD value;  // rows x M, signed values (1 for exponential features)
};

// out_i = sum_j w_ij v_j / sum_j w_ij with w_ij = sum_r exp(lq_ir + lk_jr) vq_ir vk_jr. Returns
// false when it cannot serve as a reference (a normalizer that cancels, or no visible weight).
inline bool reference_attention(const LogFeatures& q, const LogFeatures& k, const MatrixD* v, bool causal,
                         MatrixD& out_or_matrix) {
  const Index L = q.log.rows(), S = k.log.rows(), M = q.log.cols();
  out_or_matrix = MatrixD::Zero(L, v ? v->cols() : S);
  for (Index i = 0; i < L; ++i) {
    const Index visible = causal ? i + S - L + 1 : S;  // bottom-right
    double top = -std::numeric_limits<double>::infinity();
    for (Index j = 0; j < visible; ++j)
      for (Index r = 0; r < M; ++r)
        if (q.value(i, r) * k.value(j, r) != 0.0) top = std::max(top, q.log(i, r) + k.log(j, r));
    if (!std::isfinite(top)) return false;
    std::vector<double> w(static_cast<std::size_t>(visible), 0.0);
    double den = 0.0, abs_den = 0.0;
    for (Index j = 0; j < visible; ++j) {
      for (Index r = 0; r < M; ++r) {
        const double t = std::exp(q.log(i, r) + k.log(j, r) - top) * q.value(i, r) * k.value(j, r);
        w[static_cast<std::size_t>(j)] += t;
        abs_den += std::abs(t);
      }
      den += w[static_cast<std::size_t>(j)];
    }
    if (!(std::abs(den) > 1e-3 * abs_den) || den <= 0.0) return false;
    for (Index j = 0; j < visible; ++j) {
      const double a = w[static_cast<std::size_t>(j)] / den;
      if (v) out_or_matrix.row(i) += a * v->row(j);
      else out_or_matrix(i, j) = a;
    }
  }
  return true;
}

inline void compare_reference(const float* got, const MatrixD& expected, double tolerance, const char* what) {
  for (Index i = 0; i < expected.size(); ++i) {
    const double e = expected.data()[i];
    if (!(std::abs(got[i] - e) <= tolerance))
      fail(std::string(what) + ": differs from the float64 reference at " + std::to_string(i) + ": " +
           std::to_string(got[i]) + " vs " + std::to_string(e) + " (tolerance " + std::to_string(tolerance) + ")");
  }
}

// Scaled rows x~ = float(root) * x, as the core forms them, in double.
inline MatrixD scaled(const Ref& x, double scale) {
  const float root = static_cast<float>(std::sqrt(scale));
  return (root * x).cast<double>();
}

inline double max_sq_norm(const MatrixD& x) { return x.size() ? x.rowwise().squaredNorm().maxCoeff() : 0.0; }

// Random-feature logs/values of scaled rows, mirroring feature_map.hpp in double.
inline LogFeatures feature_logs(const favor::FeatureMap& map, const MatrixD& x, const favor::KernelParameters& params,
                         favor::Side side) {
  const MatrixD w = map.projection().cast<double>();
  const Index n = x.rows(), m = w.rows();
  const MatrixD proj = x * w.transpose();
  const Eigen::VectorXd half = 0.5 * x.rowwise().squaredNorm();
  const double md = static_cast<double>(m);
  LogFeatures f;
  switch (map.kernel()) {
    case favor::Kernel::positive:
      f.log = proj;
      f.log.colwise() -= half;
      f.log.array() -= 0.5 * std::log(md);
      f.value = MatrixD::Ones(n, m);
      break;
    case favor::Kernel::hyperbolic:
      f.log.resize(n, 2 * m);
      f.log << proj, -proj;
      f.log.colwise() -= half;
      f.log.array() -= 0.5 * std::log(2.0 * md);
      f.value = MatrixD::Ones(n, 2 * m);
      break;
    case favor::Kernel::oprf: {
      const Eigen::VectorXd wsq = w.rowwise().squaredNorm();
      f.log = params.oprf.b * proj;
      f.log.rowwise() += params.oprf.a * wsq.transpose();
      f.log.colwise() -= half;
      f.log.array() += params.oprf.log_d - 0.5 * std::log(md);
      f.value = MatrixD::Ones(n, m);
      break;
    }
    case favor::Kernel::trigonometric:
      f.log = MatrixD::Zero(n, 2 * m);
      f.log.colwise() += half;
      f.log.array() -= 0.5 * std::log(md);
      f.value.resize(n, 2 * m);
      f.value << proj.array().cos().matrix(), proj.array().sin().matrix();
      break;
    case favor::Kernel::relu:
      f.log = MatrixD::Zero(n, m);
      f.value = (proj.array().max(0.0) + map.epsilon()).matrix();
      break;
    case favor::Kernel::sderf:
    case favor::Kernel::aderf: {
      const favor::DenseExponentialParameters& p = params.dense;
      const MatrixD tx = x * (side == favor::Side::key ? p.key_transform : p.query_transform).transpose();
      const Eigen::VectorXd b = (1.0 - 4.0 * p.a.array()).sqrt().matrix();
      f.log = tx * (w * b.asDiagonal()).transpose();
      f.log.rowwise() += (w.array().square().matrix() * p.a).transpose();
      f.log.colwise() -= 0.5 * tx.rowwise().squaredNorm();
      f.log.array() += p.log_d - 0.5 * std::log(md);
      f.value = MatrixD::Ones(n, m);
      break;
    }
  }
  return f;
}

// Codebook logs/values of scaled queries and keys (codebook.hpp). Returns false for a hard
// assignment with a near tie (float rounding may then pick either codeword).
inline bool codebook_logs(const MatrixD& c, const MatrixD& q, const MatrixD& k, favor::Assignment assignment,
                   double temperature, LogFeatures& fq, LogFeatures& fk) {
  const Index nc = c.rows();
  fq.log = q * c.transpose();
  fq.value = MatrixD::Ones(q.rows(), nc);
  MatrixD e = k * c.transpose();
  e.rowwise() -= 0.5 * c.rowwise().squaredNorm().transpose();
  fk.value = MatrixD::Ones(k.rows(), nc);
  switch (assignment) {
    case favor::Assignment::gaussian:
      fk.log = e;
      fk.log.colwise() -= 0.5 * k.rowwise().squaredNorm();
      break;
    case favor::Assignment::soft: {
      e /= temperature;
      for (Index j = 0; j < e.rows(); ++j) {
        const double top = e.row(j).maxCoeff();
        const double lse = top + std::log((e.row(j).array() - top).exp().sum());
        e.row(j).array() -= lse;
      }
      fk.log = e;
      break;
    }
    case favor::Assignment::hard: {
      fk.log = MatrixD::Zero(k.rows(), nc);
      fk.value = MatrixD::Zero(k.rows(), nc);
      for (Index j = 0; j < e.rows(); ++j) {
        Index best = 0;
        const double top = e.row(j).maxCoeff(&best);
        for (Index y = 0; y < nc; ++y)
          if (y != best && top - e(j, y) <= 1e-4 * (1.0 + std::abs(top))) return false;
        fk.value(j, best) = 1.0;
      }
      break;
    }
  }
  return true;
}

inline double max_finite_log(const LogFeatures& f) {
  double m = 0.0;
  for (Index i = 0; i < f.log.size(); ++i)
    if (std::isfinite(f.log.data()[i])) m = std::max(m, std::abs(f.log.data()[i]));
  return m;
}

}  // namespace fuzz
