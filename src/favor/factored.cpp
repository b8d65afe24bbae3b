#include "factored.hpp"

#include <limits>

#include "vector_math.hpp"

namespace favor {

void mask_zero_values(Matrix& log, const Matrix& value) {
  if (!value.size()) return;
  const float* v = value.data();
  float* l = log.data();
  constexpr float kLowest = std::numeric_limits<float>::lowest();
  for (Index i = 0; i < log.size(); ++i) l[i] = v[i] == 0.0f ? kLowest : l[i];  // a blend: vectorizes
}

Matrix log_magnitude(FactoredFeatures&& f, Index features) {
  Matrix log_mag = f.exponent.size() ? std::move(f.exponent) : Matrix::Zero(f.row_log.size(), features);
  log_mag.colwise() += f.row_log;
  mask_zero_values(log_mag, f.value);
  return log_mag;
}

StabilizedFeatures stabilize(FactoredFeatures&& query, FactoredFeatures&& key, Index features) {
  StabilizedFeatures st;
  Matrix key_log = log_magnitude(std::move(key), features);
  const Vector column_shift = key_log.colwise().maxCoeff().transpose();
  key_log.rowwise() -= column_shift.transpose();
  vec::exp_inplace(key_log);
  st.key = std::move(key_log);
  if (key.value.size()) st.key.array() *= key.value.array();

  Matrix query_log = query.exponent.size() ? std::move(query.exponent)
                                           : Matrix::Zero(query.row_log.size(), features);
  query_log.rowwise() += column_shift.transpose();
  mask_zero_values(query_log, query.value);
  const Vector row_shift = query_log.rowwise().maxCoeff();
  query_log.colwise() -= row_shift;
  vec::exp_inplace(query_log);
  st.query = std::move(query_log);
  if (query.value.size()) st.query.array() *= query.value.array();
  st.query_log = query.row_log + row_shift;
  return st;
}

}  // namespace favor
