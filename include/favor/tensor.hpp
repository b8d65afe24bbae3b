// Attention over tensors with leading batch/head dimensions: q [..., Hq, L, d], k [..., Hkv, S, d],
// v [..., Hkv, S, dv]. Leading dims match, except that k and v may have fewer heads than q
// (grouped-query / multi-query attention): Hq = g Hkv, and query head h reads key/value head
// floor(h / g) (ONNX GroupQueryAttention, PyTorch enable_gqa). A key mask [..., S] broadcasts
// against k's leading dims (numpy rules). Validates shapes and values (finite inputs) and throws
// favor::Error naming the argument; then runs the one-head kernels per head.
#pragma once

#include <cstdint>

#include "codebook.hpp"
#include "exact_attention.hpp"
#include "linear_attention.hpp"
#include "matmul.hpp"
#include "metrics.hpp"
#include "types.hpp"

namespace favor {

// A key mask: bytes, 1 = the key attends, 0 = it is absent; dims [..., S]. data null: no mask.
struct ConstMaskView {
  const std::uint8_t* data = nullptr;
  std::vector<Index> dims;
};

// Output dims of exact/FAVOR attention ([..., L, dv]) and of the matrix forms ([..., L, S]).
std::vector<Index> attention_output_dims(const std::vector<Index>& q, const std::vector<Index>& k,
                                         const std::vector<Index>& v, bool causal);
std::vector<Index> attention_matrix_dims(const std::vector<Index>& q, const std::vector<Index>& k,
                                         bool causal);

void exact_attention(const ConstTensorView& q, const ConstTensorView& k, const ConstTensorView& v,
                     const TensorView& out, const AttentionOptions& options = {},
                     const ConstMaskView& key_mask = {});
void attention_matrix(const ConstTensorView& q, const ConstTensorView& k, const TensorView& out,
                      const AttentionOptions& options = {}, const ConstMaskView& key_mask = {});
// Grouped heads share each key/value head's features and state (see favor_attention in
// linear_attention.hpp).
void favor_attention(const FeatureMap& map, const ConstTensorView& q, const ConstTensorView& k,
                     const ConstTensorView& v, const TensorView& out,
                     const FavorOptions& options = {}, const ConstMaskView& key_mask = {});
void favor_attention_matrix(const FeatureMap& map, const ConstTensorView& q,
                            const ConstTensorView& k, const TensorView& out,
                            const AttentionOptions& options = {}, const ConstMaskView& key_mask = {});

// Codebook attention: codebook [c, d] shared by every head, [..., c, d] with q's leading dims (one
// per query head) or with k's (one per key/value head, shared by its group).
void codebook_attention(const ConstTensorView& codebook, const ConstTensorView& q,
                        const ConstTensorView& k, const ConstTensorView& v, const TensorView& out,
                        const CodebookOptions& options = {}, const ConstMaskView& key_mask = {});
void codebook_attention_matrix(const ConstTensorView& codebook, const ConstTensorView& q,
                               const ConstTensorView& k, const TensorView& out,
                               const CodebookOptions& options = {}, const ConstMaskView& key_mask = {});

// k-means per head: points [..., n, d] -> centroids [..., clusters, d].
std::vector<Index> kmeans_dims(const std::vector<Index>& points, Index clusters);
void kmeans(const ConstTensorView& points, const TensorView& out, const KMeansOptions& options);

// Errors over whole tensors of equal dims [..., L, S] (rows of all heads pooled).
MatrixErrors compare(const ConstTensorView& exact, const ConstTensorView& approx);

}  // namespace favor
