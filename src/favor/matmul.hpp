// Dense products for the layers around attention (a model runner's projections and MLPs), on the
// same register-tiled GEMM as FAVOR+: Eigen 3.4 has no wasm SIMD packet math.
#pragma once

#include "types.hpp"

namespace favor {

struct MatmulOptions {
  // b is [m, k] (the layout of a PyTorch Linear weight) instead of [k, m].
  bool transpose_b = false;
};

// out [..., n, m] = a [..., n, k] b (+ bias [m] on every row). Every entry is a sequential sum
// over k in order, so the result does not depend on the thread count.
std::vector<Index> matmul_dims(const std::vector<Index>& a, const std::vector<Index>& b,
                               const MatmulOptions& options);
void matmul(const ConstTensorView& a, const ConstTensorView& b, const ConstTensorView* bias,
            const TensorView& out, const MatmulOptions& options = {});

}  // namespace favor
