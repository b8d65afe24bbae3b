#include "gemm.hpp"

#include <algorithm>

namespace favor::gemm {

namespace {

// Columns [0, w) of C, w <= kStrip, over rows [0, M); k_end(i) limits the sum of the row tile
// starting at row i (K, or the lower triangle's i + rows).
template <class KEnd>
void strip(Index M, Index w, const float* a, Index a_rs, Index a_cs, const float* b, Index ldb, float* c,
           Index ldc, bool accumulate, KEnd k_end) {
  Index i = 0;
  auto rows = [&](auto tile4, auto tile1) {
    for (i = 0; i + 4 <= M; i += 4) tile4(k_end(i, 4), a + i * a_rs, c + i * ldc);
    for (; i < M; ++i) tile1(k_end(i, 1), a + i * a_rs, c + i * ldc);
  };
  if (w == kStrip) {
    rows([&](Index K, const float* ai, float* ci) { tile<4, 2>(K, ai, a_rs, a_cs, b, ldb, ci, ldc, accumulate); },
         [&](Index K, const float* ai, float* ci) { tile<1, 2>(K, ai, a_rs, a_cs, b, ldb, ci, ldc, accumulate); });
    return;
  }
  Index j = 0;
  if (w >= kLanes) {
    rows([&](Index K, const float* ai, float* ci) { tile<4, 1>(K, ai, a_rs, a_cs, b, ldb, ci, ldc, accumulate); },
         [&](Index K, const float* ai, float* ci) { tile<1, 1>(K, ai, a_rs, a_cs, b, ldb, ci, ldc, accumulate); });
    j = kLanes;
  }
  for (; j < w; ++j)
    rows([&](Index K, const float* ai, float* ci) { tile<4, 0>(K, ai, a_rs, a_cs, b + j, ldb, ci + j, ldc, accumulate); },
         [&](Index K, const float* ai, float* ci) { tile<1, 0>(K, ai, a_rs, a_cs, b + j, ldb, ci + j, ldc, accumulate); });
}

}  // namespace

void gemm(Index M, Index N, Index K, const float* a, Index a_rs, Index a_cs, const float* b, Index ldb,
          float* c, Index ldc, bool accumulate) {
  const auto all = [K](Index, Index) { return K; };
  for (Index j0 = 0; j0 < N; j0 += kStrip)
    strip(M, std::min(kStrip, N - j0), a, a_rs, a_cs, b + j0, ldb, c + j0, ldc, accumulate, all);
}

void gemm_lower(Index M, Index N, Index K, const float* a, Index a_rs, Index a_cs, const float* b,
                Index ldb, float* c, Index ldc, bool accumulate) {
  const auto lower = [K](Index i, Index rows) { return std::min(K, i + rows); };
  for (Index j0 = 0; j0 < N; j0 += kStrip)
    strip(M, std::min(kStrip, N - j0), a, a_rs, a_cs, b + j0, ldb, c + j0, ldc, accumulate, lower);
}

void pack_bt(Index N, Index K, const float* b, Index ldb, float* packed) {
  for (Index s = 0; s * kStrip < N; ++s) {
    float* dst = packed + s * K * kStrip;
    for (Index j = 0; j < kStrip; ++j) {
      const Index row = s * kStrip + j;
      if (row < N) {
        const float* src = b + row * ldb;
        for (Index k = 0; k < K; ++k) dst[k * kStrip + j] = src[k];
      } else {
        for (Index k = 0; k < K; ++k) dst[k * kStrip + j] = 0.0f;
      }
    }
  }
}

void gemm_packed(Index M, Index N, Index K, const float* a, Index a_rs, Index a_cs, const float* packed,
                 float* c, Index ldc, bool accumulate) {
  const auto all = [K](Index, Index) { return K; };
  for (Index s = 0; s * kStrip < N; ++s)
    strip(M, std::min(kStrip, N - s * kStrip), a, a_rs, a_cs, packed + s * K * kStrip, kStrip,
          c + s * kStrip, ldc, accumulate, all);
}

void gemm_nt(Index M, Index N, Index K, const float* a, Index lda, const float* b, Index ldb, float* c,
             Index ldc, bool accumulate, FloatBuffer& scratch) {
  scratch.resize(static_cast<std::size_t>(strips(N) * K * kStrip));
  pack_bt(N, K, b, ldb, scratch.data());
  gemm_packed(M, N, K, a, lda, 1, scratch.data(), c, ldc, accumulate);
}

void gemm_nt_lower(Index M, Index N, Index K, const float* a, Index lda, const float* b, Index ldb, float* c,
                   Index ldc, FloatBuffer& scratch) {
  scratch.resize(static_cast<std::size_t>(strips(N) * K * kStrip));
  pack_bt(N, K, b, ldb, scratch.data());
  const auto all = [K](Index, Index) { return K; };
  for (Index j0 = 0; j0 < std::min(M, N); j0 += kStrip)
    strip(M - j0, std::min(kStrip, N - j0), a + j0 * lda, lda, 1, scratch.data() + j0 * K, kStrip,
          c + j0 * ldc + j0, ldc, false, all);
}

}  // namespace favor::gemm
