#include "favor/feature_map.hpp"

#include "favor/features/factored.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>

#include "favor/error.hpp"
#include "favor/features/row_blocks.hpp"
#include "favor/features/structured_projection.hpp"
#include "favor/kernels/gemm.hpp"
#include "favor/kernels/vector_math.hpp"

namespace favor {

Kernel parse_kernel(const std::string& name, const std::string& argument) {
  if (name == "positive") return Kernel::positive;
  if (name == "hyperbolic") return Kernel::hyperbolic;
  if (name == "trigonometric") return Kernel::trigonometric;
  if (name == "relu") return Kernel::relu;
  if (name == "oprf") return Kernel::oprf;
  if (name == "sderf") return Kernel::sderf;
  if (name == "aderf") return Kernel::aderf;
  throw_range(argument, "expected 'positive', 'hyperbolic', 'trigonometric', 'relu', 'oprf', 'sderf' or 'aderf', got '" +
                            name + "'");
}

const char* to_string(Kernel kernel) {
  switch (kernel) {
    case Kernel::positive: return "positive";
    case Kernel::hyperbolic: return "hyperbolic";
    case Kernel::trigonometric: return "trigonometric";
    case Kernel::relu: return "relu";
    case Kernel::oprf: return "oprf";
    case Kernel::sderf: return "sderf";
    case Kernel::aderf: return "aderf";
  }
  return "?";
}

bool is_softmax_estimator(Kernel kernel) { return kernel != Kernel::relu; }

namespace {

bool is_dense_exponential(Kernel kernel) { return kernel == Kernel::sderf || kernel == Kernel::aderf; }

std::string scientific(double x) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3g", x);
  return text;
}

void check_dense_dim(Kernel kernel, Index dim) {
  if (is_dense_exponential(kernel) && dim > kMaxDenseExponentialDim)
    throw_range("dim", std::string("the '") + to_string(kernel) + "' kernel takes d <= " +
                           std::to_string(kMaxDenseExponentialDim) + " (an eigendecomposition of d x d per head), got " +
                           std::to_string(dim));
}

}  // namespace

OprfCoefficients oprf_coefficients(double rho, Index dim) {
  const double phi = rho / static_cast<double>(dim);
  const double a = (1.0 - 2.0 * phi - std::sqrt((2.0 * phi + 1.0) * (2.0 * phi + 1.0) + 8.0 * phi)) / 16.0;
  OprfCoefficients c;
  c.a = a;
  c.b = std::sqrt(1.0 - 4.0 * a);
  c.log_d = 0.25 * static_cast<double>(dim) * std::log(1.0 - 4.0 * a);
  return c;
}

namespace {

// The mean row and the mean squared norm of the rows, from blocks of rows in parallel
// (row_blocks.hpp) added in double.
struct RowMeans {
  VectorD row;
  double squared_norm = 0.0;
};

RowMeans row_means(ConstMatrixRef x) {
  RowMeans means{VectorD::Zero(x.cols())};
  if (x.rows() == 0) return means;
  const auto parts = over_row_blocks(x.rows(), 2.0 * static_cast<double>(x.size()), [&](Index row0, Index rows) {
    const auto block = x.middleRows(row0, rows).cast<double>();
    return RowMeans{block.colwise().sum().transpose(), block.rowwise().squaredNorm().sum()};
  });
  for (const RowMeans& part : parts) means.row += part.row, means.squared_norm += part.squared_norm;
  const double n = static_cast<double>(x.rows());
  means.row /= n;
  means.squared_norm /= n;
  return means;
}

}  // namespace

double oprf_rho(ConstMatrixRef x, ConstMatrixRef y) {
  const RowMeans mx = row_means(x), my = row_means(y);
  return mx.squared_norm + my.squared_norm + 2.0 * mx.row.dot(my.row);
}

