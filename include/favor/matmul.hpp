// Dense products for the layers around attention (a model runner's projections and MLPs), on the
// same register-tiled GEMM as FAVOR+: Eigen 3.4 has no wasm SIMD packet math.
#pragma once

#include <vector>

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

// b checked once and kept in the layout the GEMM reads, for many products with it (a model's
// weights, used at every token): the same bits as matmul with b itself, without checking b's
// values, copying it in and packing it at every call. transpose_b as in MatmulOptions.
class PackedMatrix {
 public:
  PackedMatrix(const ConstTensorView& b, const MatmulOptions& options = {});

  const std::vector<Index>& dims() const { return dims_; }  // b's, as given
  bool transposed() const { return transposed_; }
  std::size_t bytes() const { return 4 * data_.size(); }

 private:
  friend void matmul(const ConstTensorView& a, const PackedMatrix& b, const ConstTensorView* bias,
                     const TensorView& out);
  std::vector<Index> dims_;
  bool transposed_;
  Index k_, m_;
  FloatBuffer data_;  // b [k, m] as is, or b [m, k] packed by gemm::pack_bt
};

std::vector<Index> matmul_dims(const std::vector<Index>& a, const PackedMatrix& b);
void matmul(const ConstTensorView& a, const PackedMatrix& b, const ConstTensorView* bias, const TensorView& out);

}  // namespace favor
