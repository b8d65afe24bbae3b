// Causal attention of the factored engine: keys folded into prefix states segment by segment
// and chunk by chunk, each chunk of queries reading the state of every key before it plus its
// own keys j <= i through a masked block (docs/design.md §5).
#pragma once

#include <vector>

#include "favor/engine/factored_attention.hpp"
#include "favor/engine/prefix_state.hpp"

namespace favor {

// factored_attention with causal = true, once its arguments are checked (and v is near 1):
// segments of `segment` rows (whole chunks) are the unit of parallel work, so the thread count
// never changes the bits. With a `step`, the keys continue its carried state (see StateStep).
// Returns whether every output written is known finite (false: the caller checks them).
bool causal_factored_attention(const std::vector<QueryHead>& heads, const FactorBlock& keys, Index features,
                               ConstMatrixRef v, Index chunk, Index segment, StateStep* step);

}  // namespace favor
