// Attention over tensors with leading batch/head dimensions: q [..., L, d], k [..., S, d],
// v [..., S, dv]; every leading dimension must match. Validates shapes and values (finite
// inputs) and throws favor::Error naming the argument; then runs the one-head kernels per head.
#pragma once

#include "codebook.hpp"
#include "exact_attention.hpp"
#include "linear_attention.hpp"
#include "metrics.hpp"
#include "types.hpp"

namespace favor {

Index element_count(const std::vector<Index>& dims, const std::string& argument);

// Output dims of exact/FAVOR attention ([..., L, dv]) and of the matrix forms ([..., L, S]).
std::vector<Index> attention_output_dims(const std::vector<Index>& q, const std::vector<Index>& k,
                                         const std::vector<Index>& v, bool causal);
std::vector<Index> attention_matrix_dims(const std::vector<Index>& q, const std::vector<Index>& k,
                                         bool causal);

// Throws favor::Error(range) naming `argument` if any value is NaN or +-Infinity.
void check_finite(const float* data, Index count, const std::string& argument);

void exact_attention(const ConstTensorView& q, const ConstTensorView& k, const ConstTensorView& v,
                     const TensorView& out, const AttentionOptions& options = {});
void attention_matrix(const ConstTensorView& q, const ConstTensorView& k, const TensorView& out,
                      const AttentionOptions& options = {});
void favor_attention(const FeatureMap& map, const ConstTensorView& q, const ConstTensorView& k,
                     const ConstTensorView& v, const TensorView& out,
                     const FavorOptions& options = {});
void favor_attention_matrix(const FeatureMap& map, const ConstTensorView& q,
                            const ConstTensorView& k, const TensorView& out,
                            const AttentionOptions& options = {});

// Codebook attention: codebook [c, d] shared by every head, or [..., c, d] with q's leading dims.
void codebook_attention(const ConstTensorView& codebook, const ConstTensorView& q,
                        const ConstTensorView& k, const ConstTensorView& v, const TensorView& out,
                        const CodebookOptions& options = {});
void codebook_attention_matrix(const ConstTensorView& codebook, const ConstTensorView& q,
                               const ConstTensorView& k, const TensorView& out,
                               const CodebookOptions& options = {});

// k-means per head: points [..., n, d] -> centroids [..., clusters, d].
std::vector<Index> kmeans_dims(const std::vector<Index>& points, Index clusters);
void kmeans(const ConstTensorView& points, const TensorView& out, const KMeansOptions& options);

// Errors over whole tensors of equal dims [..., L, S] (rows of all heads pooled).
MatrixErrors compare(const ConstTensorView& exact, const ConstTensorView& approx);

}  // namespace favor
