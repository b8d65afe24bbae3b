#include "favor/features/structured_projection.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <new>
#include <utility>

#include "favor/features/random.hpp"
#include "favor/kernels/hadamard.hpp"
#include "favor/kernels/vector_math.hpp"

namespace favor::structured {

Index padded_dim(Index dim) {
  Index p = 1;
  while (p < dim) {
    // No buffer of p doubles could be allocated past this point (and 2p would overflow Index).
    if (p > std::numeric_limits<Index>::max() / 4) throw std::bad_alloc();
    p *= 2;
  }
  return p;
}

FloatBuffer signs(Index features, Index dim, std::uint64_t seed) {
  const Index p = padded_dim(dim), blocks = (features + dim - 1) / dim;
  // 3 p floats a block (at most 6 per entry of W): checked before the product can overflow Index.
  if (blocks > std::numeric_limits<Index>::max() / 3 / p) throw std::bad_alloc();
  NormalStream stream(seed, 4);
  FloatBuffer s(static_cast<std::size_t>(blocks * 3 * p));
  for (float& x : s) x = stream.uniform() < 0.5 ? -1.0f : 1.0f;
  return s;
}

bool transforms_fit(double norm, Index dim) {
  const double p = static_cast<double>(padded_dim(dim));
  return norm * p * std::sqrt(p) < 1e37;  // false for inf and NaN too
}

namespace {

using vec::f32x4;
constexpr Index R = hadamard::kRows;

// The epilogue's parts as template flags, so that the write-out loops carry no branches.
enum : int { kRowAdd = 1, kColumnMax = 2, kColumnAdd = 4, kRowMax = 8 };

template <int F>
void project_rows(ConstMatrixRef x, Index m, const float* signs, float root, float* c, Index ldc,
                  const gemm::Epilogue& out) {
  const Index rows = x.rows(), d = x.cols(), ldx = x.outerStride(), p = padded_dim(d);
  const Index blocks = (m + d - 1) / d;
  const float scale = root / static_cast<float>(p);
  const f32x4 scale_v = vec::splat(scale);
  FloatBuffer xt(static_cast<std::size_t>(p * R), 0.0f), v(static_cast<std::size_t>(p * R));
  for (Index r0 = 0; r0 < rows; r0 += R) {
    const Index n = std::min(R, rows - r0);
    const float* xr = x.data() + r0 * ldx;
    // The batch's rows interleaved; entries past d (and lanes past n) stay 0.
    Index t = 0;
    if (n == R)
      for (; t + 4 <= d; t += 4) {
        f32x4 col[4];
        hadamard::transpose4(xr + t, ldx, col);
        for (int k = 0; k < 4; ++k) vec::store(xt.data() + (t + k) * R, col[k]);
      }
    for (; t < d; ++t)
      for (Index r = 0; r < R; ++r) xt[static_cast<std::size_t>(t * R + r)] = r < n ? xr[r * ldx + t] : 0.0f;
    f32x4 top[R];
    float top_tail[R];
    for (Index r = 0; r < R; ++r) top[r] = vec::splat(top_tail[r] = std::numeric_limits<float>::lowest());
    for (Index b = 0; b < blocks; ++b) {
      const float* s = signs + b * 3 * p;  // D1, D2, D3
      hadamard::transform_rows(xt.data(), v.data(), p, s + 2 * p);
      hadamard::transform_rows(v.data(), v.data(), p, s + p);
      hadamard::transform_rows(v.data(), v.data(), p, s);
      const Index j0 = b * d, count = std::min(d, m - j0);
      float* cb = c + r0 * ldc + j0;
      Index i = 0;
      for (; i + 4 <= count; i += 4) {
        f32x4 y[4];
        hadamard::transpose4(v.data() + i * R, R, y);  // y[r]: entries i .. i + 3 of row r
        f32x4 column_top;
        if constexpr ((F & kColumnMax) != 0) column_top = vec::load(out.column_max + j0 + i);
        for (Index r = 0; r < n; ++r) {
          f32x4 e = y[r] * scale_v;
          if constexpr ((F & kRowAdd) != 0) e = e + vec::splat(out.row_add[r0 + r]);
          if constexpr ((F & kColumnAdd) != 0) e = e + vec::load(out.column_add + j0 + i);
          vec::store(cb + r * ldc + i, e);
          if constexpr ((F & kColumnMax) != 0) column_top = vec::vmax(column_top, e);
          if constexpr ((F & kRowMax) != 0) top[r] = vec::vmax(top[r], e);
        }
        if constexpr ((F & kColumnMax) != 0) vec::store(out.column_max + j0 + i, column_top);
      }
      for (; i < count; ++i)
        for (Index r = 0; r < n; ++r) {
          float e = v[static_cast<std::size_t>(i * R + r)] * scale;
          if constexpr ((F & kRowAdd) != 0) e = e + out.row_add[r0 + r];
          if constexpr ((F & kColumnAdd) != 0) e = e + out.column_add[j0 + i];
          cb[r * ldc + i] = e;
          if constexpr ((F & kColumnMax) != 0) {
            float& cm = out.column_max[j0 + i];
            cm = e > cm ? e : cm;
          }
          if constexpr ((F & kRowMax) != 0) top_tail[r] = e > top_tail[r] ? e : top_tail[r];
        }
    }
    if constexpr ((F & kRowMax) != 0)
      for (Index r = 0; r < n; ++r) {
        float& rm = out.row_max[(r0 + r) * gemm::kLanes];
        const float a = vec::max_lanes(top[r]), e = a > top_tail[r] ? a : top_tail[r];
        rm = e > rm ? e : rm;
      }
  }
}

// Any other epilogue, after a projection without one: the same operations in the same order as
// the write-out loops (the same bits), in a second pass over c.
void add_epilogue(Index rows, Index m, float* c, Index ldc, const gemm::Epilogue& out) {
  for (Index r = 0; r < rows; ++r) {
    float top = std::numeric_limits<float>::lowest();
    for (Index j = 0; j < m; ++j) {
      float e = c[r * ldc + j];
      if (out.row_add) e = e + out.row_add[r];
      if (out.column_add) e = e + out.column_add[j];
      c[r * ldc + j] = e;
      if (out.column_max) out.column_max[j] = e > out.column_max[j] ? e : out.column_max[j];
      top = e > top ? e : top;
    }
    if (out.row_max) {
      float& rm = out.row_max[r * gemm::kLanes];
      rm = top > rm ? top : rm;
    }
  }
}

}  // namespace

// The epilogues the feature maps use have write-out loops of their own: none, keys' (row_add and
// column_max) and queries' at a shift (column_add and row_max). All 16 combinations made 13 copies
// of these loops that no caller takes, a large part of the wasm module.
void project(ConstMatrixRef x, Index features, const float* signs, float root, float* c, Index ldc,
             const gemm::Epilogue& out) {
  const int flags = (out.row_add ? kRowAdd : 0) | (out.column_max ? kColumnMax : 0) |
                    (out.column_add ? kColumnAdd : 0) | (out.row_max ? kRowMax : 0);
  switch (flags) {
    case 0:
      return project_rows<0>(x, features, signs, root, c, ldc, out);
    case kRowAdd | kColumnMax:
      return project_rows<kRowAdd | kColumnMax>(x, features, signs, root, c, ldc, out);
    case kColumnAdd | kRowMax:
      return project_rows<kColumnAdd | kRowMax>(x, features, signs, root, c, ldc, out);
    default:
      project_rows<0>(x, features, signs, root, c, ldc, {});
      add_epilogue(x.rows(), features, c, ldc, out);
  }
}

}  // namespace favor::structured
