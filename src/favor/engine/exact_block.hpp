// The per-query-block work of exact attention (internal): one block of query rows against every
// visible key, streamed by key blocks with an online softmax, on the micro-kernels of
// attention_kernel.hpp. Blocks are independent: callers may run them in any order or in
// parallel, each with its own scratch.
#pragma once

#include <cstdint>
#include <vector>

#include "favor/kernels/attention_kernel.hpp"
#include "favor/types.hpp"

namespace favor::detail {

// Keys per block: the strip's scores (kKeyBlock x 8 floats) stay in L1, and the key and value
// rows of the block (kKeyBlock x (d + dv) floats, 64 KiB at d = dv = 64) in L2 while every strip
// of the query block reuses them.
constexpr Index kKeyBlock = 128;

// Reusable buffers, sized by exact_query_block; O(query block x (d + dv) + kKeyBlock) floats.
struct ExactScratch {
  FloatBuffer qt, p, acc, max, sum, rescale;
};

// Which keys a query block sees: causal (query i sees keys j <= i + offset, offset = S - L) and
// a key mask (S bytes, 0 = absent; null: all attend).
struct Visibility {
  bool causal = false;
  Index offset = 0;
  const std::uint8_t* key_mask = nullptr;
  Index first_key = 0;  // the first key the mask lets attend (S if none): rows that see none are 0
};

// The first key of `mask` (S bytes) that attends, S if none; 0 without a mask.
Index first_attending_key(const std::uint8_t* mask, Index S);

// out rows [q0, q0 + nq) = softmax(scale * q k^T) v for those rows over the keys they see; a row
// that sees none is 0. Shapes are checked by the caller; out may have any outer stride.
void exact_query_block(ConstMatrixRef q, const kernel::Keys& k, ConstMatrixRef v, float scale,
                       const Visibility& visible, Index q0, Index nq, MatrixRef out, ExactScratch& scratch);

// exact_attention (exact_attention.hpp) on keys in either layout of kernel::Keys, shapes checked
// by the caller (k.rows = v.rows(), k.d = q.cols(), and L <= S when causal).
void exact_attention(ConstMatrixRef q, const kernel::Keys& k, ConstMatrixRef v, MatrixRef out,
                     const AttentionOptions& options);

}  // namespace favor::detail
