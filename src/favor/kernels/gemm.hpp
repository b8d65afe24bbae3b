// A small register-tiled GEMM on the vector types of attention_kernel.hpp (4 floats: SSE natively,
// wasm SIMD with -msimd128, scalar code in the non-SIMD wasm build; 8 floats in native AVX
// builds), for the products of FAVOR+ (Eigen 3.4 has no wasm SIMD packet math: its GEMM runs one
// float at a time there).
//
//     C (M x N) = [C +] A Bt,   A(i, k) = a[i a_rs + k a_cs],   Bt(k, j) = b[k ldb + j]
//
// Every entry is a plain sequential sum over k (starting from 0, or from C when accumulating),
// with no FMA (the library builds with -ffp-contract=off): the same bits in every build, equal to
// the scalar loop
//     for i, j: s = acc ? C(i, j) : 0; for k: s = s + A(i, k) * Bt(k, j); C(i, j) = s
// -- except in the relaxed-SIMD wasm build, whose vector columns take each term with one
// f32x4.relaxed_madd (vec::madd): the same sums, each product rounded or not as the machine fuses.
//
// Tiles: 4 rows of A x 2 vectors of columns (8 accumulators + 2 vectors of Bt + 1 broadcast of
// A, within the 16 registers of x86-64 and V8), or where set (set_tile_rows) 2 rows x 4 vectors
// over pairs of strips (as many accumulators, half the broadcasts per vector of Bt) or 6 rows x 2
// vectors; single rows (the last M % 4 or M % 2, or a whole one-row product, as in decoding) 1 row
// x 8 vectors, as many accumulators again: a 1 x 2 tile leaves the multiply-add units waiting on
// its 2 chains. A is read by broadcasts with any strides (so A can be a transposed view), Bt by
// vector loads of rows. B given row-major as N x K (the form of Q K^T and X W^T) is first packed
// transposed in strips of kStrip columns (pack_bt / gemm_nt).
#pragma once

#include <type_traits>
#include <vector>

#include "favor/kernels/attention_kernel.hpp"

namespace favor::gemm {

using kernel::fv;
using kernel::kLanes;
using kernel::kStrip;

// What a product does with each sum as it stores it, after the scale: adds its row's row_add[i],
// then its column's column_add[j], and keeps the maximum of each column in column_max[j] and of
// each row in row_max[i kLanes + lane] (lane-wise: the row's maximum is the largest of its
// kLanes; the caller initializes both). A consumer such as a key chunk's log magnitudes or the
// query features' row shifts then need not read C again.
struct Epilogue {
  static constexpr bool kAny = true;
  const float* row_add = nullptr;
  float* column_max = nullptr;
  const float* column_add = nullptr;
  float* row_max = nullptr;

