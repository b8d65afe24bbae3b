// Register-tiled micro-kernels of exact attention on 4-float vectors (vector_math.hpp): SSE
// natively, wasm SIMD with -msimd128, scalar code in the non-SIMD wasm build. Every output entry
// is a plain sequential sum (no reassociation, no FMA: the library builds with
// -ffp-contract=off), so each kernel computes exactly what its scalar loop would, in every
// build, and the builds agree bit for bit.
//
// Layouts. A "strip" is kStrip = 8 queries, two f32x4 side by side:
//   qt   the strip's queries transposed, d x 8 (row p holds feature p of the 8 queries), packed
//        once per query block and reused for every key;
//   p    scores, then probabilities, of the strip against n keys, key-major: n x 8.
// Keys k and values v are read in place (row-major, leading dimensions ldk, ldv): scores
// broadcast k[j, p] against a qt row, so no per-key-block packing is needed.
//
// Register budget (x86-64 and V8 both have 16 xmm registers): scores keep 4 keys x 8 queries =
// 8 accumulators + 2 query vectors + 1 broadcast; p.v keeps 4 queries x 8 columns = 8
// accumulators + 2 value vectors + 1 broadcast. Larger tiles spill in V8's register allocator.
#pragma once

#include <cstdint>

#include "types.hpp"
#include "vector_math.hpp"

