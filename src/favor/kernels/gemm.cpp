#include "favor/kernels/gemm.hpp"

#include <algorithm>
#include <atomic>
#include <type_traits>

#include "favor/kernels/vector_math.hpp"

namespace favor::gemm {

namespace {

std::atomic<int> g_tile_rows{4};

// row_scale from row i on (null stays null).
const float* rows_from(const float* row_scale, Index i) { return row_scale ? row_scale + i : nullptr; }

// k_end of a full product: every row tile sums all of K (so 6-row tiles may take its rows).
struct AllOfK {
  Index K;
  Index operator()(Index, Index) const { return K; }
};

// Columns [0, w) of C, w <= kStrip, over rows [0, M); k_end(i) limits the sum of the row tile
// starting at row i (K, or the lower triangle's i + rows). row_scale (accumulating only): C's
// rows are first multiplied by row_scale[i]. Full strips of a full product take 6-row tiles first
// when set (the lower triangle keeps the 4-row tiles its sums are cut to).
template <class KEnd, class Out = NoEpilogue>
void strip(Index M, Index w, const float* a, Index a_rs, Index a_cs, const float* b, Index ldb, float* c,
           Index ldc, bool accumulate, KEnd k_end, const float* row_scale = nullptr, float scale = 1.0f,
           Out out = {}) {
  auto rows = [&](auto tile4, auto tile1, Index i = 0) {
    for (; i + 4 <= M; i += 4) tile4(k_end(i, 4), a + i * a_rs, c + i * ldc, rows_from(row_scale, i), out.at(i, 0));
    for (; i < M; ++i) tile1(k_end(i, 1), a + i * a_rs, c + i * ldc, rows_from(row_scale, i), out.at(i, 0));
  };
  if (w == kStrip) {
    Index i = 0;
    if constexpr (std::is_same_v<KEnd, AllOfK>)
      if (g_tile_rows.load(std::memory_order_relaxed) == 6) {
        // One 6-row tile fewer where that leaves the rest to whole 4-row tiles: a row left over
        // runs in a 1-row tile (2 accumulators), ~4x the time per row (M = 128: 20 x 6 + 2 x 4
        // rows, not 21 x 6 + 2 single rows).
        Index six = M / 6;
        if (six > 0 && (M - 6 * six) % 4 >= 2) --six;
        for (; i < 6 * six; i += 6)
          tile<6, 2>(k_end(i, 6), a + i * a_rs, a_rs, a_cs, b, ldb, c + i * ldc, ldc, accumulate,
                     rows_from(row_scale, i), scale, kStrip, out.at(i, 0));
      }
    rows([&](Index K, const float* ai, float* ci, const float* rs, Out e) {
           tile<4, 2>(K, ai, a_rs, a_cs, b, ldb, ci, ldc, accumulate, rs, scale, kStrip, e);
         },
         [&](Index K, const float* ai, float* ci, const float* rs, Out e) {
           tile<1, 2>(K, ai, a_rs, a_cs, b, ldb, ci, ldc, accumulate, rs, scale, kStrip, e);
         },
         i);
    return;
  }
  Index j = 0;
  if (w >= kLanes) {
    rows([&](Index K, const float* ai, float* ci, const float* rs, Out e) {
           tile<4, 1>(K, ai, a_rs, a_cs, b, ldb, ci, ldc, accumulate, rs, scale, kStrip, e);
         },
         [&](Index K, const float* ai, float* ci, const float* rs, Out e) {
           tile<1, 1>(K, ai, a_rs, a_cs, b, ldb, ci, ldc, accumulate, rs, scale, kStrip, e);
         });
    j = kLanes;
  }
  for (; j < w; ++j)
    rows([&](Index K, const float* ai, float* ci, const float* rs, Out e) {
           tile<4, 0>(K, ai, a_rs, a_cs, b + j, ldb, ci + j, ldc, accumulate, rs, scale, kStrip, e.at(0, j));
         },
         [&](Index K, const float* ai, float* ci, const float* rs, Out e) {
           tile<1, 0>(K, ai, a_rs, a_cs, b + j, ldb, ci + j, ldc, accumulate, rs, scale, kStrip, e.at(0, j));
         });
}

constexpr Index kWide = 4 * kStrip;  // columns of a single-row tile

// C = [C +] A Bt over all rows and columns, Bt's column j0 at b_at(j0) (a multiple of kStrip),
// its rows ldb and its strips strip_stride floats apart. Single rows (the last M % 4, or M % 2 with
// 2-row tiles) first over whole groups of 4 strips in 1 x 8-vector tiles; with 2-row tiles, row
// pairs over whole pairs of strips in 2 x 4-vector tiles; then every strip over the rows left to it.
template <class BAt, class Out = NoEpilogue>
void product(Index M, Index N, Index K, const float* a, Index a_rs, Index a_cs, BAt b_at, Index ldb,
             Index strip_stride, float* c, Index ldc, bool accumulate, const float* row_scale, float scale = 1.0f,
             Out out = {}) {
  if (K == 1 && accumulate && !row_scale && scale == 1.0f && M > 1 && !Out::kAny) {
    // A rank-1 update (a decode step's key into a prefix state): row by row, C read and written
    // once in order, where the tiles would walk it strip by strip. (With K = 1, Bt's strips are
    // contiguous in either layout.) The same operations as the tiles: vector columns, then the
    // tail one column at a time.
    const float* b = b_at(0);
    const Index vector_columns = N / kLanes * kLanes;
    for (Index i = 0; i < M; ++i) {
      const float x = a[i * a_rs];
      float* ci = c + i * ldc;
      Index j = 0;
      for (; j < vector_columns; j += kLanes)
        kernel::store(ci + j, kernel::madd(kernel::splat(x), kernel::load(b + j), kernel::load(ci + j)));
      for (; j < N; ++j) ci[j] = ci[j] + x * b[j];
    }
    return;
  }
  const AllOfK all{K};
  const bool pairs = g_tile_rows.load(std::memory_order_relaxed) == 2;
  const Index tiled = pairs ? M - M % 2 : M - M % 4, wide = N / kWide * kWide;
  for (Index i = tiled; i < M; ++i)
    for (Index j0 = 0; j0 < wide; j0 += kWide)
      tile<1, 8>(K, a + i * a_rs, a_rs, a_cs, b_at(j0), ldb, c + i * ldc + j0, ldc, accumulate,
                 rows_from(row_scale, i), scale, strip_stride, out.at(i, j0));
  const Index paired = pairs ? N / (2 * kStrip) * (2 * kStrip) : 0;
  for (Index j0 = 0; j0 < paired; j0 += 2 * kStrip)
    for (Index i = 0; i < tiled; i += 2)
      tile<2, 4>(K, a + i * a_rs, a_rs, a_cs, b_at(j0), ldb, c + i * ldc + j0, ldc, accumulate,
                 rows_from(row_scale, i), scale, strip_stride, out.at(i, j0));
  // What is left of each strip: rows [from, to).
  for (Index j0 = 0; j0 < N; j0 += kStrip) {
    const Index from = j0 < paired ? tiled : 0, to = j0 < wide ? tiled : M;
    if (from < to)
      strip(to - from, std::min(kStrip, N - j0), a + from * a_rs, a_rs, a_cs, b_at(j0), ldb, c + from * ldc + j0, ldc,
            accumulate, all, rows_from(row_scale, from), scale, out.at(from, j0));
  }
}

}  // namespace

void set_tile_rows(int rows) { g_tile_rows = rows == 2 || rows == 6 ? rows : 4; }
int tile_rows() { return g_tile_rows; }

void gemm(Index M, Index N, Index K, const float* a, Index a_rs, Index a_cs, const float* b, Index ldb,
          float* c, Index ldc, bool accumulate, const float* row_scale) {
  product(M, N, K, a, a_rs, a_cs, [b](Index j0) { return b + j0; }, ldb, kStrip, c, ldc, accumulate, row_scale);
}

void gemm_lower(Index M, Index N, Index K, const float* a, Index a_rs, Index a_cs, const float* b,
                Index ldb, float* c, Index ldc, bool accumulate) {
  const auto lower = [K](Index i, Index rows) { return std::min(K, i + rows); };
  for (Index j0 = 0; j0 < N; j0 += kStrip)
    strip(M, std::min(kStrip, N - j0), a, a_rs, a_cs, b + j0, ldb, c + j0, ldc, accumulate, lower);
}

namespace {

// 4 rows of B (row stride ldb) from column k on, transposed: dst[c * kStrip + r] = B(r, k + c)
// for r, c < 4 (one 4 x 4 transpose in registers).
inline void transpose_4x4(const float* b, Index ldb, float* dst) {
  using vec::f32x4;
  const f32x4 r0 = vec::load(b), r1 = vec::load(b + ldb), r2 = vec::load(b + 2 * ldb), r3 = vec::load(b + 3 * ldb);
  const f32x4 t0 = __builtin_shufflevector(r0, r1, 0, 4, 1, 5), t1 = __builtin_shufflevector(r2, r3, 0, 4, 1, 5);
  const f32x4 t2 = __builtin_shufflevector(r0, r1, 2, 6, 3, 7), t3 = __builtin_shufflevector(r2, r3, 2, 6, 3, 7);
  vec::store(dst, __builtin_shufflevector(t0, t1, 0, 1, 4, 5));
  vec::store(dst + kStrip, __builtin_shufflevector(t0, t1, 2, 3, 6, 7));
  vec::store(dst + 2 * kStrip, __builtin_shufflevector(t2, t3, 0, 1, 4, 5));
  vec::store(dst + 3 * kStrip, __builtin_shufflevector(t2, t3, 2, 3, 6, 7));
}

}  // namespace

void pack_bt(Index N, Index K, const float* b, Index ldb, float* packed) {
  for (Index s = 0; s * kStrip < N; ++s) {
    float* dst = packed + s * K * kStrip;
    Index k0 = 0;
    if ((s + 1) * kStrip <= N)  // a full strip: 4 x 4 blocks, then the last K % 4 columns below
      for (; k0 + 4 <= K; k0 += 4)
        for (Index j = 0; j < kStrip; j += 4) transpose_4x4(b + (s * kStrip + j) * ldb + k0, ldb, dst + k0 * kStrip + j);
    for (Index j = 0; j < kStrip; ++j) {
      const Index row = s * kStrip + j;
      if (row < N) {
        const float* src = b + row * ldb;
        for (Index k = k0; k < K; ++k) dst[k * kStrip + j] = src[k];
      } else {
        for (Index k = k0; k < K; ++k) dst[k * kStrip + j] = 0.0f;
      }
    }
  }
}

void pack_bt(Index N, Index K, const float* b, Index ldb, FloatBuffer& packed) {
  packed.resize(static_cast<std::size_t>(strips(N) * K * kStrip));
  pack_bt(N, K, b, ldb, packed.data());
}

void gemm_packed(Index M, Index N, Index K, const float* a, Index a_rs, Index a_cs, const float* packed,
                 float* c, Index ldc, bool accumulate, float scale, Epilogue out) {
  const auto strip_at = [packed, K](Index j0) { return packed + j0 / kStrip * K * kStrip; };
  if (out.empty())
    product(M, N, K, a, a_rs, a_cs, strip_at, kStrip, K * kStrip, c, ldc, accumulate, nullptr, scale);
  else
    product(M, N, K, a, a_rs, a_cs, strip_at, kStrip, K * kStrip, c, ldc, accumulate, nullptr, scale, out);
}

void gemm_nt(Index M, Index N, Index K, const float* a, Index lda, const float* b, Index ldb, float* c,
             Index ldc, bool accumulate, FloatBuffer& scratch) {
  if (N == 1) return gemm(M, 1, K, a, lda, 1, b, 1, c, ldc, accumulate);  // B's row is Bt's column: no packing
  pack_bt(N, K, b, ldb, scratch);
  gemm_packed(M, N, K, a, lda, 1, scratch.data(), c, ldc, accumulate);
}

void gemm_nt_lower(Index M, Index N, Index K, const float* a, Index lda, const float* b, Index ldb, float* c,
                   Index ldc, FloatBuffer& scratch) {
  if (N == 1) return gemm(M, 1, K, a, lda, 1, b, 1, c, ldc, false);  // as gemm_nt: every row is on or below
  pack_bt(N, K, b, ldb, scratch);
  const AllOfK all{K};
  for (Index j0 = 0; j0 < std::min(M, N); j0 += kStrip)
    strip(M - j0, std::min(kStrip, N - j0), a + j0 * lda, lda, 1, scratch.data() + j0 * K, kStrip,
          c + j0 * ldc + j0, ldc, false, all);
}

}  // namespace favor::gemm
