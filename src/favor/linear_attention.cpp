#include "linear_attention.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "exact_attention.hpp"
#include "validate.hpp"

namespace favor {

namespace {

// The carried state of linear attention: sum_j k'_j v_j^T (M x dv) and sum_j k'_j (M).
struct State {
  Matrix kv;
  Vector k_sum;
};

// A denominator can vanish only by underflow (or, for the trigonometric kernel, by true
// cancellation): keep its sign and bound it away from 0 so that no row becomes NaN.
inline float guard(float den) {
  constexpr float kTiny = std::numeric_limits<float>::min();
  return std::abs(den) >= kTiny ? den : std::copysign(kTiny, den);
}

void check_chunk(Index chunk) {
  if (chunk < 1) throw_range("chunk", "expected an integer >= 1, got " + std::to_string(chunk));
}

// Shared driver. key_block(i0, n, state) returns the n x M key features of rows [i0, i0 + n) and
// may rescale the state first; query_block(i0, n) returns the n x M query features.
template <class KeyBlock, class QueryBlock>
void run_linear(Index L, Index S, Index features, ConstMatrixRef v, MatrixRef out, bool causal,
                Index chunk, KeyBlock key_block, QueryBlock query_block) {
  State state{Matrix::Zero(features, v.cols()), Vector::Zero(features)};
  Matrix numerator(chunk, v.cols());
  Vector denominator(chunk);
  auto write_rows = [&](Index i0, Index n) {
    for (Index i = 0; i < n; ++i) out.row(i0 + i) = numerator.row(i) / guard(denominator(i));
  };
  if (!causal) {
    for (Index j0 = 0; j0 < S; j0 += chunk) {
      const Index n = std::min(chunk, S - j0);
      const Matrix kf = key_block(j0, n, state);
      state.kv.noalias() += kf.transpose() * v.middleRows(j0, n);
      state.k_sum += kf.colwise().sum().transpose();
    }
    for (Index i0 = 0; i0 < L; i0 += chunk) {
      const Index n = std::min(chunk, L - i0);
      const Matrix qf = query_block(i0, n);
      numerator.topRows(n).noalias() = qf * state.kv;
      denominator.head(n).noalias() = qf * state.k_sum;
      write_rows(i0, n);
    }
    return;
  }
  Matrix local(chunk, chunk);
  for (Index i0 = 0; i0 < L; i0 += chunk) {
    const Index n = std::min(chunk, L - i0);
    const Matrix kf = key_block(i0, n, state);
    const Matrix qf = query_block(i0, n);
    auto block = local.topLeftCorner(n, n);
    block.noalias() = qf * kf.transpose();
    block.triangularView<Eigen::StrictlyUpper>().setZero();
    const auto vs = v.middleRows(i0, n);
    numerator.topRows(n).noalias() = qf * state.kv;
    numerator.topRows(n).noalias() += block * vs;
    denominator.head(n).noalias() = qf * state.k_sum;
    denominator.head(n) += block.rowwise().sum();
    write_rows(i0, n);
    state.kv.noalias() += kf.transpose() * vs;
    state.k_sum += kf.colwise().sum().transpose();
  }
}

void check_map(const FeatureMap& map, ConstMatrixRef q) {
  if (q.cols() != map.dim())
    throw_range("q", "expected d = " + std::to_string(map.dim()) + " (the feature map's dim), got " +
                         std::to_string(q.cols()));
}

}  // namespace

void favor_attention(const FeatureMap& map, ConstMatrixRef q, ConstMatrixRef k, ConstMatrixRef v,
                     MatrixRef out, const FavorOptions& options) {
  detail::check_head(q, k, &v, options.causal);
  check_map(map, q);
  detail::check_out(out, q.rows(), v.cols());
  check_chunk(options.chunk);
  const double scale = resolve_scale(options, q.cols());
  const float root = static_cast<float>(std::sqrt(scale));
  const KernelParameters params = map.parameters(q, k, scale);
  const Index features = map.num_features();
  // Running per-feature max of the key log magnitudes seen so far.
  Vector column_shift = Vector::Constant(features, -std::numeric_limits<float>::infinity());

  auto key_block = [&](Index j0, Index n, State& state) {
    FactoredFeatures f = map.factored(root * k.middleRows(j0, n), params);
    Matrix log_mag = f.exponent.size() ? std::move(f.exponent) : Matrix::Zero(n, features);
    log_mag.colwise() += f.row_log;
    const Vector shift = column_shift.cwiseMax(log_mag.colwise().maxCoeff().transpose());
    for (Index r = 0; r < features; ++r) {
      if (shift(r) == column_shift(r)) continue;
      const float factor = std::exp(column_shift(r) - shift(r));  // 0 while the state is empty
      state.kv.row(r) *= factor;
      state.k_sum(r) *= factor;
    }
    column_shift = shift;
    log_mag.rowwise() -= column_shift.transpose();
    Matrix kf = log_mag.array().exp().matrix();
    if (f.value.size()) kf.array() *= f.value.array();
    return kf;
  };
  auto query_block = [&](Index i0, Index n) {
    FactoredFeatures f = map.factored(root * q.middleRows(i0, n), params);
    Matrix log_mag = f.exponent.size() ? std::move(f.exponent) : Matrix::Zero(n, features);
    log_mag.rowwise() += column_shift.transpose();
    log_mag.colwise() -= log_mag.rowwise().maxCoeff();
    Matrix qf = log_mag.array().exp().matrix();
    if (f.value.size()) qf.array() *= f.value.array();
    return qf;
  };
  run_linear(q.rows(), k.rows(), features, v, out, options.causal, options.chunk, key_block,
             query_block);
}

Matrix favor_attention(const FeatureMap& map, ConstMatrixRef q, ConstMatrixRef k,
                       ConstMatrixRef v, const FavorOptions& options) {
  Matrix out(q.rows(), v.cols());
  favor_attention(map, q, k, v, out, options);
  return out;
}

void linear_attention(ConstMatrixRef query_features, ConstMatrixRef key_features,
                      ConstMatrixRef v, MatrixRef out, bool causal, Index chunk) {
  detail::check_head(query_features, key_features, &v, causal);
  detail::check_out(out, query_features.rows(), v.cols());
  check_chunk(chunk);
  run_linear(
      query_features.rows(), key_features.rows(), key_features.cols(), v, out, causal, chunk,
      [&](Index j0, Index n, State&) { return Matrix(key_features.middleRows(j0, n)); },
      [&](Index i0, Index n) { return Matrix(query_features.middleRows(i0, n)); });
}

Matrix linear_attention(ConstMatrixRef query_features, ConstMatrixRef key_features,
                        ConstMatrixRef v, bool causal, Index chunk) {
  Matrix out(query_features.rows(), v.cols());
  linear_attention(query_features, key_features, v, out, causal, chunk);
  return out;
}

namespace {

// Row i of the estimate recomputed in double with its own shift, for the rare rows whose float
// denominator underflowed (causal rows whose visible keys are all far below the column max).
void exact_estimate_row(const FactoredFeatures& qf, const FactoredFeatures& kf, Index i,
                        Index visible, Index features, float* row) {
  auto log_at = [](const FactoredFeatures& f, Index a, Index r) {
    return static_cast<double>(f.row_log(a)) + (f.exponent.size() ? f.exponent(a, r) : 0.0);
  };
  auto value_at = [](const FactoredFeatures& f, Index a, Index r) {
    return f.value.size() ? static_cast<double>(f.value(a, r)) : 1.0;
  };
  double top = -std::numeric_limits<double>::infinity();
  for (Index j = 0; j < visible; ++j)
    for (Index r = 0; r < features; ++r) top = std::max(top, log_at(qf, i, r) + log_at(kf, j, r));
  VectorD weights(visible);
  for (Index j = 0; j < visible; ++j) {
    double w = 0.0;
    for (Index r = 0; r < features; ++r)
      w += std::exp(log_at(qf, i, r) + log_at(kf, j, r) - top) * value_at(qf, i, r) * value_at(kf, j, r);
    weights(j) = w;
  }
  const double total = guard(static_cast<float>(weights.sum()));
  for (Index j = 0; j < visible; ++j) row[j] = static_cast<float>(weights(j) / total);
}

}  // namespace

void favor_attention_matrix(const FeatureMap& map, ConstMatrixRef q, ConstMatrixRef k,
                            MatrixRef out, const AttentionOptions& options) {
  detail::check_head(q, k, nullptr, options.causal);
  check_map(map, q);
  detail::check_out(out, q.rows(), k.rows());
  const double scale = resolve_scale(options, q.cols());
  const float root = static_cast<float>(std::sqrt(scale));
  const Matrix qs = root * q, ks = root * k;
  const KernelParameters params = map.parameters(qs, ks);
  const StabilizedFeatures st = stabilized_features(map, qs, ks, params);
  out.noalias() = st.query * st.key.transpose();
  if (options.causal) out.triangularView<Eigen::StrictlyUpper>().setZero();
  // A positive-valued kernel's float denominator below this has lost most of its digits.
  constexpr float kUnderflow = 1e-30f;
  std::vector<Index> redo;
  for (Index i = 0; i < out.rows(); ++i) {
    const float den = out.row(i).sum();
    if (!(std::abs(den) >= kUnderflow) && map.kernel() != Kernel::trigonometric) redo.push_back(i);
    out.row(i) /= guard(den);
  }
  if (redo.empty()) return;
  const FactoredFeatures qf = map.factored(qs, params), kf = map.factored(ks, params);
  for (Index i : redo) {
    const Index visible = options.causal ? i + 1 : k.rows();
    exact_estimate_row(qf, kf, i, visible, map.num_features(), &out(i, 0));
  }
}

Matrix favor_attention_matrix(const FeatureMap& map, ConstMatrixRef q, ConstMatrixRef k,
                              const AttentionOptions& options) {
  Matrix out(q.rows(), k.rows());
  favor_attention_matrix(map, q, k, out, options);
  return out;
}

}  // namespace favor