FeatureMap::FeatureMap(const FeatureMapOptions& options)
    : kernel_(options.kernel), sampling_(options.sampling), epsilon_(options.epsilon) {
  check_epsilon();
  set_rho(options.rho);
  check_dense_dim(options.kernel, options.dim);
  projection_ = sample_projection(options.features, options.dim, options.sampling, options.seed);
  derive();
  if (sampling_ == Sampling::structured) structured_signs_ = structured::signs(options.features, options.dim, options.seed);
}

void FeatureMap::set_rho(std::optional<double> rho) {
  if (rho && (!std::isfinite(*rho) || *rho < 0.0))
    throw_range("rho", "expected a finite number >= 0, got " + std::to_string(*rho));
  rho_ = rho;
}

FeatureMap::FeatureMap(Kernel kernel, Matrix projection, double epsilon, Sampling sampling)
    : kernel_(kernel), sampling_(sampling), explicit_(true), epsilon_(epsilon),
      projection_(std::move(projection)) {
  check_epsilon();
  if (projection_.rows() < 1 || projection_.cols() < 1)
    throw_range("projection", "expected dims [m, d] with m >= 1 and d >= 1, got [" +
                                  std::to_string(projection_.rows()) + ", " +
                                  std::to_string(projection_.cols()) + "]");
  if (!projection_.allFinite()) throw_range("projection", "contains NaN or Infinity");
  check_dense_dim(kernel_, projection_.cols());
  derive();
}

bool FeatureMap::data_independent() const {
  if (kernel_ == Kernel::oprf) return rho_.has_value();
  if (is_dense_exponential(kernel_)) return dense_.has_value();
  return true;
}

void FeatureMap::fit(ConstMatrixRef x, ConstMatrixRef y, double scale) {
  if (x.cols() != dim()) throw_range("fit.q", "expected " + std::to_string(dim()) + " columns (the feature map's d), got " + std::to_string(x.cols()));
  if (y.cols() != dim()) throw_range("fit.k", "expected " + std::to_string(dim()) + " columns (the feature map's d), got " + std::to_string(y.cols()));
  if (x.rows() < 1 || y.rows() < 1) throw_range(x.rows() < 1 ? "fit.q" : "fit.k", "expected at least one row to fit to");
  if (!(std::isfinite(scale) && scale > 0.0))
    throw_range("fit.scale", "expected a finite number > 0, got " + std::to_string(scale));
  if (!x.allFinite() || !y.allFinite()) throw_range(x.allFinite() ? "fit.k" : "fit.q", "contains NaN or Infinity");
  if (kernel_ == Kernel::oprf) {
    set_rho(scale * oprf_rho(x, y));
  } else if (is_dense_exponential(kernel_)) {
    dense_ = dense_exponential_parameters(kernel_, x, y, scale);
    refresh_fitted();
  } else {
    throw_range("kernel", std::string("only the 'oprf', 'sderf' and 'aderf' kernels have parameters to fit, got '") +
                              to_string(kernel_) + "'");
  }
}

void FeatureMap::check_epsilon() const {
  if (!std::isfinite(epsilon_) || epsilon_ < 0.0)
    throw_range("epsilon", "expected a finite number >= 0, got " + std::to_string(epsilon_));
}

void FeatureMap::derive() {
  projection_sq_norms_ = projection_.rowwise().squaredNorm();
  max_projection_norm_ = std::sqrt(projection_.cast<double>().rowwise().squaredNorm().maxCoeff());
  gemm::pack_bt(projection_.rows(), projection_.cols(), projection_.data(), projection_.cols(), packed_projection_);
}

void FeatureMap::redraw(std::uint64_t seed) {
  projection_ = sample_projection(projection_.rows(), projection_.cols(), sampling_, seed);
  derive();
  explicit_ = false;
  structured_signs_ = sampling_ == Sampling::structured ? structured::signs(num_projections(), dim(), seed) : FloatBuffer();
  refresh_fitted();
}

void FeatureMap::refresh_fitted() {
  fitted_.reset();
  if (!dense_) return;
  KernelParameters params;
  params.dense = *dense_;
  // Where W diag(b) T overflows float32, no copy: each call makes it again and reports it.
  if (prepare_dense(params).empty()) fitted_ = std::move(params);
}

