// The unnormalized fast Walsh-Hadamard transform H' (entries +-1, H' H' = p I) of a power-of-two
// length p, for the structured (SORF) projection (docs/design.md §2): p log p adds and subtracts
// where a product with a dense p x p matrix takes p^2 multiply-adds.
//
// Batched over rows: kRows rows interleaved, element t of row r at v[t kRows + r], so that every
// butterfly is one vector add and one vector subtract whatever its stride (within one row the
// strides 1 and 2 would need shuffles). A pass takes up to three stages at once on values held in
// registers (8 vectors: one load and one store per element for three stages). Every output is the
// same sum of the same terms in the same order as the scalar twin computes for one row -- stages
// of stride 1, 2, 4, ..., p/2, butterfly (a, b) -> (a + b, a - b) -- so the two agree bit for bit
// in every build (there is no multiply-add to fuse: the signs multiply by +-1, which is exact).
#pragma once

#include "favor/types.hpp"
#include "favor/kernels/vector_math.hpp"

namespace favor::hadamard {

constexpr Index kRows = 4;  // rows per batch: the lanes of vec::f32x4

// The butterflies of H' in place on one row of p values, stages of stride 1, 2, ..., p/2: in float
// here, in double where the sampler builds W itself (integer entries stay exact there).
template <class T>
void butterflies(T* v, Index p) {
  for (Index h = 1; h < p; h *= 2)
    for (Index i = 0; i < p; i += 2 * h)
      for (Index j = i; j < i + h; ++j) {
        const T a = v[j], b = v[j + h];
        v[j] = a + b;
        v[j + h] = a - b;
      }
}

// The scalar twin: v = H' diag(signs) v for one row of p floats (signs: p values +-1, or null).
void transform(float* v, Index p, const float* signs);

// The same for kRows interleaved rows: dst = H' diag(signs) src (p kRows floats each; src may be
// dst).
void transform_rows(const float* src, float* dst, Index p, const float* signs);

// out[c] = (in[c], in[ld + c], in[2 ld + c], in[3 ld + c]): four rows of four floats turned into
// four interleaved elements, or four interleaved elements (ld = kRows) back into rows.
inline void transpose4(const float* in, Index ld, vec::f32x4 out[4]) {
  using vec::f32x4;
  const f32x4 r0 = vec::load(in), r1 = vec::load(in + ld), r2 = vec::load(in + 2 * ld), r3 = vec::load(in + 3 * ld);
  const f32x4 t0 = __builtin_shufflevector(r0, r1, 0, 4, 1, 5), t1 = __builtin_shufflevector(r2, r3, 0, 4, 1, 5);
  const f32x4 t2 = __builtin_shufflevector(r0, r1, 2, 6, 3, 7), t3 = __builtin_shufflevector(r2, r3, 2, 6, 3, 7);
  out[0] = __builtin_shufflevector(t0, t1, 0, 1, 4, 5);
  out[1] = __builtin_shufflevector(t0, t1, 2, 3, 6, 7);
  out[2] = __builtin_shufflevector(t2, t3, 0, 1, 4, 5);
  out[3] = __builtin_shufflevector(t2, t3, 2, 3, 6, 7);
}

}  // namespace favor::hadamard
