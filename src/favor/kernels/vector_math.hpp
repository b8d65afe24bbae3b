// Elementwise kernels on 4-float vectors (GCC/Clang vector extensions): SSE natively,
// wasm SIMD with -msimd128, and plain scalar code in the non-SIMD wasm build -- the same
// arithmetic in every build, so the SIMD and scalar modules agree bit for bit.
// (Eigen 3.4 has no wasm SIMD backend: its exp/max/sum run one float at a time there.)
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "favor/types.hpp"

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
// a > b ? a : b, lane by lane (b where either is NaN). In wasm SIMD that select is a compare and
// a bitselect, which V8 lowers to four dependent instructions; pmax(b, a) = b < a ? a : b is the
// same function in one (maxps), which matters in the running maxima's chains.
inline f32x4 vmax(f32x4 a, f32x4 b) {
#if defined(__wasm_simd128__)
  return __builtin_wasm_pmax_f32x4(b, a);
#else
  return a > b ? a : b;
#endif
}

// The largest lane, in lane order (the same comparisons as vmax, so the same NaN handling).
inline float max_lanes(f32x4 v) {
  float top = v[0] > v[1] ? v[0] : v[1];
  top = top > v[2] ? top : v[2];
  return top > v[3] ? top : v[3];
}

// Whether madd below is a fused multiply-add instruction in this build.
#if defined(__wasm_relaxed_simd__)
constexpr bool kFusedMultiplyAdd = true;
#else
constexpr bool kFusedMultiplyAdd = false;
#endif

// a * b + c. The relaxed-SIMD wasm build fuses it into one f32x4.relaxed_madd: one rounding where
// the engine has FMA hardware, two where it has not (the instruction may be either; results then
// differ between machines in the last bits). Every other build multiplies, rounds, then adds (the
// library builds with -ffp-contract=off), the same bits everywhere.
template <class V>
inline V madd(V a, V b, V c) {
#if defined(__wasm_relaxed_simd__)
  // clang 14 emits the pre-standard opcode; scripts/relax-wasm.mjs rewrites it after linking to
  // the standard f32x4.relaxed_madd, whose operands (a, b, c) compute a * b + c.
  return __builtin_wasm_fma_f32x4(a, b, c);
#else
  return a * b + c;
#endif
}

// The constants of exp_nonpositive, defined in vector_math.cpp: read from memory, not written as
// vector constants. The V8 of Node 24 and 26 (13.6, 14.6) rebuilds a v128.const at each use inside
// a loop, several instructions apiece, which made this exp much slower there than the same code
// with its constants loaded; Node 22's V8 and Chromium 156 run both alike. A definition in
// another translation unit keeps the compiler from folding them.
namespace exp_constant {
enum : int { p0, p1, p2, p3, p4, magic, log2e, ln2_low, ln2_high, underflow, one, count };
}
extern const float kExpConstants[exp_constant::count];

template <class V>
inline V exp_splat(int i) {
  return V{} + kExpConstants[i];
}

// exp(r) = 1 + r (1 + r P(r)) for |r| <= ln2/2, on any float vector type. P has degree 4 (Cephes'
// expf has 5), fitted by scripts/fit-exp-polynomial.py for the least maximum relative error on
// that range: 0.06 ulp before float rounding, so the whole exp stays within ~1 ulp (tested), as
// Cephes' does, with one multiply-add less. Horner's form to the end: 6 operations, where
// 1 + r + r^2 P(r) takes 7 (r^2 and the last add).
template <class V>
inline V exp_polynomial(V r) {
  using namespace exp_constant;
  V p = exp_splat<V>(p0);
  p = madd(p, r, exp_splat<V>(p1));
  p = madd(p, r, exp_splat<V>(p2));
  p = madd(p, r, exp_splat<V>(p3));
  p = madd(p, r, exp_splat<V>(p4));
  p = madd(p, r, exp_splat<V>(one));
  return madd(p, r, exp_splat<V>(one));
}

