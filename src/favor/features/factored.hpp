// The factored form shared by random feature maps and codebooks: attention weights
//
//     w_ij = sum_r exp(q.row_log_i + q.exponent_ir + k.row_log_j + k.exponent_jr) q.value_ir k.value_jr
//
// Keeping exponents apart from values lets attention shift them without bias: keys by a
// per-column max, queries by a per-row max (after adding the key shift). Both cancel exactly
// in normalized attention.
#pragma once

#include <cmath>
#include <functional>
#include <limits>
#include <string>

#include "favor/types.hpp"

namespace favor {

struct FactoredFeatures {
  Vector row_log;   // rows
  Matrix exponent;  // rows x M; empty (0 x 0) when every exponent is 0
  Matrix value;     // rows x M; empty when every value is 1
  // Exponent and value are finite by construction (a bound on |w.x| proved it): prepared() need
  // not read them through.
  bool bounded = false;
  // The columns' maxima of row_log + exponent, when their producer took them as it wrote the
  // exponent (FeatureMap::factored for keys): log_magnitude then need not read it again. Empty
  // otherwise; dropped by anything that changes rows or values (rows_of, masks).
  Vector column_max = Vector();
};

// Factors produced block by block: factors(row0, rows) returns those of rows [row0, row0 + rows).
using FactorBlock = std::function<FactoredFeatures(Index row0, Index rows)>;

// Rows [row0, row0 + rows) of f (a copy; `bounded` as f's, which held for every row).
FactoredFeatures rows_of(const FactoredFeatures& f, Index row0, Index rows);

// Factors as the attention engine uses them. Checked: the engine compares log magnitudes in
// float32, so a log that overflowed (a squared norm |x~|^2, a projection w.x~ or a codebook score
// beyond 3.4e38) or is NaN is a RangeError naming `side` rather than a wrong row. Then
// normalized: value rows far from 1 (relu features of tiny inputs, tiny or huge explicit
// features) are scaled by a power of two (exact) to a maximum magnitude in [0.5, 1), the factor
// moving into the row's log, where the shifts handle any range: products of values then neither
// underflow nor overflow. Rows already within [2^-21, 2^20] are left as they are.
FactoredFeatures prepared(FactoredFeatures&& f, const char* side);

// A denominator is exactly 0 only when every weight of the row is 0 (relu features with
// epsilon 0, zero explicit features; the numerator is then 0 too and the row becomes 0) or, for
// the trigonometric kernel, by cancellation: keep its sign and move it off 0 so that no row
// becomes NaN. A small nonzero denominator is used as it is: bounding it away from 0 would
// rescale the row.
inline float guard(float den) {
  return den != 0.0f ? den : std::copysign(std::numeric_limits<float>::min(), den);
}

// row_log + exponent as one rows x M matrix (the per-entry log magnitude); entries whose value
// is 0 get the lowest float (see mask_zero_values). The first form reuses a moved-in exponent
// (empty = all 0).
Matrix log_magnitude(Matrix exponent, const Vector& row_log, const Matrix& value, Index features);
Matrix log_magnitude(const FactoredFeatures& f, Index features);
// The same, also giving the per-feature (column) max (f.column_max where known). Takes f's
// exponent and column_max; its row_log and value are left as they were.
Matrix log_magnitude(FactoredFeatures&& f, Index features, Vector& column_max);

// An entry whose value is 0 carries no weight: its log becomes the lowest float, so that it never
// sets a shift (a shift set by a weightless entry could push the entries that do carry weight
// below float range). `value` empty means every value is 1.
void mask_zero_values(Matrix& log, const Matrix& value);

// Key factors at a per-feature shift: exp(log - shift) * value, entrywise (value empty = 1).
// column_sums (M floats, or null): each row of the result is added to it, in row order.
Matrix shifted_keys(Matrix log, const Vector& shift, const Matrix& value, float* column_sums = nullptr);

// Query factors once the keys are shifted by `shift`: t = exponent + shift (weightless entries
// masked; an empty exponent is all 0 over `rows`), row_scale = the row max of t, result
// exp(t - row_scale) * value. The query's row_log is not included: it is a per-row constant.
Matrix shifted_queries(Matrix exponent, const Matrix& value, Index rows, const Vector& shift,
                       Vector& row_scale);

// The weights of query row i over key rows j < visible, in double with the row's own shift:
// w_j = sum_r exp(ql_ir + kl_jr - top) qv_ir kv_jr, top the largest exponent among terms of nonzero
// value (so the largest weight is ~1). Terms of value 0 are skipped, not multiplied: their exp
// may overflow (inf * 0 = NaN). Returns top; -inf, with all weights 0, when no term has weight.
// For the rare rows that float underflow would lose.
double exact_weights(const Matrix& query_log, const Matrix& query_value, Index i,
                     const Matrix& key_log, const Matrix& key_value, Index visible, VectorD& weights);

// The binary exponent e of `top` (top = f * 2^e, f in [0.5, 1)) when it lies outside [2^-21, 2^20],
// else 0: scaling by 2^-e (exact) brings magnitudes far from 1 back near it.
int far_binary_exponent(float top);

// Stabilized factors of a query/key pair, for building an L x S estimate:
//   w_ij = exp(query_log_i) * (query.row(i) . key.row(j))
// Every entry is finite; with nonnegative values every query row has a dot product >= 1
// with the column sums of `key`.
struct StabilizedFeatures {
  Matrix query;      // L x M
  Matrix key;        // S x M
  Vector query_log;  // L
};
StabilizedFeatures stabilize(const FactoredFeatures& query, const FactoredFeatures& key, Index features);

class FeatureMap;
struct KernelParameters;
// Why `map` (whose parameters come from each call's inputs) cannot carry a causal state.
std::string data_dependent_state_message(const FeatureMap& map);
// The same for a map's features of x and y; query_log includes the prefactors.
StabilizedFeatures stabilized_features(const FeatureMap& map, ConstMatrixRef x, ConstMatrixRef y,
                                       const KernelParameters& params);

}  // namespace favor
