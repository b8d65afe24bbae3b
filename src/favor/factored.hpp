// The factored form shared by random feature maps and codebooks: attention weights
//
//     w_ij = sum_r exp(q.row_log_i + q.exponent_ir + k.row_log_j + k.exponent_jr) q.value_ir k.value_jr
//
// Keeping exponents apart from values lets attention shift them without bias: keys by a
// per-column max, queries by a per-row max (after adding the key shift). Both cancel exactly
// in normalized attention.
#pragma once

#include "types.hpp"

namespace favor {

struct FactoredFeatures {
  Vector row_log;   // rows
  Matrix exponent;  // rows x M; empty (0 x 0) when every exponent is 0
  Matrix value;     // rows x M; empty when every value is 1
};

// row_log + exponent as one rows x M matrix (the per-entry log magnitude); entries whose value
// is 0 get the lowest float (see mask_zero_values).
Matrix log_magnitude(FactoredFeatures&& f, Index features);

// An entry whose value is 0 carries no weight: its log becomes the lowest float, so that it never
// sets a shift (a shift set by a weightless entry could push the entries that do carry weight
// below float range). `value` empty means every value is 1.
void mask_zero_values(Matrix& log, const Matrix& value);

// Stabilized factors of a query/key pair, for building an L x S estimate:
//   w_ij = exp(query_log_i) * (query.row(i) . key.row(j))
// Every entry is finite; with nonnegative values every query row has a dot product >= 1
// with the column sums of `key`.
struct StabilizedFeatures {
  Matrix query;      // L x M
  Matrix key;        // S x M
  Vector query_log;  // L
};
StabilizedFeatures stabilize(FactoredFeatures&& query, FactoredFeatures&& key, Index features);

}  // namespace favor