// exp(x) for x <= 0, -inf or NaN, on any float vector type: every exponential here is of a value
// minus a maximum over it (softmax weights, feature shifts), so it never needs an overflow path.
// Cephes' range reduction, rounding x log2(e) to nearest by adding 1.5 * 2^23 + 127: the low
// mantissa bits of the sum then hold n + 127, which shifted left by 23 are the bits of 2^n (no
// float -> int conversion, which costs ~10 instructions in wasm; the high bits of 1.5 * 2^23
// shift out). NaN propagates through the arithmetic. Exactly 0 below -87.34 and for -inf. ~24
// operations; positive x is outside its domain (2^n wraps).
template <class V>
inline V exp_nonpositive(V x) {
  typedef std::int32_t I __attribute__((vector_size(sizeof(V))));
  typedef std::uint32_t U __attribute__((vector_size(sizeof(V))));
  using namespace exp_constant;
  const I below = x < exp_splat<V>(underflow);  // false for NaN
  const V m = exp_splat<V>(magic);              // 1.5 * 2^23 + 127
  // Written with madd: the same operations in every build, fused in the relaxed one (where t
  // then rounds the exact x log2(e), and r keeps the products' low bits).
  const V t = madd(x, exp_splat<V>(log2e), m);
  const V n = t - m;  // round(x log2 e), in [-126, 0] where not underflowing
  const V r = madd(n, exp_splat<V>(ln2_low), madd(n, exp_splat<V>(ln2_high), x));  // x - n c1 + n c2
  const V p = exp_polynomial(r);
  const U pow2 = (U)t << 23;  // lanes masked below wrap
  return (V)((I)(p * (V)pow2) & ~below);
}

// x[i] = exp(x[i] - shift) for i < n, where x[i] <= shift (shift is their max, or above it);
// returns the sum of the results (0 without `sum`: one add a vector fewer, where it is not used).
inline float exp_shifted(float* x, Index n, float shift, bool sum = true) {
  const f32x4 s = splat(shift);
  f32x4 acc = splat(0.0f);
  Index i = 0;
  for (; i + 4 <= n; i += 4) {
    const f32x4 e = exp_nonpositive(load(x + i) - s);
    store(x + i, e);
    if (sum) acc += e;
  }
  float total = (acc[0] + acc[1]) + (acc[2] + acc[3]);
  if (i < n) {  // the tail through the same vector code, padded with -inf (-> 0)
    float tail[4] = {-__builtin_inff(), -__builtin_inff(), -__builtin_inff(), -__builtin_inff()};
    std::memcpy(tail, x + i, sizeof(float) * static_cast<std::size_t>(n - i));
    const f32x4 e = exp_nonpositive(load(tail) - s);
    store(tail, e);
    std::memcpy(x + i, tail, sizeof(float) * static_cast<std::size_t>(n - i));
    if (sum) total += (e[0] + e[1]) + (e[2] + e[3]);
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
    top = max_lanes(m);
  }
  for (; i < n; ++i) top = x[i] > top ? x[i] : top;
  return top;
}

// x[i] = exp(x[i] - shift[i]) for i < n (a row minus a per-column shift, each at least its
// column's max).
inline void exp_minus(float* x, const float* shift, Index n) {
  Index i = 0;
  for (; i + 4 <= n; i += 4) store(x + i, exp_nonpositive(load(x + i) - load(shift + i)));
  for (; i < n; ++i) x[i] = exp_nonpositive(splat(x[i] - shift[i]))[0];
}

// out[i] = exp(from[i] - to[i]), the factor that moves a sum kept at shift from[i] to the shift
// to[i] >= from[i]: exactly 1 where they are equal (also both -inf: an empty sum), 0 from -inf.
inline void rescale_factors(float* out, const float* from, const float* to, Index n) {
  Index i = 0;
  for (; i + 4 <= n; i += 4) {
    const f32x4 f = load(from + i), t = load(to + i);
    const f32x4 e = exp_nonpositive(f - t);
    store(out + i, f == t ? splat(1.0f) : e);
  }
  for (; i < n; ++i) out[i] = from[i] == to[i] ? 1.0f : exp_nonpositive(splat(from[i] - to[i]))[0];
}

