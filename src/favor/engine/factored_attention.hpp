// The factored engine under favor_attention and codebook attention (internal): what a causal
// state and the tensor calls need beyond the public signatures -- a carried prefix state
// (StateStep), features made beforehand for several heads at once, and weights in factored form.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "favor/features/factored.hpp"
#include "favor/engine/prefix_state.hpp"
#include "favor/feature_map.hpp"
#include "favor/linear_attention.hpp"
#include "favor/types.hpp"

namespace favor {

// The rows per block that chunk = 0 stands for (see FavorOptions::chunk); throws for chunk < 0.
Index resolve_chunk(Index chunk, bool causal);

// Grouped-query: query heads qs[h] (each L x d) over one key/value head k, v; outs[h] L x dv. The
// keys' features and state are made once for the group when the map's parameters do not depend
// on the queries (every kernel but OPRF without a fixed rho). With a `step` (causal only), the
// keys continue its carried prefix state (see factored_attention).
// features: those of the rows of qs[0], qs[1], ..., then k, stacked from row features_row0 on,
// made beforehand by the caller with favor_factors (a map whose parameters do not depend on the
// inputs): a decoding step makes them for all its heads in one product.
void favor_attention(const FeatureMap& map, const std::vector<ConstMatrixRef>& qs, ConstMatrixRef k,
                     ConstMatrixRef v, const std::vector<MatrixRef>& outs, const FavorOptions& options,
                     StateStep* step, const FactoredFeatures* features = nullptr,
                     Index features_row0 = 0);

// The features favor_attention makes of x's rows (scaled by sqrt(scale)), for a map whose
// parameters do not depend on the inputs: how its caller makes them beforehand.
FactoredFeatures favor_factors(const FeatureMap& map, ConstMatrixRef x, const AttentionOptions& options);

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
// Returns true when every output value is known finite (the rows, checked as they are divided;
// not a decode step's, nor rows v was scaled for): the caller's check_result need not read them
// again.
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

}  // namespace favor
