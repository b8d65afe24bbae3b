// Linear-time attention from random features (DESIGN.md section 5), one head.
//
// Stabilization without bias: key exponents are shifted by a running per-feature column max
// (the carried state is rescaled when the max grows), query exponents by their row max after
// adding that shift. Both shifts cancel exactly in D^-1 (Q'K'^T) V. No epsilon is added to the
// features; the denominator is only guarded against underflow to zero.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "factored.hpp"
#include "feature_map.hpp"
#include "prefix_state.hpp"
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

// Grouped-query: query heads qs[h] (each L x d) over one key/value head k, v; outs[h] L x dv. The
// keys' features and state are made once for the group when the map's parameters do not depend
// on the queries (every kernel but OPRF without a fixed rho). With a `step` (causal only), the
// keys continue its carried prefix state (see factored_attention).
// features: those of the rows of qs[0], qs[1], ..., then k, stacked from row features_row0 on,
// made beforehand by the caller with favor_factors (a map whose parameters do not depend on the
// inputs): a decoding step makes them for all its heads in one product.
void favor_attention(const FeatureMap& map, const std::vector<ConstMatrixRef>& qs, ConstMatrixRef k,
                     ConstMatrixRef v, const std::vector<MatrixRef>& outs, const FavorOptions& options,
                     StateStep* step = nullptr, const FactoredFeatures* features = nullptr,
                     Index features_row0 = 0);

// The features favor_attention makes of x's rows (scaled by sqrt(scale)), for a map whose
// parameters do not depend on the inputs: how its caller makes them beforehand.
FactoredFeatures favor_factors(const FeatureMap& map, ConstMatrixRef x, const AttentionOptions& options);

// The approximate attention matrix A^ = diag(Q'K'^T 1)^-1 Q'K'^T (masked when causal), L x S.
void favor_attention_matrix(const FeatureMap& map, ConstMatrixRef q, ConstMatrixRef k,
                            MatrixRef out, const AttentionOptions& options = {});
Matrix favor_attention_matrix(const FeatureMap& map, ConstMatrixRef q, ConstMatrixRef k,
                              const AttentionOptions& options = {});

// The engine under favor_attention and codebook attention: weights in factored form, produced
// block by block (FactorBlock, factored.hpp). Several query heads may read one key/value head
// (grouped-query attention): the keys' features and states are computed once for all of them.
struct QueryHead {
  FactorBlock factors;
  MatrixRef out;  // L x dv, the same L for every head
  // Optional, bidirectional: rows [row0, row0 + rows)'s features at the keys' shift in one go
  // (FeatureMap::queries_at_shift), the bits shifted_queries makes from `factors`; false where
  // it does not apply (the engine then takes `factors`).
  std::function<bool(Index row0, Index rows, const Vector& shift, Matrix& qf)> at_shift = nullptr;
};
// v is S x dv. Causal with L < S: the queries are the last L positions (bottom-right). With
// a `step` (causal only) the keys continue its carried prefix state: every query also sees the
// keys summed into it, and the state after all S keys takes its place at step->commit(), so that a
// caller can keep the old one until every head has succeeded (StateStep, prefix_state.hpp).
// Returns true when every output value is known finite (the bidirectional rows, checked as they
// are divided): the caller's check_result need not read them again.
bool factored_attention(const std::vector<QueryHead>& queries, const FactorBlock& keys, Index features,
                        ConstMatrixRef v, bool causal, Index chunk, StateStep* step = nullptr);
// The normalized L x S weight matrix from whole factored queries and keys (masked when causal,
// bottom-right when L < S).
void factored_attention_matrix(FactoredFeatures&& queries, FactoredFeatures&& keys,
                               Index features, MatrixRef out, bool causal);

// Masked keys (mask[j] == 0, rows [row0, row0 + rows)) get value 0: no weight at any shift.
// (A mask cannot act on logs: a chunk of only masked keys would set their shift and weigh 1.)
void mask_key_factors(FactoredFeatures& f, const std::uint8_t* mask, Index row0, Index features);
FactorBlock masked_keys(FactorBlock keys, const std::uint8_t* mask, Index features);

// Linear attention from explicit nonnegative-or-signed features (L x M and S x M):
// out_i = sum_j (qf_i.kf_j) v_j / sum_j (qf_i.kf_j), over j <= i when causal (L == S), computed
// by chunks with a carried state (never an L x M x dv tensor).
void linear_attention(ConstMatrixRef query_features, ConstMatrixRef key_features,
                      ConstMatrixRef v, MatrixRef out, bool causal = false, Index chunk = kDefaultChunk);
Matrix linear_attention(ConstMatrixRef query_features, ConstMatrixRef key_features,
                        ConstMatrixRef v, bool causal = false, Index chunk = kDefaultChunk);

}  // namespace favor
