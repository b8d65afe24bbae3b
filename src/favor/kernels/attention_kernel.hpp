// Register-tiled micro-kernels of exact attention on GCC/Clang vector extensions: 4 floats
// (SSE natively, wasm SIMD with -msimd128, scalar code in the non-SIMD wasm build), or 8 floats
// in native builds with AVX (-march=native), where 4 would leave half of each register idle.
// Every output entry is a plain sequential sum (no reassociation, no FMA: the library builds with
// -ffp-contract=off), so each kernel computes exactly what its scalar loop would, in every
// build, and the builds agree bit for bit -- but for the relaxed-SIMD wasm build, where each
// vector multiply-add is one f32x4.relaxed_madd (vec::madd), fused where the machine has FMA.
// (The AVX width processes 16 queries per strip; in causal attention a strip then also visits
// keys masked for its first queries, which add exact zeros: same results for finite inputs.)
//
// Layouts. A "strip" is kStrip = 2 vectors of queries side by side (8, or 16 with AVX):
//   qt   the strip's queries transposed, d x kStrip (row f holds feature f of the strip's
//        queries), packed once per query block and reused for every key;
//   p    scores, then probabilities, of the strip against n keys, key-major: n x kStrip.
// Keys k and values v are read in place (values row-major, leading dimension ldv; keys as Keys
// below): scores broadcast k[j, f] against a qt row, so no per-key-block packing is needed.
//
// Register budget (x86-64 and V8 both have 16 xmm registers): scores keep 4 keys x 2 vectors =
// 8 accumulators + 2 query vectors + 1 broadcast; p.v keeps 4 queries x 2 vectors of columns =
// 8 accumulators + 2 value vectors + 1 broadcast. Larger tiles spill in V8's register allocator.
#pragma once

#include <cstdint>
#include <cstring>

#include "favor/types.hpp"
#include "favor/kernels/vector_math.hpp"

