#include "favor/exact_attention.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "favor/engine/exact_block.hpp"
#include "favor/kernels/attention_kernel.hpp"
#include "favor/kernels/gemm.hpp"
#include "favor/parallel.hpp"
#include "favor/threads/thread_plan.hpp"
#include "favor/engine/validate.hpp"
#include "favor/kernels/vector_math.hpp"

namespace favor {

double resolve_scale(const AttentionOptions& options, Index dim) {
  if (!options.scale) return 1.0 / std::sqrt(static_cast<double>(dim));
  const double s = *options.scale;
  if (!std::isfinite(s) || s <= 0.0) throw_range("scale", "expected a finite number > 0, got " + std::to_string(s));
  return s;
}

namespace {
constexpr Index kQueryBlock = 64;
}  // namespace

void exact_attention(ConstMatrixRef q, ConstMatrixRef k, ConstMatrixRef v, MatrixRef out,
                     const AttentionOptions& options) {
  detail::check_head(q, k, &v, options.causal);
  detail::check_out(out, q.rows(), v.cols());
  detail::exact_attention(q, kernel::Keys::row_major(k.data(), k.rows(), k.cols(), k.outerStride()), v, out, options);
}

void detail::exact_attention(ConstMatrixRef q, const kernel::Keys& k, ConstMatrixRef v, MatrixRef out,
                             const AttentionOptions& options) {
  const float scale = static_cast<float>(resolve_scale(options, q.cols()));
  const Index L = q.rows();
  const detail::Visibility visible{options.causal, causal_offset(L, k.rows), options.key_mask,
                                   detail::first_attending_key(options.key_mask, k.rows)};

  // Query blocks are independent: each writes only its rows of out, so any thread count gives
  // the same bits. Scratch is per block, never shared between threads. Where the blocks would not
  // share out evenly among the threads, or would make fewer than kLeastRounds rounds of them,
  // they are cut into pieces (thread_plan.hpp region_pieces): a row's output depends on its row
  // alone, whatever rows share its block.
  // Causal blocks cost more the later they are: hand the costly ones out first.
  // The pieces are whole strips of queries, the rows exact_query_block computes at once.
  using kernel::kStrip;
  const Index blocks = (L + kQueryBlock - 1) / kQueryBlock;
  const Index pieces = region_pieces(blocks, kQueryBlock / kStrip, available_threads(),
                                     std::max<Index>(1, kExactPieceRows / kStrip));
  parallel_for(blocks * pieces, [&](Index bp) {
    const Index block = bp / pieces, b0 = (options.causal ? blocks - 1 - block : block) * kQueryBlock;
    const Index rows = std::min(kQueryBlock, L - b0);
    const auto [s0, s1] = piece_rows(gemm::strips(rows), pieces, bp % pieces);
    const Index r0 = s0 * kStrip, r1 = std::min(rows, s1 * kStrip);
    if (r1 <= r0) return;
    detail::ExactScratch scratch;
    detail::exact_query_block(q, k, v, scale, visible, b0 + r0, r1 - r0, out, scratch);
  });
  detail::check_result(out, "q, k, v");
}

Matrix exact_attention(ConstMatrixRef q, ConstMatrixRef k, ConstMatrixRef v,
                       const AttentionOptions& options) {
  Matrix out(q.rows(), v.cols());
  exact_attention(q, k, v, out, options);
  return out;
}

void attention_matrix(ConstMatrixRef q, ConstMatrixRef k, MatrixRef out,
                      const AttentionOptions& options) {
  detail::check_head(q, k, nullptr, options.causal);
  detail::check_out(out, q.rows(), k.rows());
  const float scale = static_cast<float>(resolve_scale(options, q.cols()));
  out.noalias() = scale * (q * k.transpose());
  const Index offset = causal_offset(q.rows(), k.rows());
  const Index first_key = detail::first_attending_key(options.key_mask, k.rows());
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  for (Index i = 0; i < out.rows(); ++i) {
    const Index visible = options.causal ? i + offset + 1 : out.cols();
    float* row = &out(i, 0);
    if (options.key_mask)
      for (Index j = 0; j < visible; ++j)
        if (!options.key_mask[j]) row[j] = kNegInf;
    out.row(i).tail(out.cols() - visible).setZero();
    if (visible <= first_key) {  // every visible key masked: a row of zeros
      out.row(i).head(visible).setZero();
      continue;
    }
    const float total = vec::exp_shifted(row, visible, vec::max(row, visible));
    out.row(i).head(visible) /= total;
  }
  detail::check_result(out, "q, k");
}

Matrix attention_matrix(ConstMatrixRef q, ConstMatrixRef k, const AttentionOptions& options) {
  Matrix out(q.rows(), k.rows());
  attention_matrix(q, k, out, options);
  return out;
}

}  // namespace favor
