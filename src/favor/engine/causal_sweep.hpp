// Causal attention of the factored engine: keys folded into prefix states segment by segment
// and chunk by chunk, each chunk of queries reading the state of every key before it plus its
// own keys j <= i through a masked block (docs/design.md §5).
#pragma once

#include <vector>

#include "favor/engine/factored_attention.hpp"
#include "favor/engine/prefix_state.hpp"

namespace favor {

// factored_attention with causal = true, once its arguments are checked: segments of `segment`
// rows (whole chunks) are the unit of parallel work, so the thread count never changes the bits.
// With a `step`, the keys continue its carried state (see StateStep). Returns whether every
// output written is known finite (false: the caller checks them).
//
// With `v_top` (a v that may be far from 1: factored_attention scales such a v), the max |v| of
// the rows it reads goes there as it reads them (with their chunks' keys, as they arrive: a call
// need not wait for all of v first). It stops, its outputs not all written, after the first wave
// (or chunk, on one thread) that leaves that max far from 1 (far_binary_exponent): the caller
// then reads all of v to decide.
bool causal_factored_attention(const std::vector<QueryHead>& heads, const FactorBlock& keys, Index features,
                               ConstMatrixRef v, Index chunk, Index segment, StateStep* step,
                               float* v_top = nullptr);

}  // namespace favor
