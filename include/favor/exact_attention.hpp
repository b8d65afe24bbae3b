// Exact softmax attention for one head: out = softmax(scale * q k^T) v.
#pragma once

#include "types.hpp"

namespace favor {

// q: L x d, k: S x d, v: S x dv, out: L x dv. Streams key blocks with a running max and sum per
// query row (online softmax): never forms the L x S matrix, extra memory O(block * (d + dv)).
void exact_attention(ConstMatrixRef q, ConstMatrixRef k, ConstMatrixRef v, MatrixRef out,
                     const AttentionOptions& options = {});
Matrix exact_attention(ConstMatrixRef q, ConstMatrixRef k, ConstMatrixRef v,
                       const AttentionOptions& options = {});

// The L x S probability matrix A (rows sum to 1; zeros above the diagonal when causal).
void attention_matrix(ConstMatrixRef q, ConstMatrixRef k, MatrixRef out,
                      const AttentionOptions& options = {});
Matrix attention_matrix(ConstMatrixRef q, ConstMatrixRef k, const AttentionOptions& options = {});

// The scale in force: options.scale, or 1/sqrt(d). Throws favor::Error if not finite and > 0.
double resolve_scale(const AttentionOptions& options, Index dim);

}  // namespace favor