Index FeatureMap::num_features() const {
  const bool doubled = kernel_ == Kernel::hyperbolic || kernel_ == Kernel::trigonometric;
  return doubled ? 2 * projection_.rows() : projection_.rows();
}

KernelParameters FeatureMap::parameters(ConstMatrixRef x, ConstMatrixRef y, double scale) const {
  KernelParameters params;
  if (kernel_ == Kernel::oprf) params.oprf = oprf_coefficients(rho_ ? *rho_ : scale * oprf_rho(x, y), dim());
  if (is_dense_exponential(kernel_)) {
    if (fitted_) return *fitted_;
    params.dense = dense_ ? *dense_ : dense_exponential_parameters(kernel_, x, y, scale);
    const std::string overflow = prepare_dense(params);
    if (!overflow.empty()) throw_range("q, k", overflow);
  }
  return params;
}

std::string FeatureMap::prepare_dense(KernelParameters& params) const {
  const DenseExponentialParameters& p = params.dense;
  const Index m = projection_.rows(), d = dim();
  params.dense_offset.resize(m);
  params.max_dense_offset = 0.0;
  MatrixD scaled(m, d);  // W diag(b), in the frame T maps rows into
  for (Index r = 0; r < m; ++r) {
    double offset = 0.0;
    for (Index k = 0; k < d; ++k) {
      const double w = projection_(r, k);
      offset += p.a(k) * w * w;
      scaled(r, k) = w * std::sqrt(1.0 - 4.0 * p.a(k));
    }
    if (!(std::abs(offset) < 1e37))
      return "FAVOR#'s term sum_k a_k w_rk^2 for these inputs and this W overflows float32 (" + scientific(offset) +
             "); scale the inputs or the projection down";
    params.dense_offset(r) = static_cast<float>(offset);
    params.max_dense_offset = std::max(params.max_dense_offset, std::abs(offset));
  }
  const auto side = [&](const MatrixD& t, bool rotation, DenseSide& out) -> std::string {
    Matrix projection(m, d);  // W diag(b) T
    out.max_projection_norm = 0.0;
    for (Index r = 0; r < m; ++r) {
      double sq = 0.0;
      for (Index j = 0; j < d; ++j) {
        double sum = 0.0;
        for (Index k = 0; k < d; ++k) sum += scaled(r, k) * t(k, j);
        projection(r, j) = static_cast<float>(sum);
        sq += sum * sum;
      }
      out.max_projection_norm = std::max(out.max_projection_norm, std::sqrt(sq));
    }
    // Beyond this, float exponents could overflow for rows of any size (and the float copy itself
    // from 3.4e38): a clear error rather than weights lost to infinities.
    if (!(out.max_projection_norm < 1e37))
      return "FAVOR#'s projection W diag(b) T for these inputs and this W overflows float32 (a row norm of " +
             scientific(out.max_projection_norm) + "); scale the inputs or the projection down";
    gemm::pack_bt(m, d, projection.data(), d, out.packed_projection);
    out.packed_transform.clear();
    if (!rotation) {
      const Matrix tf = t.cast<float>();
      gemm::pack_bt(d, d, tf.data(), d, out.packed_transform);
    }
    return std::string();
  };
  // 'sderf''s T is a rotation: |T x| is |x|, already known from the rows' norms.
  const std::string query = side(p.query_transform, kernel_ == Kernel::sderf, params.dense_query);
  return query.empty() ? side(p.key_transform, kernel_ == Kernel::sderf, params.dense_key) : query;
}

double FeatureMap::log_prefactor(const KernelParameters& params) const {
  const double m = static_cast<double>(projection_.rows());
  switch (kernel_) {
    case Kernel::positive:
    case Kernel::trigonometric: return -0.5 * std::log(m);
    case Kernel::hyperbolic: return -0.5 * std::log(2.0 * m);
    case Kernel::oprf: return params.oprf.log_d - 0.5 * std::log(m);
    case Kernel::sderf:
    case Kernel::aderf: return params.dense.log_d - 0.5 * std::log(m);
    case Kernel::relu: return 0.0;
  }
  return 0.0;
}

