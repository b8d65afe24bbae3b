#include "favor/features/factored.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "favor/engine/validate.hpp"
#include "favor/kernels/vector_math.hpp"

namespace favor {

void mask_zero_values(Matrix& log, const Matrix& value) {
  if (!value.size()) return;
  const float* v = value.data();
  float* l = log.data();
  constexpr float kLowest = std::numeric_limits<float>::lowest();
  for (Index i = 0; i < log.size(); ++i) l[i] = v[i] == 0.0f ? kLowest : l[i];  // a blend: vectorizes
}

Matrix log_magnitude(Matrix exponent, const Vector& row_log, const Matrix& value, Index features) {
  if (!exponent.size()) exponent = Matrix::Zero(row_log.size(), features);
  exponent.colwise() += row_log;
  mask_zero_values(exponent, value);
  return exponent;
}

Matrix log_magnitude(FactoredFeatures&& f, Index features, Vector& column_max) {
  if (f.value.size()) {
    Matrix log = log_magnitude(std::move(f.exponent), f.row_log, f.value, features);
    column_max = log.colwise().maxCoeff().transpose();
    return log;
  }
  if (f.column_max.size()) {  // row_log is in the exponent already (see FeatureMap::factored)
    column_max = std::move(f.column_max);
    return std::move(f.exponent);
  }
  // The common case (exponential kernels) in one vectorized pass.
  Matrix log = f.exponent.size() ? std::move(f.exponent) : Matrix::Zero(f.row_log.size(), features);
  column_max.setConstant(features, -std::numeric_limits<float>::infinity());
  for (Index i = 0; i < log.rows(); ++i) vec::add_and_max_into(&log(i, 0), f.row_log(i), column_max.data(), features);
  return log;
}

Matrix log_magnitude(const FactoredFeatures& f, Index features) {
  return log_magnitude(f.exponent, f.row_log, f.value, features);
}

Matrix shifted_keys(Matrix log, const Vector& shift, const Matrix& value, float* column_sums) {
  const Index features = log.cols();
  for (Index i = 0; i < log.rows(); ++i) {
    float* row = &log(i, 0);
    vec::exp_minus(row, shift.data(), features);
    if (value.size()) vec::multiply(row, row, &value(i, 0), features);
    if (column_sums) vec::add_into(column_sums, row, features);
  }
  return log;
}

Matrix shifted_queries(Matrix exponent, const Matrix& value, Index rows, const Vector& shift,
                       Vector& row_scale) {
  if (!exponent.size()) exponent = Matrix::Zero(rows, shift.size());
  row_scale.resize(rows);
  const Index features = exponent.cols();
  for (Index i = 0; i < rows; ++i) {  // row by row, while it is in L1
    float* x = &exponent(i, 0);
    row_scale(i) = vec::add_masked_max(x, shift.data(), value.size() ? &value(i, 0) : nullptr, features);
    vec::exp_shifted(x, features, row_scale(i), false);
    if (value.size()) vec::multiply(x, x, &value(i, 0), features);
  }
  return exponent;
}

double exact_weights(const Matrix& query_log, const Matrix& query_value, Index i,
                     const Matrix& key_log, const Matrix& key_value, Index visible, VectorD& weights) {
  const Index features = query_log.cols();
  auto value_at = [&](Index j, Index r) {
    return (query_value.size() ? static_cast<double>(query_value(i, r)) : 1.0) *
           (key_value.size() ? static_cast<double>(key_value(j, r)) : 1.0);
  };
  double top = -std::numeric_limits<double>::infinity();
  for (Index j = 0; j < visible; ++j)
    for (Index r = 0; r < features; ++r)
      if (value_at(j, r) != 0.0) top = std::max(top, static_cast<double>(query_log(i, r)) + key_log(j, r));
  weights.setZero(visible);
  if (!std::isfinite(top)) return top;
  for (Index j = 0; j < visible; ++j)
    for (Index r = 0; r < features; ++r) {
      const double value = value_at(j, r);
      if (value != 0.0) weights(j) += std::exp(static_cast<double>(query_log(i, r)) + key_log(j, r) - top) * value;
    }
  return top;
}

int far_binary_exponent(float top) {
  int e = 0;
  std::frexp(top, &e);
  return top > 0.0f && std::isfinite(top) && (e < -20 || e > 20) ? e : 0;
}

namespace {

void check_factors(const FactoredFeatures& f, const char* side) {
  if (!detail::all_finite(f.row_log) ||
      (!f.bounded && (!detail::all_finite(f.exponent) || !detail::all_finite(f.value))))
    throw_range(side, "not finite or too large for float32 features (a squared norm of a scaled row, a "
                      "projection w.x or a codebook score overflows 3.4e38); scale the inputs down");
}

void normalize_values(FactoredFeatures& f) {
  if (!f.value.size()) return;
  for (Index i = 0; i < f.value.rows(); ++i) {
    const int e = far_binary_exponent(f.value.row(i).cwiseAbs().maxCoeff());
    if (e == 0) continue;
    f.value.row(i) = f.value.row(i).unaryExpr([e](float x) { return std::ldexp(x, -e); });
    f.row_log(i) += static_cast<float>(e * 0.69314718055994530942);
  }
}

}  // namespace

FactoredFeatures rows_of(const FactoredFeatures& f, Index row0, Index rows) {
  FactoredFeatures out;
  out.row_log = f.row_log.segment(row0, rows);
  if (f.exponent.size()) out.exponent = f.exponent.middleRows(row0, rows);
  if (f.value.size()) out.value = f.value.middleRows(row0, rows);
  out.bounded = f.bounded;
  return out;
}

FactoredFeatures prepared(FactoredFeatures&& f, const char* side) {
  check_factors(f, side);
  normalize_values(f);
  return std::move(f);
}

StabilizedFeatures stabilize(const FactoredFeatures& query, const FactoredFeatures& key, Index features) {
  StabilizedFeatures st;
  Vector column_shift;
  Matrix key_log = log_magnitude(FactoredFeatures(key), features, column_shift);
  st.key = shifted_keys(std::move(key_log), column_shift, key.value);
  Vector row_shift;
  st.query = shifted_queries(query.exponent, query.value, query.row_log.size(), column_shift, row_shift);
  st.query_log = query.row_log + row_shift;
  return st;
}

}  // namespace favor