  bool empty() const { return !row_add && !column_max && !column_add && !row_max; }
  // The same for the block of C from row i, column j on.
  Epilogue at(Index i, Index j) const {
    return {row_add ? row_add + i : nullptr, column_max ? column_max + j : nullptr,
            column_add ? column_add + j : nullptr, row_max ? row_max + i * kLanes : nullptr};
  }
};
// None at all: the tiles of other products compiled without its branches and pointers (kept in
// registers through the loop, they made FAVOR+ slower).
struct NoEpilogue {
  static constexpr bool kAny = false;
  NoEpilogue at(Index, Index) const { return {}; }
};

// acc[r][v] (rows r < R, column vectors v < V) = init + sum_{k < K} A(r, k) Bt(k, v kLanes + lane),
// in order. Init: zero, or C (accumulate), or C * row_scale[r] (the online softmax rescale), and
// the result times `scale` (exact's scores; 1 is exact), then `out`'s epilogue. V = 0: one scalar
// column. Bt's columns come in strips of kStrip (2 vectors) `strip_stride` floats apart:
// contiguous by default, or the strips of pack_bt (K kStrip apart) for tiles wider than one strip.
template <int R, int V, class Out = NoEpilogue>
inline void tile(Index K, const float* a, Index a_rs, Index a_cs, const float* b, Index ldb, float* c,
                 Index ldc, bool accumulate, const float* row_scale = nullptr, float scale = 1.0f,
                 Index strip_stride = kStrip, Out out = {}) {
  const auto column = [&](int v) { return (v / 2) * strip_stride + (v % 2) * kLanes; };
  if constexpr (V == 0) {
    float acc[R];
    for (int r = 0; r < R; ++r)
      acc[r] = !accumulate ? 0.0f : row_scale ? c[r * ldc] * row_scale[r] : c[r * ldc];
    for (Index k = 0; k < K; ++k, a += a_cs, b += ldb)
      for (int r = 0; r < R; ++r) acc[r] = acc[r] + a[r * a_rs] * b[0];
    for (int r = 0; r < R; ++r) {
      float x = acc[r] * scale;
      if constexpr (Out::kAny) {
        if (out.row_add) x = x + out.row_add[r];
        if (out.column_add) x = x + out.column_add[0];
      }
      c[r * ldc] = x;
      if constexpr (Out::kAny) {
        if (out.column_max) out.column_max[0] = x > out.column_max[0] ? x : out.column_max[0];
        if (out.row_max) out.row_max[r * kLanes] = x > out.row_max[r * kLanes] ? x : out.row_max[r * kLanes];
      }
    }
  } else {
    fv acc[R][V];
    for (int r = 0; r < R; ++r)
      for (int v = 0; v < V; ++v)
        acc[r][v] = !accumulate ? kernel::splat(0.0f)
                    : row_scale ? kernel::load(c + r * ldc + v * kLanes) * kernel::splat(row_scale[r])
                                : kernel::load(c + r * ldc + v * kLanes);
    // A read by columns (a_rs = 1: kf^T in the state update) gets its row offsets as constants,
    // which spares V8 an address computation per row and step.
    const auto sweep = [&](auto rs) {
      for (Index k = 0; k < K; ++k, a += a_cs, b += ldb) {
        fv bv[V];
        for (int v = 0; v < V; ++v) bv[v] = kernel::load(b + column(v));
        for (int r = 0; r < R; ++r) {
          const fv x = kernel::splat(a[r * rs]);
          for (int v = 0; v < V; ++v) acc[r][v] = kernel::madd(x, bv[v], acc[r][v]);
        }
      }
    };
    if (R > 1 && a_rs == 1) sweep(std::integral_constant<Index, 1>{});
    else sweep(a_rs);
    if (scale != 1.0f) {  // (x * 1 is x: most products skip it)
      const fv s = kernel::splat(scale);
      for (int r = 0; r < R; ++r)
        for (int v = 0; v < V; ++v) acc[r][v] *= s;
    }
    if constexpr (Out::kAny) {
      if (out.row_add)
        for (int r = 0; r < R; ++r)
          for (int v = 0; v < V; ++v) acc[r][v] += kernel::splat(out.row_add[r]);
      if (out.column_add)
        for (int v = 0; v < V; ++v) {
          const fv add = kernel::load(out.column_add + v * kLanes);
          for (int r = 0; r < R; ++r) acc[r][v] += add;
        }
    }
    for (int r = 0; r < R; ++r)
      for (int v = 0; v < V; ++v) kernel::store(c + r * ldc + v * kLanes, acc[r][v]);
    if constexpr (Out::kAny) {
      if (out.column_max)
        for (int v = 0; v < V; ++v) {
          fv top = kernel::load(out.column_max + v * kLanes);
          for (int r = 0; r < R; ++r) top = kernel::vmax(top, acc[r][v]);
          kernel::store(out.column_max + v * kLanes, top);
        }
      if (out.row_max)
        for (int r = 0; r < R; ++r) {
          fv top = kernel::load(out.row_max + r * kLanes);
          for (int v = 0; v < V; ++v) top = kernel::vmax(top, acc[r][v]);
          kernel::store(out.row_max + r * kLanes, top);
        }
    }
  }
}

// Rows of the main register tile: 4 (the default: 4 x 2 vectors, 8 accumulators), 2 (2 x 4
// vectors: 8 accumulators, but half the broadcasts of A per load of Bt; a little faster than 4
// rows for FAVOR+ in V8 and SpiderMonkey, slower in the scalar wasm build) or 6 (6 x 2 vectors, 12
// accumulators, which need an engine that keeps them all in registers: faster than 4 rows in
// Chromium 156, much slower in Node 22, whose V8 spills them). The bits are the same
// whichever runs: each entry of C is the same sum in the same order whatever tile computes it.
// Process-wide; set before calls start. Products over the lower triangle keep 4-row tiles.
// (In Node 22 alone, products whose A rows are strided ran much slower with 6 rows; 5-row tiles,
// A packed for constant offsets, and 6 rows for unit-stride A only were all slower in the
// library. docs/toolchain.md has the figures.)
void set_tile_rows(int rows);
int tile_rows();

// C = [C +] A Bt as above, for any M, N, K >= 0. Row tiles of 4 x 2 vectors (or 2 x 4 or 6 x 2, then
// 1 vector, then single columns); single rows 1 x 8 vectors, then as the row tiles; a rank-1 update (K = 1,
// accumulating) row by row, with the same vector and single columns. With row_scale
// (accumulating): C = diag(row_scale) C + A Bt, each row scaled before its sum (the online softmax).
void gemm(Index M, Index N, Index K, const float* a, Index a_rs, Index a_cs, const float* b, Index ldb,
          float* c, Index ldc, bool accumulate, const float* row_scale = nullptr);

// Lower-triangular A (A(i, k) = 0 for k > i, K >= M): each row tile sums k only up to its last
// row; the skipped terms are exact zeros times Bt (the same values for finite Bt).
void gemm_lower(Index M, Index N, Index K, const float* a, Index a_rs, Index a_cs, const float* b,
                Index ldb, float* c, Index ldc, bool accumulate);

// B (N x K, row stride ldb) packed transposed in strips of kStrip columns of C: strip s holds
// packed[(s K + k) kStrip + j] = B(s kStrip + j, k), zero past N. Size strips(N) * K * kStrip.
inline Index strips(Index N) { return (N + kStrip - 1) / kStrip; }
void pack_bt(Index N, Index K, const float* b, Index ldb, float* packed);
// The same into `packed`, sized to strips(N) * K * kStrip floats first.
void pack_bt(Index N, Index K, const float* b, Index ldb, FloatBuffer& packed);

// C = ([C +] A B^T) * scale with B given packed by pack_bt (scale: each sum times it once, as
// it is stored), then `out`'s epilogue (see Epilogue).
void gemm_packed(Index M, Index N, Index K, const float* a, Index a_rs, Index a_cs, const float* packed,
                 float* c, Index ldc, bool accumulate, float scale = 1.0f, Epilogue out = {});

// C = [C +] A B^T, A (M x K, row stride lda) and B (N x K, row stride ldb) row-major; packs B
// into `scratch`.
void gemm_nt(Index M, Index N, Index K, const float* a, Index lda, const float* b, Index ldb, float* c,
             Index ldc, bool accumulate, FloatBuffer& scratch);

// C = A B^T on and below the diagonal (C(i, j) for j <= i), B as in gemm_nt: a strip of kStrip
// columns starting at j0 skips the rows above j0, where all its entries are above the diagonal.
// Entries above the diagonal are left as they were or hold products; the caller zeroes them.
void gemm_nt_lower(Index M, Index N, Index K, const float* a, Index lda, const float* b, Index ldb, float* c,
                   Index ldc, FloatBuffer& scratch);

}  // namespace favor::gemm