namespace favor::kernel {

#if defined(__AVX__) && !defined(__EMSCRIPTEN__)
typedef float fv __attribute__((vector_size(32)));
inline fv splat(float x) { return fv{x, x, x, x, x, x, x, x}; }
inline fv vmax(fv a, fv b) { return a > b ? a : b; }
#else
typedef vec::f32x4 fv;
using vec::splat;
using vec::vmax;
#endif

constexpr Index kLanes = sizeof(fv) / sizeof(float);
constexpr Index kStrip = 2 * kLanes;  // queries per strip

inline fv load(const float* p) {
  fv v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline void store(float* p, fv v) { std::memcpy(p, &v, sizeof v); }

// The softmax weights exp(score - running max), one per score (x <= 0, -inf or NaN).
using vec::exp_nonpositive;
using vec::madd;

// Keys as the kernels read them: row-major, key j at data + j ld; or packed in strips of kStrip
// keys, gemm::pack_bt's layout (strip t at data + t d kStrip, feature f of key t kStrip + i at
// f kStrip + i), the form an exact causal state caches them in: a single query then reads its
// key blocks straight into the GEMM, packing nothing per step.
inline Index packed_slot(Index j, Index d) { return j / kStrip * d * kStrip + j % kStrip; }

struct Keys {
  const float* data;
  Index rows, d;
  Index ld;  // row-major: floats from one key to the next; 0: packed strips

  static Keys row_major(const float* data, Index rows, Index d, Index ld) { return {data, rows, d, ld}; }
  static Keys packed(const float* data, Index rows, Index d) { return {data, rows, d, 0}; }
  bool is_packed() const { return ld == 0; }
  const float* key(Index j) const { return data + (is_packed() ? packed_slot(j, d) : j * ld); }
};

// Slot j of packed strips (d features) = row[0..d).
inline void put_packed_key(float* packed, Index d, Index j, const float* row) {
  float* dst = packed + packed_slot(j, d);
  for (Index f = 0; f < d; ++f) dst[f * kStrip] = row[f];
}

// Slot `to` of packed strips = slot `from`.
inline void move_packed_key(float* packed, Index d, Index from, Index to) {
  const float* src = packed + packed_slot(from, d);
  float* dst = packed + packed_slot(to, d);
  for (Index f = 0; f < d; ++f) dst[f * kStrip] = src[f * kStrip];
}

// p[r][0..kStrip) = scale * (q_i . k_r) for the 4 keys at k, k + ks, ... (sum over features in
// order), feature f of each FS floats after feature f - 1 (row-major: ks = ldk, FS = 1; packed
// strips: ks = 1, FS = kStrip).
template <Index FS>
inline void scores_4keys(const float* qt, const float* k, Index ks, Index d, float scale, float* p) {
  const float *k0 = k, *k1 = k + ks, *k2 = k + 2 * ks, *k3 = k + 3 * ks;
  fv a0 = splat(0.0f), b0 = a0, a1 = a0, b1 = a0, a2 = a0, b2 = a0, a3 = a0, b3 = a0;
  for (Index f = 0; f < d; ++f, qt += kStrip) {
    const fv qa = load(qt), qb = load(qt + kLanes);
    fv x = splat(k0[f * FS]);
    a0 = madd(qa, x, a0);
    b0 = madd(qb, x, b0);
    x = splat(k1[f * FS]);
    a1 = madd(qa, x, a1);
    b1 = madd(qb, x, b1);
    x = splat(k2[f * FS]);
    a2 = madd(qa, x, a2);
    b2 = madd(qb, x, b2);
    x = splat(k3[f * FS]);
    a3 = madd(qa, x, a3);
    b3 = madd(qb, x, b3);
  }
  const fv s = splat(scale);
  store(p, a0 * s), store(p + kLanes, b0 * s);
  store(p + kStrip, a1 * s), store(p + kStrip + kLanes, b1 * s);
  store(p + 2 * kStrip, a2 * s), store(p + 2 * kStrip + kLanes, b2 * s);
  store(p + 3 * kStrip, a3 * s), store(p + 3 * kStrip + kLanes, b3 * s);
}

// The same for one key (the last n % 4 keys of a block).
template <Index FS>
inline void scores_1key(const float* qt, const float* k, Index d, float scale, float* p) {
  fv a = splat(0.0f), b = a;
  for (Index f = 0; f < d; ++f, qt += kStrip) {
    const fv x = splat(k[f * FS]);
    a = madd(load(qt), x, a);
    b = madd(load(qt + kLanes), x, b);
  }
  store(p, a * splat(scale)), store(p + kLanes, b * splat(scale));
}

// p (n x kStrip) = scale * scores of the strip against keys [k0, k0 + n); packed keys need k0 a
// multiple of 4 (as the key blocks' starts are), so that each group of 4 lies in one strip.
inline void scores(const float* qt, const Keys& k, Index k0, Index n, float scale, float* p) {
  const Index d = k.d;
  Index j = 0;
  if (k.is_packed()) {
    for (; j + 4 <= n; j += 4) scores_4keys<kStrip>(qt, k.key(k0 + j), 1, d, scale, p + j * kStrip);
    for (; j < n; ++j) scores_1key<kStrip>(qt, k.key(k0 + j), d, scale, p + j * kStrip);
  } else {
    for (; j + 4 <= n; j += 4) scores_4keys<1>(qt, k.key(k0 + j), k.ld, d, scale, p + j * kStrip);
    for (; j < n; ++j) scores_1key<1>(qt, k.key(k0 + j), d, scale, p + j * kStrip);
  }
}

// max, or 0 where max is -inf (NaN stays NaN).
inline fv seen_max(fv max) { return max == splat(-__builtin_inff()) ? splat(0.0f) : max; }

// Online softmax step for a strip over one key block: with the running max m[0..kStrip) and sum
// l[0..kStrip), turns p (n x kStrip scores) into exp(score - new max) in place, updates m and l,
// and writes to rescale[0..kStrip) the factor exp(old max - new max) the accumulator rows must be multiplied by
// (0 on the first block, where the old max is -inf). Scores of -inf (masked keys) give 0; NaN
// and +inf scores give NaN rows, as they must (the caller reports non-finite results).
inline void softmax_step(float* p, Index n, float* m, float* l, float* rescale) {
  const fv inf = splat(-__builtin_inff());
  fv ma = inf, mb = inf;
  for (Index j = 0; j < n; ++j) {
    ma = vmax(ma, load(p + j * kStrip));
    mb = vmax(mb, load(p + j * kStrip + kLanes));
  }
  const fv old_a = load(m), old_b = load(m + kLanes);
  ma = vmax(old_a, ma);
  mb = vmax(old_b, mb);
  // What the scores are taken against: the max, or 0 in a query that has seen no key yet (every
  // score so far -inf: a key mask hiding whole blocks), whose weights and rescale are then
  // exp(-inf) = 0 rather than exp(-inf + inf) = NaN. The running max stays -inf.
  const fv za = seen_max(ma), zb = seen_max(mb);
  fv sa = splat(0.0f), sb = sa;
  for (Index j = 0; j < n; ++j) {
    float* row = p + j * kStrip;
    const fv ea = exp_nonpositive(load(row) - za), eb = exp_nonpositive(load(row + kLanes) - zb);
    store(row, ea), store(row + kLanes, eb);
    sa = sa + ea;
    sb = sb + eb;
  }
  const fv ra = exp_nonpositive(old_a - za), rb = exp_nonpositive(old_b - zb);
  store(rescale, ra), store(rescale + kLanes, rb);
  store(l, load(l) * ra + sa), store(l + kLanes, load(l + kLanes) * rb + sb);
  store(m, ma), store(m + kLanes, mb);
}

// acc rows r < 4 (leading dimension lda), columns [0, 2 kLanes): acc = acc * rescale[r] +
// sum_j p[j][r] v[j] over j < n (in order). p points at the first of the 4 queries in the
// n x kStrip strip.
inline void pv_4x2v(const float* p, const float* v, Index ldv, Index n, const float* rescale,
                   float* acc, Index lda) {
  float *c0 = acc, *c1 = acc + lda, *c2 = acc + 2 * lda, *c3 = acc + 3 * lda;
  fv x = splat(rescale[0]);
  fv a0 = load(c0) * x, b0 = load(c0 + kLanes) * x;
  x = splat(rescale[1]);
  fv a1 = load(c1) * x, b1 = load(c1 + kLanes) * x;
  x = splat(rescale[2]);
  fv a2 = load(c2) * x, b2 = load(c2 + kLanes) * x;
  x = splat(rescale[3]);
  fv a3 = load(c3) * x, b3 = load(c3 + kLanes) * x;
  for (Index j = 0; j < n; ++j, p += kStrip, v += ldv) {
    const fv va = load(v), vb = load(v + kLanes);
    x = splat(p[0]);
    a0 = madd(x, va, a0);
    b0 = madd(x, vb, b0);
    x = splat(p[1]);
    a1 = madd(x, va, a1);
    b1 = madd(x, vb, b1);
    x = splat(p[2]);
    a2 = madd(x, va, a2);
    b2 = madd(x, vb, b2);
    x = splat(p[3]);
    a3 = madd(x, va, a3);
    b3 = madd(x, vb, b3);
  }
  store(c0, a0), store(c0 + kLanes, b0);
  store(c1, a1), store(c1 + kLanes, b1);
  store(c2, a2), store(c2 + kLanes, b2);
  store(c3, a3), store(c3 + kLanes, b3);
}

// The same for kLanes columns.
inline void pv_4x1v(const float* p, const float* v, Index ldv, Index n, const float* rescale,
                   float* acc, Index lda) {
  float *c0 = acc, *c1 = acc + lda, *c2 = acc + 2 * lda, *c3 = acc + 3 * lda;
  fv a0 = load(c0) * splat(rescale[0]), a1 = load(c1) * splat(rescale[1]);
  fv a2 = load(c2) * splat(rescale[2]), a3 = load(c3) * splat(rescale[3]);
  for (Index j = 0; j < n; ++j, p += kStrip, v += ldv) {
    const fv va = load(v);
    a0 = madd(splat(p[0]), va, a0);
    a1 = madd(splat(p[1]), va, a1);
    a2 = madd(splat(p[2]), va, a2);
    a3 = madd(splat(p[3]), va, a3);
  }
  store(c0, a0), store(c1, a1), store(c2, a2), store(c3, a3);
}

// The same for one column (the last dv % kLanes columns): scalar, same operations per entry.
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
  for (; c + 2 * kLanes <= dv; c += 2 * kLanes) pv_4x2v(p, v + c, ldv, n, rescale, acc + c, lda);
  if (c + kLanes <= dv) pv_4x1v(p, v + c, ldv, n, rescale, acc + c, lda), c += kLanes;
  for (; c < dv; ++c) pv_4x1(p, v + c, ldv, n, rescale, acc + c, lda);
}

}  // namespace favor::kernel
