#include "favor/engine/exact_block.hpp"

#include <algorithm>
#include <limits>

#include "favor/kernels/attention_kernel.hpp"
#include "favor/kernels/gemm.hpp"

namespace favor::detail {

namespace {
using kernel::kStrip;

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// Causal: key k0 + j is hidden from the query at position first + i when k0 + j > first + i.
void mask_future(float* p, Index n, Index k0, Index first) {
  for (Index j = std::max<Index>(0, first + 1 - k0); j < n; ++j)
    for (Index i = 0; i < kStrip; ++i)
      if (k0 + j > first + i) p[j * kStrip + i] = kNegInf;
}

// Masked keys are hidden from every query.
void mask_keys(float* p, Index n, const std::uint8_t* mask) {
  for (Index j = 0; j < n; ++j)
    if (!mask[j])
      for (Index i = 0; i < kStrip; ++i) p[j * kStrip + i] = kNegInf;
}

// dst = acc / total, the output row of a query that sees the keys [0, key_end). A row that sees
// no key (all masked) is zeros by definition (its sum is 0, so acc / total would be NaN); a row
// whose scores overflowed to -inf stays NaN and is reported.
void write_row(const float* acc, float total, Index key_end, const Visibility& visible, float* dst, Index dv) {
  if (key_end <= visible.first_key) {
    std::fill(dst, dst + dv, 0.0f);
    return;
  }
  for (Index c = 0; c < dv; ++c) dst[c] = acc[c] / total;
}

// One query (decoding, n = 1 per head): the arithmetic of its lane in a strip, with the keys
// across the vector lanes instead of a strip's 2 vectors of queries, 1 of them real. Each score
// is summed over features in order with the same multiply-adds (gemm's tiles, on the key block
// packed transposed and padded to whole strips, so that no key takes the scalar path), the
// weights and their sum go in key order, and p.v is gemm's row-scaled accumulate: the same bits
// as the query in any strip. Keys past the query (causal) are not visited: in a strip they add
// exact zeros.
void exact_one_query(ConstMatrixRef q, const kernel::Keys& k, ConstMatrixRef v, float scale, const Visibility& visible,
                     Index qi, MatrixRef out, ExactScratch& s) {
  const Index d = q.cols(), dv = v.cols();
  const Index position = qi + (visible.causal ? visible.offset : 0);
  const Index key_end = visible.causal ? std::min(k.rows, position + 1) : k.rows;
  if (!k.is_packed()) s.qt.resize(static_cast<std::size_t>(gemm::strips(kKeyBlock) * d * kStrip));
  s.p.resize(static_cast<std::size_t>(gemm::strips(kKeyBlock) * kStrip));
  s.acc.assign(static_cast<std::size_t>(dv), 0.0f);
  float max = kNegInf, sum = 0.0f;
  const float* query = q.data() + qi * q.outerStride();
  for (Index k0 = 0; k0 < key_end; k0 += kKeyBlock) {
    const Index n = std::min(key_end, k0 + kKeyBlock) - k0, padded = gemm::strips(n) * kStrip;
    float* p = s.p.data();
    // (k0 is a multiple of kKeyBlock, so of kStrip: the block's packed strips start at key(k0).)
    const float* packed = k.is_packed() ? k.key(k0) : s.qt.data();
    if (!k.is_packed()) gemm::pack_bt(n, d, k.key(k0), k.ld, s.qt.data());
    gemm::gemm_packed(1, padded, d, query, d, 1, packed, p, padded, false);
    for (Index j = 0; j < n; ++j) p[j] *= scale;
    if (visible.key_mask)
      for (Index j = 0; j < n; ++j)
        if (!visible.key_mask[k0 + j]) p[j] = kNegInf;
    const float top = std::max(max, vec::max(p, n));
    const float against = kernel::seen_max(kernel::splat(top))[0];
    vec::exp_shifted(p, n, against, false);  // (its lane-wise sum is not the key order a strip lane sums in)
    float block_sum = 0.0f;
    for (Index j = 0; j < n; ++j) block_sum = block_sum + p[j];
    const float rescale = vec::exp_nonpositive(vec::splat(max - against))[0];
    sum = sum * rescale + block_sum;
    max = top;
    gemm::gemm(1, dv, n, p, n, 1, v.data() + k0 * v.outerStride(), v.outerStride(), s.acc.data(), dv, true, &rescale);
  }
  write_row(s.acc.data(), sum, key_end, visible, out.data() + qi * out.outerStride(), dv);
}
}  // namespace

Index first_attending_key(const std::uint8_t* mask, Index S) {
  if (!mask) return 0;
  Index j = 0;
  while (j < S && !mask[j]) ++j;
  return j;
}

void exact_query_block(ConstMatrixRef q, const kernel::Keys& k, ConstMatrixRef v, float scale,
                       const Visibility& visible, Index q0, Index nq, MatrixRef out, ExactScratch& s) {
  if (nq == 1) return exact_one_query(q, k, v, scale, visible, q0, out, s);
  const bool causal = visible.causal;
  const Index d = q.cols(), dv = v.cols(), strips = (nq + kStrip - 1) / kStrip;
  const Index rows = strips * kStrip;
  s.qt.resize(static_cast<std::size_t>(rows * d));
  s.p.resize(static_cast<std::size_t>(kKeyBlock * kStrip));
  s.acc.assign(static_cast<std::size_t>(rows * dv), 0.0f);
  s.max.assign(static_cast<std::size_t>(rows), -std::numeric_limits<float>::infinity());
  s.sum.assign(static_cast<std::size_t>(rows), 0.0f);
  s.rescale.resize(kStrip);
  // Q^T of the block in strips: qt[(t d + f) kStrip + i] = q(q0 + t kStrip + i, f), 0 past the block
  // (their scores are finite and their results dropped).
  gemm::pack_bt(nq, d, q.data() + q0 * q.outerStride(), q.outerStride(), s.qt.data());

  // Positions: query i is at i + offset (0 unless causal with fewer queries than keys).
  const Index offset = causal ? visible.offset : 0;
  const Index key_end = causal ? q0 + nq + offset : k.rows;
  for (Index k0 = 0; k0 < key_end; k0 += kKeyBlock) {
    const Index block_end = std::min(key_end, k0 + kKeyBlock);
    for (Index t = 0; t < strips; ++t) {
      const Index first = q0 + t * kStrip + offset;  // the strip's first query's position
      // Causal: no key after the strip's last query; strips before this block see none of it.
      const Index end = causal ? std::min(block_end, first + kStrip) : block_end;
      if (end <= k0) continue;
      const Index n = end - k0;
      float* p = s.p.data();
      kernel::scores(s.qt.data() + t * d * kStrip, k, k0, n, scale, p);
      if (causal && end > first) mask_future(p, n, k0, first);
      if (visible.key_mask) mask_keys(p, n, visible.key_mask + k0);
      kernel::softmax_step(p, n, s.max.data() + t * kStrip, s.sum.data() + t * kStrip, s.rescale.data());
      const float* vb = v.data() + k0 * v.outerStride();
      for (Index h = 0; h < kStrip && t * kStrip + h < nq; h += 4)
        kernel::pv(p + h, vb, v.outerStride(), n, dv, s.rescale.data() + h,
                   s.acc.data() + (t * kStrip + h) * dv, dv);
    }
  }
  for (Index i = 0; i < nq; ++i)
    write_row(s.acc.data() + i * dv, s.sum[static_cast<std::size_t>(i)],
              causal ? std::min(k.rows, q0 + i + offset + 1) : k.rows, visible,
              out.data() + (q0 + i) * out.outerStride(), dv);
}

}  // namespace favor::detail
