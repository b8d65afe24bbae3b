// Linear-time attention from random features (docs/design.md §5), one head or a group of heads.
//
// Stabilization without bias: key exponents are shifted by a running per-feature column max
// (the carried state is rescaled when the max grows), query exponents by their row max after
// adding that shift. Both shifts cancel exactly in D^-1 (Q'K'^T) V. No epsilon is added to the
// features; the denominator is only guarded against underflow to zero.
#pragma once

#include <vector>

#include "feature_map.hpp"
#include "types.hpp"

namespace favor {

// Rows per block (causal attention carries its state across blocks); 0 picks the default: 128
// bidirectional, 32 causal (there the masked in-block product grows with the block, while the
// state products cost the same at any size: 32 measured fastest).
constexpr Index kDefaultChunk = 0;

struct FavorOptions : AttentionOptions {
  Index chunk = kDefaultChunk;
};

// q: L x d, k: S x d, v: S x dv, out: L x dv. Inputs are unscaled; sqrt(scale) is applied to both
// sides. Memory beyond inputs and output: O(chunk * M + M * dv) per thread, plus, bidirectional,
// one M x dv partial state per segment of keys until they are merged in order (docs/design.md §5).
void favor_attention(const FeatureMap& map, ConstMatrixRef q, ConstMatrixRef k, ConstMatrixRef v,
                     MatrixRef out, const FavorOptions& options = {});
Matrix favor_attention(const FeatureMap& map, ConstMatrixRef q, ConstMatrixRef k,
                       ConstMatrixRef v, const FavorOptions& options = {});

// Grouped-query: query heads qs[h] (each L x d) over one key/value head k, v; outs[h] L x dv. The
// keys' features and state are made once for the group when the map's parameters do not depend
// on the queries (every kernel but OPRF without a fixed rho).
void favor_attention(const FeatureMap& map, const std::vector<ConstMatrixRef>& qs, ConstMatrixRef k,
                     ConstMatrixRef v, const std::vector<MatrixRef>& outs, const FavorOptions& options);

// The approximate attention matrix A^ = diag(Q'K'^T 1)^-1 Q'K'^T (masked when causal), L x S.
void favor_attention_matrix(const FeatureMap& map, ConstMatrixRef q, ConstMatrixRef k,
                            MatrixRef out, const AttentionOptions& options = {});
Matrix favor_attention_matrix(const FeatureMap& map, ConstMatrixRef q, ConstMatrixRef k,
                              const AttentionOptions& options = {});

// Linear attention from explicit nonnegative-or-signed features (L x M and S x M):
// out_i = sum_j (qf_i.kf_j) v_j / sum_j (qf_i.kf_j), over j <= i when causal (L == S), computed
// by chunks with a carried state (never an L x M x dv tensor).
void linear_attention(ConstMatrixRef query_features, ConstMatrixRef key_features,
                      ConstMatrixRef v, MatrixRef out, bool causal = false, Index chunk = kDefaultChunk);
Matrix linear_attention(ConstMatrixRef query_features, ConstMatrixRef key_features,
                        ConstMatrixRef v, bool causal = false, Index chunk = kDefaultChunk);

}  // namespace favor