FeatureMap::RowNorms FeatureMap::row_norms(ConstMatrixRef x, const KernelParameters& params, float root) const {
  if (x.cols() != dim())
    throw_range("x", "expected " + std::to_string(dim()) + " columns (the feature map's d), got " +
                         std::to_string(x.cols()));
  const Index rows = x.rows();
  RowNorms r;
  r.half_sq.resize(rows);
  float top = 0.0f;  // the largest |root x|^2
  vec::squared_norm_rows(x.data(), x.outerStride(), rows, root, x.cols(), r.half_sq.data());
  for (Index i = 0; i < rows; ++i) {
    const float sq = r.half_sq(i);
    r.half_sq(i) = 0.5f * sq;
    top = sq > top ? sq : top;
    r.small = r.small && sq < 1e37f;
  }
  // |w.x| <= |w| |x| (the float sums stay within a hair of it), so below this bound every
  // projection (before and after the root), and so every exponent and value, is finite:
  // prepared() need not scan them.
  const double norm = std::sqrt(static_cast<double>(top)), w = max_projection_norm_;
  const double bound = std::max(norm, norm / root) * w;
  r.bounded = bound < 1e37 && (kernel_ != Kernel::oprf ||  // OPRF adds a |w|^2 (kept in float)
                                (w * w < 1e37 && std::abs(params.oprf.b) * bound + std::abs(params.oprf.a) * w * w < 1e37));
  return r;
}

namespace {

// c (rows x m, row stride m) = root x W^T, then `out`'s epilogue: by fast Walsh-Hadamard
// transforms where W is the sampled SORF (its signs given; O(m/d p log p) a row, against m d for
// the product), else the GEMM on the packed W^T. half_sq: the rows' |root x|^2 / 2, for the bound
// on the transforms' intermediate values (past it, rows ~1e34 take the product).
void project(ConstMatrixRef x, float root, const Vector& half_sq, const FloatBuffer& packed, const FloatBuffer& signs,
             Index m, float* c, const gemm::Epilogue& out = {}) {
  if (!signs.empty()) {
    float top = 0.0f;
    for (Index i = 0; i < half_sq.size(); ++i) top = half_sq(i) > top ? half_sq(i) : top;
    if (structured::transforms_fit(std::sqrt(2.0 * top) / root, x.cols()))
      return structured::project(x, m, signs.data(), root, c, m, out);
  }
  gemm::gemm_packed(x.rows(), m, x.cols(), x.data(), x.outerStride(), 1, packed.data(), c, m, false, root, out);
}

}  // namespace

bool FeatureMap::queries_at_shift(ConstMatrixRef x, float root, const Vector& shift, Matrix& qf) const {
  if (kernel_ != Kernel::positive) return false;
  const RowNorms norms = row_norms(x, {}, root);
  if (!norms.bounded || !norms.small) return false;
  const Index rows = x.rows(), m = projection_.rows();
  // add_masked_max's start, so that the row maxima are its own (also over -inf shifts)
  FloatBuffer row_max(static_cast<std::size_t>(rows * gemm::kLanes), std::numeric_limits<float>::lowest());
  qf.resize(rows, m);
  project(x, root, norms.half_sq, packed_projection_, structured_signs_, m, qf.data(),
          {nullptr, nullptr, shift.data(), row_max.data()});
  for (Index i = 0; i < rows; ++i) {
    const float* lanes = row_max.data() + i * gemm::kLanes;
    float top = lanes[0];
    for (Index l = 1; l < gemm::kLanes; ++l) top = lanes[l] > top ? lanes[l] : top;
    vec::exp_shifted(&qf(i, 0), m, top, false);
  }
  return true;
}

