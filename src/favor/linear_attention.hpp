// Linear-time attention from random features (DESIGN.md section 5), one head.
//
// Stabilization without bias: key exponents are shifted by a running per-feature column max
// (the carried state is rescaled when the max grows), query exponents by their row max after
// adding that shift. Both shifts cancel exactly in D^-1 (Q'K'^T) V. No epsilon is added to the
// features; the denominator is only guarded against underflow to zero.
#pragma once

#include <functional>

#include "factored.hpp"
#include "feature_map.hpp"
#include "types.hpp"

namespace favor {

// Rows per block (causal attention carries its state across blocks); 0 picks the default: 128
// bidirectional, 32 causal (there the masked in-block product grows with the block, while the
// state products cost the same at any size: 32 measured fastest).
constexpr Index kDefaultChunk = 0;
Index resolve_chunk(Index chunk, bool causal);

struct FavorOptions : AttentionOptions {
  Index chunk = kDefaultChunk;
};

// q: L x d, k: S x d, v: S x dv, out: L x dv. Inputs are unscaled; sqrt(scale) is applied to both
// sides. Memory beyond inputs and output: O(chunk * M + M * dv).
void favor_attention(const FeatureMap& map, ConstMatrixRef q, ConstMatrixRef k, ConstMatrixRef v,
                     MatrixRef out, const FavorOptions& options = {});
Matrix favor_attention(const FeatureMap& map, ConstMatrixRef q, ConstMatrixRef k,
                       ConstMatrixRef v, const FavorOptions& options = {});

// The approximate attention matrix A^ = diag(Q'K'^T 1)^-1 Q'K'^T (masked when causal), L x S.
void favor_attention_matrix(const FeatureMap& map, ConstMatrixRef q, ConstMatrixRef k,
                            MatrixRef out, const AttentionOptions& options = {});
Matrix favor_attention_matrix(const FeatureMap& map, ConstMatrixRef q, ConstMatrixRef k,
                              const AttentionOptions& options = {});

// The engine under favor_attention and codebook attention: weights in factored form
// (factored.hpp), produced block by block. `queries(i0, n)` and `keys(j0, n)` return the
// factors of rows [i0, i0 + n); out is L x dv, v is S x dv, `features` is M.
using FactorBlock = std::function<FactoredFeatures(Index row0, Index rows)>;
void factored_attention(const FactorBlock& queries, const FactorBlock& keys, Index features,
                        ConstMatrixRef v, MatrixRef out, bool causal, Index chunk);
// The normalized L x S weight matrix from whole factored queries and keys (masked when causal).
void factored_attention_matrix(FactoredFeatures&& queries, FactoredFeatures&& keys,
                               Index features, MatrixRef out, bool causal);

// Linear attention from explicit nonnegative-or-signed features (L x M and S x M):
// out_i = sum_j (qf_i.kf_j) v_j / sum_j (qf_i.kf_j), over j <= i when causal (L == S), computed
// by chunks with a carried state (never an L x M x dv tensor).
void linear_attention(ConstMatrixRef query_features, ConstMatrixRef key_features,
                      ConstMatrixRef v, MatrixRef out, bool causal = false, Index chunk = kDefaultChunk);
Matrix linear_attention(ConstMatrixRef query_features, ConstMatrixRef key_features,
                        ConstMatrixRef v, bool causal = false, Index chunk = kDefaultChunk);

}  // namespace favor
