// Codebook attention (Transformer-VQ, docs/design.md §7): keys are replaced by codewords, or by
// responsibilities over them, so exp(scale Q K^T) V becomes exp(scale Q C^T) (R^T V): linear time.
//
// A codebook C (c x d) lives in key space: scores are scale * q.c, distances are taken between
// scaled vectors |k~ - c~| with x~ = x sqrt(scale). Responsibilities R (S x c):
//   hard      one-hot nearest codeword (Transformer-VQ); exact when every key is a codeword
//   soft      softmax_y(-|k~ - c~_y|^2 / (2 temperature)) (the GMM-posterior VQ); -> hard as T -> 0
//   gaussian  exp(-|k~ - c~_y|^2 / 2), unnormalized: with C = W / sqrt(scale) for an
//             orthogonal-fixed W this is exactly FAVOR+ positive attention with that W
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "feature_map.hpp"
#include "types.hpp"

namespace favor {

enum class Assignment { hard, soft, gaussian };

// 'hard' | 'soft' | 'gaussian'; throws favor::Error naming `argument` otherwise.
Assignment parse_assignment(const std::string& name, const std::string& argument = "assignment");
const char* to_string(Assignment assignment);

struct CodebookOptions : AttentionOptions {
  Assignment assignment = Assignment::hard;
  double temperature = 1.0;  // soft only; finite and > 0
  Index chunk = 0;  // 0: the default, as in FavorOptions
};

// q: L x d, k: S x d, v: S x dv, codebook: c x d; out: L x dv. Causal attention carries running
// per-code sums of v and of responsibilities over the prefix.
void codebook_attention(ConstMatrixRef codebook, ConstMatrixRef q, ConstMatrixRef k,
                        ConstMatrixRef v, MatrixRef out, const CodebookOptions& options = {});
Matrix codebook_attention(ConstMatrixRef codebook, ConstMatrixRef q, ConstMatrixRef k,
                          ConstMatrixRef v, const CodebookOptions& options = {});

// Grouped-query: query heads qs[h] over one key/value head and one codebook, the keys'
// responsibilities made once for the group.
void codebook_attention(ConstMatrixRef codebook, const std::vector<ConstMatrixRef>& qs, ConstMatrixRef k,
                        ConstMatrixRef v, const std::vector<MatrixRef>& outs, const CodebookOptions& options);

// The L x S matrix of normalized weights sum_y exp(scale q_i.c_y) R_jy (masked when causal).
void codebook_attention_matrix(ConstMatrixRef codebook, ConstMatrixRef q, ConstMatrixRef k,
                               MatrixRef out, const CodebookOptions& options = {});
Matrix codebook_attention_matrix(ConstMatrixRef codebook, ConstMatrixRef q, ConstMatrixRef k,
                                 const CodebookOptions& options = {});

// Index of the nearest codeword of each row of `points` (first one on ties).
std::vector<Index> nearest_codewords(ConstMatrixRef codebook, ConstMatrixRef points);

// The codebook under which 'gaussian' codebook attention equals FAVOR+ with projection W:
// C = W / sqrt(scale).
Matrix codebook_from_projection(ConstMatrixRef projection, double scale);

// A c x d codebook with N(0, sigma^2) entries, deterministic in the seed like projections.
Matrix random_codebook(Index clusters, Index dim, std::uint64_t seed, double sigma = 1.0);

struct KMeansOptions {
  Index clusters = 0;
  Index iterations = 25;  // Lloyd iterations at most; stops early once assignments settle
  std::uint64_t seed = 0;
};

struct KMeansResult {
  Matrix centroids;                // clusters x d
  std::vector<Index> assignment;   // nearest centroid of each point
  std::vector<double> objective;   // sum of squared distances after each assignment step
};

// k-means++ seeding, then Lloyd iterations in double; an emptied cluster is re-seeded at the
// point farthest from its centroid. The objective never increases from one step to the next.
KMeansResult kmeans(ConstMatrixRef points, const KMeansOptions& options);

}  // namespace favor