FactoredFeatures FeatureMap::dense_factored(ConstMatrixRef x, const KernelParameters& params, float root,
                                            Side side) const {
  const DenseSide& s = side == Side::key ? params.dense_key : params.dense_query;
  if (s.packed_projection.empty())
    throw_range("featureMap", "these kernel parameters were not made by a 'sderf' or 'aderf' map's parameters()");
  const RowNorms norms = row_norms(x, params, root);
  const Index rows = x.rows(), m = projection_.rows(), d = dim();
  FactoredFeatures f;
  float top = 0.0f;  // the largest |root x|^2
  for (Index i = 0; i < rows; ++i) top = std::max(top, 2.0f * norms.half_sq(i));
  bool small = norms.small;
  if (s.packed_transform.empty()) {
    f.row_log = -norms.half_sq;
  } else {
    Matrix t(rows, d);  // root x T^T
    gemm::gemm_packed(rows, d, d, x.data(), x.outerStride(), 1, s.packed_transform.data(), t.data(), d, false, root);
    f.row_log.resize(rows);
    vec::squared_norm_rows(t.data(), d, rows, 1.0f, d, f.row_log.data());
    for (Index i = 0; i < rows; ++i) {
      small = small && f.row_log(i) < 1e37f;
      f.row_log(i) *= -0.5f;
    }
  }
  f.exponent.resize(rows, m);
  gemm::gemm_packed(rows, m, d, x.data(), x.outerStride(), 1, s.packed_projection.data(), f.exponent.data(), m, false,
                    root, {nullptr, nullptr, params.dense_offset.data(), nullptr});
  // |(W diag(b) T)_r . x~| <= |(W diag(b) T)_r| |x~|, as in row_norms.
  const double norm = std::sqrt(static_cast<double>(top));
  const double bound = std::max(norm, norm / root) * s.max_projection_norm + params.max_dense_offset;
  f.bounded = small && bound < 1e37;
  return f;
}

FactoredFeatures FeatureMap::factored(ConstMatrixRef x, const KernelParameters& params, float root,
                                      bool fold_row_log, Side side) const {
  if (is_dense_exponential(kernel_)) return dense_factored(x, params, root, side);
  const RowNorms norms = row_norms(x, params, root);
  const Vector& half_sq = norms.half_sq;
  const Index rows = x.rows(), m = projection_.rows();
  FactoredFeatures f;
  f.bounded = norms.bounded;
  Matrix projected(rows, m);  // root x W^T, W^T packed once per projection
  // Positive keys: their logs w.x - |x|^2/2 and the column maxima in the product's epilogue (the
  // same operations as log_magnitude's pass, without reading the product again). Only while both
  // terms are finite and below 1e37, so that their sum is finite too (prepared() checks neither).
  if (fold_row_log && kernel_ == Kernel::positive && f.bounded && norms.small) {
    f.row_log = -half_sq;
    f.column_max.setConstant(m, -std::numeric_limits<float>::infinity());
    project(x, root, half_sq, packed_projection_, structured_signs_, m, projected.data(),
            {f.row_log.data(), f.column_max.data()});
    f.row_log.setZero();
    f.exponent = std::move(projected);
    return f;
  }
  project(x, root, half_sq, packed_projection_, structured_signs_, m, projected.data());
  switch (kernel_) {
    case Kernel::positive:
      f.row_log = -half_sq;
      f.exponent = std::move(projected);
      break;
    case Kernel::hyperbolic:
      f.row_log = -half_sq;
      f.exponent.resize(rows, 2 * m);
      f.exponent.leftCols(m) = projected;
      f.exponent.rightCols(m) = -projected;
      break;
    case Kernel::oprf: {
      f.row_log = -half_sq;
      const float a = static_cast<float>(params.oprf.a), b = static_cast<float>(params.oprf.b);
      f.exponent = b * projected;
      f.exponent.rowwise() += a * projection_sq_norms_.transpose();
      break;
    }
    case Kernel::trigonometric:
      f.row_log = half_sq;
      f.value.resize(rows, 2 * m);
      f.value.leftCols(m) = projected.array().cos();
      f.value.rightCols(m) = projected.array().sin();
      break;
    case Kernel::relu:
      f.row_log = Vector::Zero(rows);
      f.value = (projected.array().max(0.0f) + static_cast<float>(epsilon_)).matrix();
      break;
    case Kernel::sderf:
    case Kernel::aderf: break;  // dense_factored
  }
  return f;
}

