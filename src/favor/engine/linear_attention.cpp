#include "favor/linear_attention.hpp"

#include "favor/engine/factored_attention.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <vector>

#include "favor/engine/causal_sweep.hpp"
#include "favor/exact_attention.hpp"
#include "favor/threads/input_arrival.hpp"
#include "favor/parallel.hpp"
#include "favor/engine/prefix_state.hpp"
#include "favor/engine/validate.hpp"
#include "favor/threads/thread_plan.hpp"
#include "favor/kernels/vector_math.hpp"

namespace favor {

namespace {

// Rows of work per segment (rounded to whole chunks): threads fold the keys of whole segments,
// and partial states are merged in segment order, so the thread count never changes the result.
// A causal sweep's segments are its waves' parts (causal_sweep.hpp).
constexpr Index kSegmentRows = 2048;
// The bidirectional fold's segments are half as long, so that a long call's fold has several
// rounds of them on many threads (one head at L = 65536: 64, 4 rounds on 16 threads), and a
// thread slower than the rest leaves its last segment to the others (thread_plan.hpp
// region_pieces says why rounds matter). A segment costs its rows and a merge of its state
// (m x dv floats), a few microseconds.
constexpr Index kFoldSegmentRows = 1024;

// Rows [i0, i0 + n) of x, where they are inputs still arriving (input_arrival.hpp).
void await_rows(ConstMatrixRef x, Index i0, Index n) {
  if (n > 0) await_input(x.data() + i0 * x.outerStride(), (n - 1) * x.outerStride() + x.cols());
}

void check_map(const FeatureMap& map, ConstMatrixRef q) {
  if (q.cols() != map.dim())
    throw_range("q", "expected d = " + std::to_string(map.dim()) + " (the feature map's dim), got " +
                         std::to_string(q.cols()));
}

}  // namespace

Index resolve_chunk(Index chunk, bool causal) {
  if (chunk < 0) throw_range("chunk", "expected an integer >= 1 (or 0 for the default), got " + std::to_string(chunk));
  return chunk ? chunk : causal ? 32 : 128;
}

void mask_key_factors(FactoredFeatures& f, const std::uint8_t* mask, Index row0, Index features) {
  const Index n = f.row_log.size();
  bool any = false;
  for (Index j = 0; j < n && !any; ++j) any = !mask[row0 + j];
  if (!any) return;
  if (!f.value.size()) f.value = Matrix::Ones(n, features);
  f.column_max.resize(0);  // they counted the masked rows
  for (Index j = 0; j < n; ++j)
    if (!mask[row0 + j]) f.value.row(j).setZero();
}

FactorBlock masked_keys(FactorBlock keys, const std::uint8_t* mask, Index features) {
  if (!mask) return keys;
  return [keys = std::move(keys), mask, features](Index j0, Index n) {
    FactoredFeatures f = keys(j0, n);
    mask_key_factors(f, mask, j0, features);
    return f;
  };
}

namespace {

// v far from 1 (max |v| beyond 2^+-20, e = far_binary_exponent(max |v|) != 0) is scaled by a power
// of two (exact) and the output scaled back, so that weights times v neither underflow nor
// overflow: the output is linear in v. (Not with a carried state: its sums hold v at the scale
// of earlier calls.)
bool with_v_scaled(const std::vector<QueryHead>& heads, const FactorBlock& keys, Index features, ConstMatrixRef v,
                   bool causal, Index chunk, int e) {
  const Matrix scaled = v.unaryExpr([e](float x) { return std::ldexp(x, -e); });
  factored_attention(heads, keys, features, scaled, causal, chunk);
  for (const QueryHead& h : heads) {
    MatrixRef out = h.out;
    out = out.unaryExpr([e](float x) { return std::ldexp(x, e); });
  }
  return false;
}

}  // namespace

bool factored_attention(const std::vector<QueryHead>& heads, const FactorBlock& keys, Index features,
                        ConstMatrixRef v, bool causal, Index chunk, StateStep* step) {
  chunk = resolve_chunk(chunk, causal);
  const bool rescalable = v.size() && !step;
  const Index H = static_cast<Index>(heads.size());
  const Index L = heads[0].out.rows(), S = v.rows();
  chunk = std::min(chunk, std::max(L, S));  // a larger block only costs memory
  // Segments of whole chunks, at least one.
  const auto segment_of = [chunk](Index rows) { return chunk * std::max<Index>(1, rows / chunk); };
  if (!causal) {
    PrefixState state = empty_prefix_state(features, v.cols());
    // max |v| taken as the fold reads v (the rare v far from 1 folds again, scaled)
    float v_top = 0.0f;
    fold_range(keys, features, v, chunk, segment_of(kFoldSegmentRows), 0, S, state, rescalable ? &v_top : nullptr);
    if (rescalable)
      if (const int e = far_binary_exponent(v_top)) return with_v_scaled(heads, keys, features, v, causal, chunk, e);
    // Query blocks of `chunk` rows, cut into pieces where the (head, block) pairs would not share
    // out evenly among the threads, or would make few rounds of them (region_pieces): a
    // query row's output depends on its row alone, so any cut gives the same bits.
    const Index blocks = (L + chunk - 1) / chunk, pieces = region_pieces(H * blocks, chunk, available_threads());
    std::atomic<bool> finite{true};
    parallel_for(H * blocks * pieces, [&](Index hbp) {
      const QueryHead& head = heads[static_cast<std::size_t>(hbp / (blocks * pieces))];
      const Index block0 = (hbp / pieces % blocks) * chunk;
      const auto [r0, r1] = piece_rows(std::min(chunk, L - block0), pieces, hbp % pieces);
      const Index i0 = block0 + r0, n = r1 - r0;
      if (n <= 0) return;
      Matrix qf;
      if (!head.at_shift || !head.at_shift(i0, n, state.shift, qf)) {
        FactoredFeatures f = prepared(head.factors(i0, n), "q");
        Vector row_scale;
        qf = shifted_queries(std::move(f.exponent), f.value, n, state.shift, row_scale);
      }
      Matrix numerator(n, state.kv.cols());
      Vector denominator(n);
      readout(qf, state, numerator, denominator.data());
      if (!write_rows(head.out, i0, numerator, denominator, n)) finite.store(false, std::memory_order_relaxed);
    });
    return finite;
  }
  // max |v| taken as the causal folds read v, not beforehand: a call whose inputs still arrive
  // starts on its first rows. A run that finds v far from 1 so far stops, and all of v decides:
  // scaled, or (its first rows far below 1, the rest not) run again as it is.
  float v_top = 0.0f;
  const Index segment = segment_of(kSegmentRows);
  const bool finite =
      causal_factored_attention(heads, keys, features, v, chunk, segment, step, rescalable ? &v_top : nullptr);
  if (!rescalable || !far_binary_exponent(v_top)) return finite;
  await_rows(v, 0, v.rows());
  if (const int e = far_binary_exponent(max_abs_rows(v, 0, v.rows())))
    return with_v_scaled(heads, keys, features, v, causal, chunk, e);
  return causal_factored_attention(heads, keys, features, v, chunk, segment, step);
}

namespace {

// Row i recomputed in double with its own shift, for the rare rows whose float denominator
// underflowed (causal rows whose visible keys are all far below a column max). In double: no
// guard (a float guard would rescale a row whose total is below 1e-38); a zero total (no nonzero
// weight at all) gives a zero row.
void exact_row(const Matrix& query_log, const Matrix& query_value, Index i, const Matrix& key_log,
               const Matrix& key_value, Index visible, float* row) {
  VectorD weights;
  exact_weights(query_log, query_value, i, key_log, key_value, visible, weights);
  const double total = weights.sum();
  for (Index j = 0; j < visible; ++j) row[j] = total != 0.0 ? static_cast<float>(weights(j) / total) : 0.0f;
}

}  // namespace

void factored_attention_matrix(FactoredFeatures&& queries, FactoredFeatures&& keys, Index features,
                               MatrixRef out, bool causal) {
  queries = prepared(std::move(queries), "q");
  keys = prepared(std::move(keys), "k");
  const StabilizedFeatures st = stabilize(queries, keys, features);
  out.noalias() = st.query * st.key.transpose();
  const Index S = out.cols(), offset = causal_offset(out.rows(), S);
  const auto visible = [&](Index i) { return causal ? std::min(S, i + offset + 1) : S; };
  // A denominator below this has lost most of its digits to underflow.
  constexpr float kUnderflow = 1e-30f;
  const bool signed_values = (queries.value.size() && queries.value.minCoeff() < 0) ||
                             (keys.value.size() && keys.value.minCoeff() < 0);
  Matrix query_log, key_log;  // for the slow path, made on first use
  for (Index i = 0; i < out.rows(); ++i) {
    const Index n = visible(i);
    out.row(i).tail(S - n).setZero();
    const float den = out.row(i).head(n).sum();
    if (!(std::abs(den) >= kUnderflow) && !signed_values) {
      if (!key_log.size()) {
        query_log = log_magnitude(queries, features);
        key_log = log_magnitude(keys, features);
      }
      exact_row(query_log, queries.value, i, key_log, keys.value, n, &out(i, 0));
    } else {
      out.row(i).head(n) /= guard(den);
    }
  }
}

namespace {

// One query head over one key/value head, as the engine takes it.
std::vector<QueryHead> one_head(FactorBlock queries, MatrixRef out) { return {QueryHead{std::move(queries), out}}; }

// sqrt(scale), which both sides take: (root q) . (root k) = scale q . k.
float root_of(double scale) { return static_cast<float>(std::sqrt(scale)); }

}  // namespace

FactoredFeatures favor_factors(const FeatureMap& map, ConstMatrixRef x, const AttentionOptions& options) {
  if (!map.data_independent())
    throw_range("featureMap", "features made beforehand need parameters that do not depend on the inputs");
  if (!map.symmetric())
    throw_range("featureMap", "features made beforehand serve queries and keys alike; 'aderf' maps them differently");
  const double scale = resolve_scale(options, x.cols());
  return map.factored(x, map.parameters(x, x, scale), root_of(scale));
}

void favor_attention(const FeatureMap& map, const std::vector<ConstMatrixRef>& qs, ConstMatrixRef k,
                     ConstMatrixRef v, const std::vector<MatrixRef>& outs, const FavorOptions& options,
                     StateStep* step, const FactoredFeatures* features, Index features_row0) {
  if (qs.empty() || qs.size() != outs.size()) throw_range("q", "expected one output per query head");
  for (std::size_t h = 0; h < qs.size(); ++h) {
    detail::check_head(qs[h], k, &v, options.causal);
    check_map(map, qs[h]);
    detail::check_out(outs[h], qs[h].rows(), v.cols());
    if (qs[h].rows() != qs[0].rows()) throw_range("q", "expected the same L in every query head");
  }
  if (step && !options.causal) throw_range("causal", "a carried prefix state needs causal attention");
  const double scale = resolve_scale(options, k.cols());
  const float root = root_of(scale);
  const Index M = map.num_features();
  // Rows of the caller's features from row0 on, or the map's features of x's rows.
  // (A key block's rows of v are read after it, on its thread or after its region: awaited here.)
  const auto block = [&](const ConstMatrixRef& x, Index row0, const KernelParameters& params,
                         bool keys = false) -> FactorBlock {
    if (features) return [features, row0 = features_row0 + row0](Index i0, Index n) { return rows_of(*features, row0 + i0, n); };
    return [&map, &x, &v, &params, root, keys](Index i0, Index n) {
      await_rows(x, i0, n);
      if (keys) await_rows(v, i0, n);
      return map.factored(x.middleRows(i0, n), params, root, keys, keys ? Side::key : Side::query);
    };
  };
  const Index L = qs[0].rows();
  bool finite = true;  // every output known finite as it was written
  const auto run = [&](std::vector<QueryHead> heads, const KernelParameters& params) {
    finite &= factored_attention(heads, masked_keys(block(k, static_cast<Index>(qs.size()) * L, params, true), options.key_mask, M), M, v,
                       options.causal, options.chunk, step);
  };
  const auto query_block = [&](std::size_t h, const KernelParameters& params) {
    return block(qs[h], static_cast<Index>(h) * L, params);
  };
  if (map.data_independent()) {
    const KernelParameters params = map.parameters(qs[0], k, scale);
    std::vector<QueryHead> heads;
    for (std::size_t h = 0; h < qs.size(); ++h) {
      heads.push_back({query_block(h, params), outs[h]});
      if (!features)
        heads.back().at_shift = [&map, x = qs[h], root](Index i0, Index n, const Vector& shift, Matrix& qf) {
          await_rows(x, i0, n);
          return map.queries_at_shift(x.middleRows(i0, n), root, shift, qf);
        };
    }
    run(std::move(heads), params);
  } else {
    // OPRF's and FAVOR#'s parameters come from each query head's own q and the keys: no features
    // to share.
    if (features) throw_range("featureMap", "features made beforehand need parameters that do not depend on the inputs");
    if (step) throw_range("featureMap", data_dependent_state_message(map));
    for (std::size_t h = 0; h < qs.size(); ++h) {
      const KernelParameters params = map.parameters(qs[h], k, scale);
      run({QueryHead{query_block(h, params), outs[h]}}, params);
    }
  }
  if (!finite)
    for (const MatrixRef& out : outs) detail::check_result(out, "q, k, v", map.kernel() == Kernel::trigonometric);
}

void favor_attention(const FeatureMap& map, const std::vector<ConstMatrixRef>& qs, ConstMatrixRef k,
                     ConstMatrixRef v, const std::vector<MatrixRef>& outs, const FavorOptions& options) {
  favor_attention(map, qs, k, v, outs, options, nullptr);
}

void favor_attention(const FeatureMap& map, ConstMatrixRef q, ConstMatrixRef k, ConstMatrixRef v,
                     MatrixRef out, const FavorOptions& options) {
  favor_attention(map, std::vector<ConstMatrixRef>{q}, k, v, std::vector<MatrixRef>{out}, options);
}

Matrix favor_attention(const FeatureMap& map, ConstMatrixRef q, ConstMatrixRef k,
                       ConstMatrixRef v, const FavorOptions& options) {
  Matrix out(q.rows(), v.cols());
  favor_attention(map, q, k, v, out, options);
  return out;
}

void favor_attention_matrix(const FeatureMap& map, ConstMatrixRef q, ConstMatrixRef k,
                            MatrixRef out, const AttentionOptions& options) {
  detail::check_head(q, k, nullptr, options.causal);
  check_map(map, q);
  detail::check_out(out, q.rows(), k.rows());
  const double scale = resolve_scale(options, q.cols());
  const float root = root_of(scale);
  const KernelParameters params = map.parameters(q, k, scale);
  FactoredFeatures keys = map.factored(k, params, root, false, Side::key);
  if (options.key_mask) mask_key_factors(keys, options.key_mask, 0, map.num_features());
  factored_attention_matrix(map.factored(q, params, root), std::move(keys), map.num_features(), out, options.causal);
  detail::check_result(out, "q, k", map.kernel() == Kernel::trigonometric);
}

Matrix favor_attention_matrix(const FeatureMap& map, ConstMatrixRef q, ConstMatrixRef k,
                              const AttentionOptions& options) {
  Matrix out(q.rows(), k.rows());
  favor_attention_matrix(map, q, k, out, options);
  return out;
}

void linear_attention(ConstMatrixRef query_features, ConstMatrixRef key_features,
                      ConstMatrixRef v, MatrixRef out, bool causal, Index chunk) {
  detail::check_head(query_features, key_features, &v, causal);
  detail::check_out(out, query_features.rows(), v.cols());
  auto plain = [](ConstMatrixRef features) {
    return [features](Index i0, Index n) {
      return FactoredFeatures{Vector::Zero(n), Matrix(), Matrix(features.middleRows(i0, n))};
    };
  };
  if (factored_attention(one_head(plain(query_features), out), plain(key_features), key_features.cols(), v, causal, chunk))
    return;
  const bool signed_features = (query_features.array() < 0).any() || (key_features.array() < 0).any();
  detail::check_result(out, "query_features, key_features, v", signed_features);
}

Matrix linear_attention(ConstMatrixRef query_features, ConstMatrixRef key_features,
                        ConstMatrixRef v, bool causal, Index chunk) {
  Matrix out(query_features.rows(), v.cols());
  linear_attention(query_features, key_features, v, out, causal, chunk);
  return out;
}

}  // namespace favor
