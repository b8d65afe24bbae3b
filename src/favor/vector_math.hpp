// Elementwise kernels on 4-float vectors (GCC/Clang vector extensions): SSE natively,
// wasm SIMD with -msimd128, and plain scalar code in the non-SIMD wasm build -- the same
// arithmetic in every build, so the SIMD and scalar modules agree bit for bit.
// (Eigen 3.4 has no wasm SIMD backend: its exp/max/sum run one float at a time there.)
#pragma once

#include <cstdint>
#include <cstring>

#include "types.hpp"

namespace favor::vec {

typedef float f32x4 __attribute__((vector_size(16)));
typedef std::int32_t i32x4 __attribute__((vector_size(16)));

inline f32x4 load(const float* p) {
  f32x4 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline void store(float* p, f32x4 v) { std::memcpy(p, &v, sizeof v); }
inline f32x4 splat(float x) { return f32x4{x, x, x, x}; }
inline f32x4 vmax(f32x4 a, f32x4 b) { return a > b ? a : b; }
inline f32x4 vmin(f32x4 a, f32x4 b) { return a < b ? a : b; }

// Cephes' degree-6 polynomial: exp(r) for |r| <= ln2/2, on any float vector type.
template <class V>
inline V exp_polynomial(V r) {
  V p = V{} + 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  return p * (r * r) + r + 1.0f;
}

// exp(x) with Cephes' range reduction and degree-6 polynomial (max error ~2 ulp on
// [-87.3, 88.7]); exactly 0 below -87.34 (so -inf gives 0), +inf above 88.72, NaN for NaN (the
// clamp below would otherwise turn it into a finite number and hide an overflow upstream).
inline f32x4 exp(f32x4 x) {
  const i32x4 nan = x != x;
  const f32x4 lo = splat(-87.33654f), hi = splat(88.72283f);
  const i32x4 underflow = x < lo;
  const i32x4 overflow = x > hi;
  x = vmin(vmax(x, lo), hi);
  // x = n ln2 + r, |r| <= ln2/2
  f32x4 n = x * splat(1.44269504088896341f) + splat(0.5f);
  i32x4 ni = __builtin_convertvector(n, i32x4);
  f32x4 nf = __builtin_convertvector(ni, f32x4);
  const i32x4 fix = nf > n;  // truncation rounded up a negative value: floor it
  nf = nf - (f32x4)((i32x4)splat(1.0f) & fix);
  ni = __builtin_convertvector(nf, i32x4);
  const f32x4 r = x - nf * splat(0.693359375f) + nf * splat(2.12194440e-4f);
  const f32x4 p = exp_polynomial(r);
  // 2^n: n + 127 into the exponent bits (n in [-126, 128] after clamping; 128 overflows below)
  const i32x4 pow2 = (ni + 127) << 23;
  f32x4 y = p * (f32x4)pow2;
  y = (f32x4)((i32x4)y & ~underflow);
  const f32x4 inf = splat(__builtin_inff());
  y = (f32x4)(((i32x4)y & ~overflow) | ((i32x4)inf & overflow));
  return (f32x4)(((i32x4)y & ~nan) | ((i32x4)splat(__builtin_nanf("")) & nan));
}

// x[i] = exp(x[i] - shift) for i < n; returns the sum of the results.
inline float exp_shifted(float* x, Index n, float shift) {
  const f32x4 s = splat(shift);
  f32x4 acc = splat(0.0f);
  Index i = 0;
  for (; i + 4 <= n; i += 4) {
    const f32x4 e = exp(load(x + i) - s);
    store(x + i, e);
    acc += e;
  }
  float total = (acc[0] + acc[1]) + (acc[2] + acc[3]);
  if (i < n) {  // the tail through the same vector code, padded with -inf (-> 0)
    float tail[4] = {-__builtin_inff(), -__builtin_inff(), -__builtin_inff(), -__builtin_inff()};
    std::memcpy(tail, x + i, sizeof(float) * static_cast<std::size_t>(n - i));
    const f32x4 e = exp(load(tail) - s);
    store(tail, e);
    std::memcpy(x + i, tail, sizeof(float) * static_cast<std::size_t>(n - i));
    total += (e[0] + e[1]) + (e[2] + e[3]);
  }
  return total;
}

// max of x[0..n), n >= 1
inline float max(const float* x, Index n) {
  Index i = 0;
  float top = x[0];
  if (n >= 4) {
    f32x4 m = load(x);
    for (i = 4; i + 4 <= n; i += 4) m = vmax(m, load(x + i));
    top = m[0] > m[1] ? m[0] : m[1];
    top = top > m[2] ? top : m[2];
    top = top > m[3] ? top : m[3];
  }
  for (; i < n; ++i) top = x[i] > top ? x[i] : top;
  return top;
}

// x[i] = exp(x[i] - shift[i]) for i < n (a row minus a per-column shift).
inline void exp_minus(float* x, const float* shift, Index n) {
  Index i = 0;
  for (; i + 4 <= n; i += 4) store(x + i, exp(load(x + i) - load(shift + i)));
  for (; i < n; ++i) x[i] = exp(splat(x[i] - shift[i]))[0];
}

// x[i] += a (a per-row constant) and top[i] = max(top[i], x[i]) for i < n: one pass that
// adds a row's log and updates the column maxima.
inline void add_and_max_into(float* x, float a, float* top, Index n) {
  const f32x4 av = splat(a);
  Index i = 0;
  for (; i + 4 <= n; i += 4) {
    const f32x4 y = load(x + i) + av;
    store(x + i, y);
    store(top + i, vmax(load(top + i), y));
  }
  for (; i < n; ++i) {
    x[i] += a;
    top[i] = x[i] > top[i] ? x[i] : top[i];
  }
}

// x[i] = x[i] + add[i], or the lowest float where value[i] == 0 (value may be null: none), for
// i < n; returns the max of the results (the lowest float for n = 0).
inline float add_masked_max(float* x, const float* add, const float* value, Index n) {
  const float lowest = -3.40282347e+38f;
  f32x4 top = splat(lowest);
  Index i = 0;
  for (; i + 4 <= n; i += 4) {
    f32x4 y = load(x + i) + load(add + i);
    if (value) {
      const i32x4 zero = load(value + i) == splat(0.0f);
      y = (f32x4)(((i32x4)splat(lowest) & zero) | ((i32x4)y & ~zero));
    }
    store(x + i, y);
    top = vmax(top, y);
  }
  float result = top[0] > top[1] ? top[0] : top[1];
  result = result > top[2] ? result : top[2];
  result = result > top[3] ? result : top[3];
  for (; i < n; ++i) {
    x[i] = value && value[i] == 0.0f ? lowest : x[i] + add[i];
    result = x[i] > result ? x[i] : result;
  }
  return result;
}

// out[i] = a x[i] + b y[i] for i < n (out may be x or y).
inline void axpby(float* out, float a, const float* x, float b, const float* y, Index n) {
  const f32x4 av = splat(a), bv = splat(b);
  Index i = 0;
  for (; i + 4 <= n; i += 4) store(out + i, av * load(x + i) + bv * load(y + i));
  for (; i < n; ++i) out[i] = a * x[i] + b * y[i];
}

// True if x[0..n) are all finite: x * 0 is 0 for finite x and NaN otherwise.
inline bool all_finite(const float* x, Index n) {
  f32x4 acc = splat(0.0f);
  Index i = 0;
  for (; i + 4 <= n; i += 4) acc += load(x + i) * splat(0.0f);
  float total = (acc[0] + acc[1]) + (acc[2] + acc[3]);
  for (; i < n; ++i) total += x[i] * 0.0f;
  return total == 0.0f;
}

// Every entry of a row-major matrix block: m = exp(m), in place.
inline void exp_inplace(Matrix& m) { exp_shifted(m.data(), m.size(), 0.0f); }

}  // namespace favor::vec