Matrix FeatureMap::features(ConstMatrixRef x, const KernelParameters& params, Side side) const {
  const FactoredFeatures f = factored(x, params, 1.0f, false, side);
  const double lp = log_prefactor(params);
  Matrix phi(x.rows(), num_features());
  for (Index i = 0; i < phi.rows(); ++i)
    for (Index r = 0; r < phi.cols(); ++r) {
      double log_mag = lp + f.row_log(i) + (f.exponent.size() ? f.exponent(i, r) : 0.0);
      const double value = f.value.size() ? f.value(i, r) : 1.0;
      phi(i, r) = static_cast<float>(std::exp(log_mag) * value);
    }
  return phi;
}

StabilizedFeatures stabilized_features(const FeatureMap& map, ConstMatrixRef x, ConstMatrixRef y,
                                       const KernelParameters& params) {
  StabilizedFeatures st =
      stabilize(map.factored(x, params), map.factored(y, params, 1.0f, false, Side::key), map.num_features());
  st.query_log.array() += static_cast<float>(2.0 * map.log_prefactor(params));
  return st;
}

std::string data_dependent_state_message(const FeatureMap& map) {
  if (map.kernel() == Kernel::oprf)
    return "an 'oprf' map without a fixed rho cannot carry a causal state: its parameters would depend on keys "
           "not seen yet; create it with a rho";
  return std::string("a '") + to_string(map.kernel()) +
         "' map that is not fitted cannot carry a causal state: its parameters would depend on keys not seen yet; "
         "create it with fit (sample queries and keys)";
}

MatrixD kernel_estimate(const FeatureMap& map, ConstMatrixRef x, ConstMatrixRef y) {
  // Pair by pair in double, each with its own shift: a row-wide shift (as attention uses) would
  // lose pairs far below their row's largest one, and give 0 * inf = NaN where it overflows.
  const KernelParameters params = map.parameters(x, y);
  const FactoredFeatures fx = map.factored(x, params), fy = map.factored(y, params, 1.0f, false, Side::key);
  auto finite = [](const FactoredFeatures& f) {
    return f.row_log.allFinite() && (!f.exponent.size() || f.exponent.allFinite()) &&
           (!f.value.size() || f.value.allFinite());
  };
  if (!finite(fx) || !finite(fy))
    throw_range("x, y", "not finite or too large for float32 features (a squared norm or w.x overflows 3.4e38)");
  auto log_at = [](const FactoredFeatures& f, Index a, Index r) {
    return static_cast<double>(f.row_log(a)) + (f.exponent.size() ? f.exponent(a, r) : 0.0);
  };
  auto value_at = [](const FactoredFeatures& f, Index a, Index r) {
    return f.value.size() ? static_cast<double>(f.value(a, r)) : 1.0;
  };
  const double prefactor = 2.0 * map.log_prefactor(params);
  const Index M = map.num_features();
  MatrixD est(x.rows(), y.rows());
  for (Index i = 0; i < x.rows(); ++i)
    for (Index j = 0; j < y.rows(); ++j) {
      double top = -std::numeric_limits<double>::infinity();
      for (Index r = 0; r < M; ++r)
        if (value_at(fx, i, r) * value_at(fy, j, r) != 0.0) top = std::max(top, log_at(fx, i, r) + log_at(fy, j, r));
      double sum = 0.0;
      if (std::isfinite(top))
        for (Index r = 0; r < M; ++r) {
          const double value = value_at(fx, i, r) * value_at(fy, j, r);
          if (value != 0.0) sum += std::exp(log_at(fx, i, r) + log_at(fy, j, r) - top) * value;
        }
      est(i, j) = sum == 0.0 ? 0.0 : sum * std::exp(top + prefactor);  // +-inf where it overflows
    }
  return est;
}

}  // namespace favor
