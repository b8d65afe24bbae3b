// Matrix and tensor types shared by the whole core.
#pragma once

#include <Eigen/Core>
#include <cstdint>
#include <optional>
#include <vector>

namespace favor {

using Index = Eigen::Index;

// Row-major like every tensor that crosses the JS boundary: a head's [L, d] block is one Map.
using Matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using MatrixD = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using Vector = Eigen::VectorXf;
using VectorD = Eigen::VectorXd;

// Scratch buffers the SIMD kernels stream through, aligned like Eigen's matrices (16 bytes in
// wasm, where malloc only guarantees 8: vector loads straddling two cache lines slowed the GEMM
// by however much depended on where each buffer happened to land).
using FloatBuffer = std::vector<float, Eigen::aligned_allocator<float>>;

using MatrixRef = Eigen::Ref<Matrix>;
using ConstMatrixRef = Eigen::Ref<const Matrix>;

// A borrowed, row-major, dense float32 tensor: the core never owns or frees it.
struct ConstTensorView {
  const float* data = nullptr;
  std::vector<Index> dims;
};

struct TensorView {
  float* data = nullptr;
  std::vector<Index> dims;
};

// Options shared by every attention call.
struct AttentionOptions {
  bool causal = false;
  // Score scale; default 1/sqrt(d). Must be finite and > 0.
  std::optional<double> scale;
  // One head's key mask: S bytes, 0 = that key is absent (no weight anywhere), else it attends.
  // Null: every key attends. A query that sees no key gets a row of zeros.
  const std::uint8_t* key_mask = nullptr;
};

// Causal attention with L queries and S >= L keys: the queries are the last L positions, so
// query i sees keys j <= i + S - L (bottom-right alignment, as FlashAttention and PyTorch's
// causal_lower_right). L == S is the usual causal mask.
inline Index causal_offset(Index queries, Index keys) { return keys - queries; }

}  // namespace favor
