#include "favor/kernels/hadamard.hpp"

namespace favor::hadamard {

void transform(float* v, Index p, const float* signs) {
  if (signs)
    for (Index t = 0; t < p; ++t) v[t] = v[t] * signs[t];
  butterflies(v, p);
}

namespace {

using vec::f32x4;

// Stages of strides h, 2h, ..., 2^(S-1) h on groups of 2^S elements h apart (each group's
// butterflies need only its own elements), with diag(signs) first where Signed.
template <int S, bool Signed>
void pass(const float* src, float* dst, Index p, Index h, const float* signs) {
  constexpr int G = 1 << S;
  for (Index base = 0; base < p; base += G * h)
    for (Index j = base; j < base + h; ++j) {
      f32x4 x[G];
      for (int g = 0; g < G; ++g) {
        x[g] = vec::load(src + (j + g * h) * kRows);
        if constexpr (Signed) x[g] = x[g] * vec::splat(signs[j + g * h]);
      }
      for (int w = 1; w < G; w *= 2)
        for (int g = 0; g < G; ++g)
          if (!(g & w)) {
            const f32x4 a = x[g], b = x[g + w];
            x[g] = a + b;
            x[g + w] = a - b;
          }
      for (int g = 0; g < G; ++g) vec::store(dst + (j + g * h) * kRows, x[g]);
    }
}

template <bool Signed>
void pass(int stages, const float* src, float* dst, Index p, Index h, const float* signs) {
  switch (stages) {
    case 0: return pass<0, Signed>(src, dst, p, h, signs);
    case 1: return pass<1, Signed>(src, dst, p, h, signs);
    case 2: return pass<2, Signed>(src, dst, p, h, signs);
    default: return pass<3, Signed>(src, dst, p, h, signs);
  }
}

}  // namespace

void transform_rows(const float* src, float* dst, Index p, const float* signs) {
  int left = 0;  // log2 p
  while ((Index{1} << left) < p) ++left;
  // Three stages a pass, the one to two left over in the first (which also reads src and the signs).
  int stages = left % 3 ? left % 3 : left < 3 ? left : 3;
  Index h = 1;
  if (signs) pass<true>(stages, src, dst, p, h, signs);
  else pass<false>(stages, src, dst, p, h, signs);
  for (left -= stages, h <<= stages; left > 0; left -= 3, h <<= 3) pass<false>(3, dst, dst, p, h, nullptr);
}

}  // namespace favor::hadamard