// out[i] = a[i] < b[i] ? b[i] : a[i] (Eigen's cwiseMax, to the sign of a zero) for i < n: a
// shift joined with another (out may be a or b). Eigen's own loop runs one float at a time in wasm.
inline void max_into(float* out, const float* a, const float* b, Index n) {
  Index i = 0;
  for (; i + 4 <= n; i += 4) {
    const f32x4 x = load(a + i), y = load(b + i);
    store(out + i, x < y ? y : x);
  }
  for (; i < n; ++i) out[i] = a[i] < b[i] ? b[i] : a[i];
}

// The largest a[i] - b[i] for i < n, n >= 1 (how far a shift rises above another).
inline float max_difference(const float* a, const float* b, Index n) {
  Index i = 0;
  float top = a[0] - b[0];
  if (n >= 4) {
    f32x4 m = load(a) - load(b);
    for (i = 4; i + 4 <= n; i += 4) m = vmax(m, load(a + i) - load(b + i));
    top = max_lanes(m);
  }
  for (; i < n; ++i) top = a[i] - b[i] > top ? a[i] - b[i] : top;
  return top;
}

// a[i] == b[i] for every i < n.
inline bool equal(const float* a, const float* b, Index n) {
  i32x4 same = i32x4{} - 1;
  Index i = 0;
  for (; i + 4 <= n; i += 4) same &= load(a + i) == load(b + i);
  bool all = (same[0] & same[1] & same[2] & same[3]) != 0;
  for (; i < n; ++i) all = all && a[i] == b[i];
  return all;
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
  const auto step = [&](Index i, f32x4& top) {
    f32x4 y = load(x + i) + load(add + i);
    if (value) {
      const i32x4 zero = load(value + i) == splat(0.0f);
      y = (f32x4)(((i32x4)splat(lowest) & zero) | ((i32x4)y & ~zero));
    }
    store(x + i, y);
    top = vmax(top, y);
  };
  // Two running maxima: one max chain waits on the latency of each.
  f32x4 top = splat(lowest), top2 = top;
  Index i = 0;
  for (; i + 8 <= n; i += 8) step(i, top), step(i + 4, top2);
  for (; i + 4 <= n; i += 4) step(i, top);
  float result = max_lanes(vmax(top, top2));
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

// out[i] = a x[i] for i < n (out may be x).
inline void scale_into(float* out, float a, const float* x, Index n) {
  const f32x4 av = splat(a);
  Index i = 0;
  for (; i + 4 <= n; i += 4) store(out + i, av * load(x + i));
  for (; i < n; ++i) out[i] = a * x[i];
}

// out[i] = x[i] * y[i] for i < n (out may be x or y).
inline void multiply(float* out, const float* x, const float* y, Index n) {
  Index i = 0;
  for (; i + 4 <= n; i += 4) store(out + i, load(x + i) * load(y + i));
  for (; i < n; ++i) out[i] = x[i] * y[i];
}

// sum[i] += x[i] for i < n (column sums of a row-major matrix, row by row: each column in row order).
inline void add_into(float* sum, const float* x, Index n) {
  Index i = 0;
  for (; i + 4 <= n; i += 4) store(sum + i, load(sum + i) + load(x + i));
  for (; i < n; ++i) sum[i] += x[i];
}

// Sums over rows, each of its terms t(j) for j < n as dot takes them: four running sums (lane k
// takes j = k mod 4), added pairwise, then the tail in order. R rows side by side: one row's chain
// of adds waits on each add's latency (a readout's denominators, the squared norms of the
// feature maps); rows of x are ldx apart. vector_term(row, j) gives
// terms j..j+3, scalar_term(row, j) term j.
template <int R, class VectorTerm, class ScalarTerm>
inline void row_sums(const float* x, Index ldx, Index n, VectorTerm vector_term, ScalarTerm scalar_term, float* out) {
  f32x4 acc[R];
  for (int t = 0; t < R; ++t) acc[t] = splat(0.0f);
  Index j = 0;
  for (; j + 4 <= n; j += 4)
    for (int t = 0; t < R; ++t) acc[t] += vector_term(x + t * ldx, j);
  for (int t = 0; t < R; ++t) {
    float total = (acc[t][0] + acc[t][1]) + (acc[t][2] + acc[t][3]);
    for (Index k = j; k < n; ++k) total += scalar_term(x + t * ldx, k);
    out[t] = total;
  }
}
// The same for any number of rows, four at a time.
template <class VectorTerm, class ScalarTerm>
inline void row_sums(const float* x, Index ldx, Index rows, Index n, VectorTerm vector_term, ScalarTerm scalar_term,
                     float* out) {
  Index i = 0;
  for (; i + 4 <= rows; i += 4) row_sums<4>(x + i * ldx, ldx, n, vector_term, scalar_term, out + i);
  for (; i < rows; ++i) row_sums<1>(x + i * ldx, ldx, n, vector_term, scalar_term, out + i);
}

// out[i] = sum over j of x_i[j] * y[j] (y null: of x_i[j]) for rows x_i = x + i ldx, i < rows.
inline void dot_rows(const float* x, Index ldx, Index rows, const float* y, Index n, float* out) {
  row_sums(x, ldx, rows, n, [y](const float* r, Index j) { return y ? load(r + j) * load(y + j) : load(r + j); },
           [y](const float* r, Index j) { return y ? r[j] * y[j] : r[j]; }, out);
}
inline float dot(const float* x, const float* y, Index n) {
  float out;
  dot_rows(x, 0, 1, y, n, &out);
  return out;
}
inline float sum(const float* x, Index n) { return dot(x, nullptr, n); }

// out[i] = the squared norm of a x_i (rows x_i = x + i ldx scaled by a), summed as dot_rows.
inline void squared_norm_rows(const float* x, Index ldx, Index rows, float a, Index n, float* out) {
  const f32x4 av = splat(a);
  row_sums(x, ldx, rows, n, [av](const float* r, Index j) { const f32x4 y = av * load(r + j); return y * y; },
           [a](const float* r, Index j) { return (a * r[j]) * (a * r[j]); }, out);
}

// True if y[0..n) are all finite, y = x, or x / divisor stored to out (Divide): y * 0 is +-0 for
// finite y and NaN otherwise. The products' bits are or-ed (a one-cycle chain; a running sum's
// add latency would bound the loop), and any exponent bit set means a NaN.
template <bool Divide>
inline bool finite_after(float* out, const float* x, Index n, float divisor) {
  const f32x4 d = splat(divisor);
  i32x4 bits = i32x4{} + 0;
  Index i = 0;
  for (; i + 4 <= n; i += 4) {
    f32x4 y = load(x + i);
    if constexpr (Divide) store(out + i, y = y / d);
    bits |= (i32x4)(y * splat(0.0f));
  }
  std::int32_t any = (bits[0] | bits[1]) | (bits[2] | bits[3]);
  for (; i < n; ++i) {
    float y = x[i];
    if constexpr (Divide) out[i] = y = y / divisor;
    const float z = y * 0.0f;
    std::int32_t b;
    std::memcpy(&b, &z, sizeof b);
    any |= b;
  }
  return (any & 0x7f800000) == 0;
}
inline bool all_finite(const float* x, Index n) { return finite_after<false>(nullptr, x, n, 1.0f); }

// out[i] = x[i] / divisor for i < n (a row of attention over its denominator), and whether the
// results are all finite: the output check without a second pass.
inline bool divide_all_finite(float* out, const float* x, Index n, float divisor) {
  return finite_after<true>(out, x, n, divisor);
}

// max of |x[i]| for i < n (0 for n = 0; NaN is not ordered, see vmax).
inline float max_abs(const float* x, Index n) {
  const i32x4 magnitude = i32x4{} + 0x7fffffff;
  const auto abs = [&](Index i) { return (f32x4)((i32x4)load(x + i) & magnitude); };
  // Four running maxima, as in add_masked_max: one chain would wait on each max's latency.
  f32x4 top[4] = {splat(0.0f), splat(0.0f), splat(0.0f), splat(0.0f)};
  Index i = 0;
  for (; i + 16 <= n; i += 16)
    for (int j = 0; j < 4; ++j) top[j] = vmax(top[j], abs(i + 4 * j));
  for (; i + 4 <= n; i += 4) top[0] = vmax(top[0], abs(i));
  float result = max_lanes(vmax(vmax(top[0], top[1]), vmax(top[2], top[3])));
  for (; i < n; ++i) result = std::fabs(x[i]) > result ? std::fabs(x[i]) : result;
  return result;
}

}  // namespace favor::vec