namespace favor::kernel {

using vec::f32x4;
using vec::load;
using vec::splat;
using vec::store;

constexpr Index kStrip = 8;

// exp(x) for x <= 0, -inf or NaN: the softmax weights exp(score - running max), one per score.
// Cephes' reduction and polynomial as vec::exp (same accuracy), but ~27 operations instead of
// ~42: no overflow path (x <= 0), round-to-nearest of x log2(e) by adding 1.5 * 2^23 (whose low
// mantissa bits then hold the integer, read back as 2^n without a float -> int conversion), and
// NaN left to propagate through the arithmetic. Exactly 0 below -87.34 and for -inf.
inline f32x4 exp_nonpositive(f32x4 x) {
  typedef std::uint32_t u32x4 __attribute__((vector_size(16)));
  const vec::i32x4 underflow = x < splat(-87.33654f);  // false for NaN
  const f32x4 magic = splat(12582912.0f);          // 1.5 * 2^23
  const f32x4 t = x * splat(1.44269504088896341f) + magic;
  const f32x4 n = t - magic;  // round(x log2 e), in [-126, 0] where not underflowing
  const f32x4 r = x - n * splat(0.693359375f) + n * splat(2.12194440e-4f);
  f32x4 p = splat(1.9875691500e-4f);
  p = p * r + splat(1.3981999507e-3f);
  p = p * r + splat(8.3334519073e-3f);
  p = p * r + splat(4.1665795894e-2f);
  p = p * r + splat(1.6666665459e-1f);
  p = p * r + splat(5.0000001201e-1f);
  p = p * (r * r) + r + splat(1.0f);
  // t's bits are 0x4B400000 + n: 2^n is (n + 127) << 23.
  const u32x4 pow2 = ((u32x4)t - (0x4B400000u - 127u)) << 23;  // unsigned: lanes masked below wrap
  return (f32x4)((vec::i32x4)(p * (f32x4)pow2) & ~underflow);
}

// p[r][0..8) = scale * (q_i . k_r) for the 4 keys at k, k + ldk, ... (sum over features in order).
inline void scores_4keys(const float* qt, const float* k, Index ldk, Index d, float scale, float* p) {
  const float *k0 = k, *k1 = k + ldk, *k2 = k + 2 * ldk, *k3 = k + 3 * ldk;
  f32x4 a0 = splat(0.0f), b0 = a0, a1 = a0, b1 = a0, a2 = a0, b2 = a0, a3 = a0, b3 = a0;
  for (Index f = 0; f < d; ++f, qt += kStrip) {
    const f32x4 qa = load(qt), qb = load(qt + 4);
    f32x4 x = splat(k0[f]);
    a0 = a0 + qa * x;
    b0 = b0 + qb * x;
    x = splat(k1[f]);
    a1 = a1 + qa * x;
    b1 = b1 + qb * x;
    x = splat(k2[f]);
    a2 = a2 + qa * x;
    b2 = b2 + qb * x;
    x = splat(k3[f]);
    a3 = a3 + qa * x;
    b3 = b3 + qb * x;
  }
  const f32x4 s = splat(scale);
  store(p, a0 * s), store(p + 4, b0 * s);
  store(p + 8, a1 * s), store(p + 12, b1 * s);
  store(p + 16, a2 * s), store(p + 20, b2 * s);
  store(p + 24, a3 * s), store(p + 28, b3 * s);
}

// The same for one key (the last n % 4 keys of a block).
inline void scores_1key(const float* qt, const float* k, Index d, float scale, float* p) {
  f32x4 a = splat(0.0f), b = a;
  for (Index f = 0; f < d; ++f, qt += kStrip) {
    const f32x4 x = splat(k[f]);
    a = a + load(qt) * x;
    b = b + load(qt + 4) * x;
  }
  store(p, a * splat(scale)), store(p + 4, b * splat(scale));
}

// p (n x 8) = scale * scores of the strip against keys k[0..n).
inline void scores(const float* qt, const float* k, Index ldk, Index n, Index d, float scale, float* p) {
  Index j = 0;
  for (; j + 4 <= n; j += 4) scores_4keys(qt, k + j * ldk, ldk, d, scale, p + j * kStrip);
  for (; j < n; ++j) scores_1key(qt, k + j * ldk, d, scale, p + j * kStrip);
}

// Online softmax step for a strip over one key block: with the running max m[0..8) and sum
// l[0..8), turns p (n x 8 scores) into exp(score - new max) in place, updates m and l, and writes
// to rescale[0..8) the factor exp(old max - new max) the accumulator rows must be multiplied by
// (0 on the first block, where the old max is -inf). Scores of -inf (masked keys) give 0; NaN
// and +inf scores give NaN rows, as they must (the caller reports non-finite results).
inline void softmax_step(float* p, Index n, float* m, float* l, float* rescale) {
  const f32x4 inf = splat(-__builtin_inff());
  f32x4 ma = inf, mb = inf;
  for (Index j = 0; j < n; ++j) {
    ma = vec::vmax(ma, load(p + j * kStrip));
    mb = vec::vmax(mb, load(p + j * kStrip + 4));
  }
  const f32x4 old_a = load(m), old_b = load(m + 4);
  ma = vec::vmax(old_a, ma);
  mb = vec::vmax(old_b, mb);
  f32x4 sa = splat(0.0f), sb = sa;
  for (Index j = 0; j < n; ++j) {
    float* row = p + j * kStrip;
    const f32x4 ea = exp_nonpositive(load(row) - ma), eb = exp_nonpositive(load(row + 4) - mb);
    store(row, ea), store(row + 4, eb);
    sa = sa + ea;
    sb = sb + eb;
  }
  const f32x4 ra = exp_nonpositive(old_a - ma), rb = exp_nonpositive(old_b - mb);
  store(rescale, ra), store(rescale + 4, rb);
  store(l, load(l) * ra + sa), store(l + 4, load(l + 4) * rb + sb);
  store(m, ma), store(m + 4, mb);
}

// acc rows r < 4 (leading dimension lda), columns [0, 8): acc = acc * rescale[r] + sum_j
// p[j][r] v[j] over j < n (in order). p points at lane 0 of the 4 queries in the n x 8 strip.
inline void pv_4x8(const float* p, const float* v, Index ldv, Index n, const float* rescale,
                   float* acc, Index lda) {
  float *c0 = acc, *c1 = acc + lda, *c2 = acc + 2 * lda, *c3 = acc + 3 * lda;
  f32x4 x = splat(rescale[0]);
  f32x4 a0 = load(c0) * x, b0 = load(c0 + 4) * x;
  x = splat(rescale[1]);
  f32x4 a1 = load(c1) * x, b1 = load(c1 + 4) * x;
  x = splat(rescale[2]);
  f32x4 a2 = load(c2) * x, b2 = load(c2 + 4) * x;
  x = splat(rescale[3]);
  f32x4 a3 = load(c3) * x, b3 = load(c3 + 4) * x;
  for (Index j = 0; j < n; ++j, p += kStrip, v += ldv) {
    const f32x4 va = load(v), vb = load(v + 4);
    x = splat(p[0]);
    a0 = a0 + x * va;
    b0 = b0 + x * vb;
    x = splat(p[1]);
    a1 = a1 + x * va;
    b1 = b1 + x * vb;
    x = splat(p[2]);
    a2 = a2 + x * va;
    b2 = b2 + x * vb;
    x = splat(p[3]);
    a3 = a3 + x * va;
    b3 = b3 + x * vb;
  }
  store(c0, a0), store(c0 + 4, b0);
  store(c1, a1), store(c1 + 4, b1);
  store(c2, a2), store(c2 + 4, b2);
  store(c3, a3), store(c3 + 4, b3);
}

// The same for 4 columns.
inline void pv_4x4(const float* p, const float* v, Index ldv, Index n, const float* rescale,
                   float* acc, Index lda) {
  float *c0 = acc, *c1 = acc + lda, *c2 = acc + 2 * lda, *c3 = acc + 3 * lda;
  f32x4 a0 = load(c0) * splat(rescale[0]), a1 = load(c1) * splat(rescale[1]);
  f32x4 a2 = load(c2) * splat(rescale[2]), a3 = load(c3) * splat(rescale[3]);
  for (Index j = 0; j < n; ++j, p += kStrip, v += ldv) {
    const f32x4 va = load(v);
    a0 = a0 + splat(p[0]) * va;
    a1 = a1 + splat(p[1]) * va;
    a2 = a2 + splat(p[2]) * va;
    a3 = a3 + splat(p[3]) * va;
  }
  store(c0, a0), store(c1, a1), store(c2, a2), store(c3, a3);
}

// The same for one column (the last dv % 4 columns): scalar, same operations per entry.
inline void pv_4x1(const float* p, const float* v, Index ldv, Index n, const float* rescale,
                   float* acc, Index lda) {
  float a0 = acc[0] * rescale[0], a1 = acc[lda] * rescale[1];
  float a2 = acc[2 * lda] * rescale[2], a3 = acc[3 * lda] * rescale[3];
  for (Index j = 0; j < n; ++j, p += kStrip, v += ldv) {
    a0 = a0 + p[0] * v[0];
    a1 = a1 + p[1] * v[0];
    a2 = a2 + p[2] * v[0];
    a3 = a3 + p[3] * v[0];
  }
  acc[0] = a0, acc[lda] = a1, acc[2 * lda] = a2, acc[3 * lda] = a3;
}

// acc (4 rows x dv, leading dimension lda) = acc * rescale + p^T v for 4 queries of a strip.
inline void pv(const float* p, const float* v, Index ldv, Index n, Index dv, const float* rescale,
               float* acc, Index lda) {
  Index c = 0;
  for (; c + 8 <= dv; c += 8) pv_4x8(p, v + c, ldv, n, rescale, acc + c, lda);
  if (c + 4 <= dv) pv_4x4(p, v + c, ldv, n, rescale, acc + c, lda), c += 4;
  for (; c < dv; ++c) pv_4x1(p, v + c, ldv, n, rescale, acc + c, lda);
}

}  // namespace favor::kernel
