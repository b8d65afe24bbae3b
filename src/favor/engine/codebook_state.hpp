// Codebook attention's engine entries (internal): a codebook prepared once at one scale, and a
// carried causal state (StateStep) -- what a causal state needs beyond the public signatures.
#pragma once

#include <vector>

#include "favor/codebook.hpp"
#include "favor/engine/prefix_state.hpp"
#include "favor/types.hpp"

namespace favor {

// Grouped-query: query heads qs[h] over one key/value head and one codebook, the keys'
// responsibilities and state made once; `step` as in favor_attention (factored_attention.hpp).
void codebook_attention(ConstMatrixRef codebook, const std::vector<ConstMatrixRef>& qs, ConstMatrixRef k,
                        ConstMatrixRef v, const std::vector<MatrixRef>& outs, const CodebookOptions& options,
                        StateStep* step);

// A codebook made ready for attention at one scale: what every call would otherwise derive from c
// again, which costs more than a decode step's products (a causal state makes it once).
struct ScaledCodebook {
  ScaledCodebook(ConstMatrixRef raw, double scale);  // c, d >= 1
  double scale;
  float root;          // sqrt(scale)
  Matrix codebook;     // c~ = root c (c x d)
  Vector half_sq;      // |c~_y|^2 / 2
  FloatBuffer packed;  // c~^T in the GEMM's strips
  double max_norm;     // max |c_y|
};
// The same on a prepared codebook; the options' scale must resolve to its scale.
void codebook_attention(const ScaledCodebook& codebook, const std::vector<ConstMatrixRef>& qs, ConstMatrixRef k,
                        ConstMatrixRef v, const std::vector<MatrixRef>& outs, const CodebookOptions& options,
                        StateStep* step = nullptr);

}  // namespace favor
