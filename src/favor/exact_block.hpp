// The per-query-block work of exact attention (internal): one block of query rows against every
// visible key, streamed by key blocks with an online softmax, on the micro-kernels of
// attention_kernel.hpp. Blocks are independent: callers may run them in any order or in
// parallel, each with its own scratch.
#pragma once

#include <vector>

#include "types.hpp"

namespace favor::detail {

// Keys per block: the strip's scores (kKeyBlock x 8 floats) stay in L1, and the key and value
// rows of the block (kKeyBlock x (d + dv) floats, 64 KiB at d = dv = 64) in L2 while every strip
// of the query block reuses them.
constexpr Index kKeyBlock = 128;

// Reusable buffers, sized by exact_query_block; O(query block x (d + dv) + kKeyBlock) floats.
struct ExactScratch {
  FloatBuffer qt, p, acc, max, sum, rescale;
};

// out rows [q0, q0 + nq) = softmax(scale * q k^T) v for those rows (causal: keys j <= i only).
// Shapes are checked by the caller; out may have any outer stride.
void exact_query_block(ConstMatrixRef q, ConstMatrixRef k, ConstMatrixRef v, float scale, bool causal,
                       Index q0, Index nq, MatrixRef out, ExactScratch& scratch);

}  // namespace favor::detail
