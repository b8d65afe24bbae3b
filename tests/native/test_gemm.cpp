// The small GEMM of gemm.hpp (FAVOR+'s products): against a float64 product over shapes that hit
// every tail (rows past a tile of 4 or 6, columns past a strip of kStrip and a vector of kLanes, any
// K >= 0), and against the plain scalar loop bit for bit -- a sequential sum over k per entry,
// the property that makes the SSE, AVX, wasm SIMD and scalar wasm builds agree bit for bit.
// Strided and transposed views of A, accumulation, the lower-triangular form and packing.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include <favor/kernels/gemm.hpp>

namespace {

using favor::Index;
namespace gemm = favor::gemm;

std::vector<float> random_floats(std::size_t n, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(n);
  for (float& f : x) f = normal(rng);
  return x;
}

// A(i, k) = a[i a_rs + k a_cs], Bt(k, j) = b[k ldb + j]: the scalar loop every build must match.
void scalar_gemm(Index M, Index N, Index K, const float* a, Index a_rs, Index a_cs, const float* b, Index ldb, float* c,
                 Index ldc, bool accumulate, bool lower = false) {
  for (Index i = 0; i < M; ++i)
    for (Index j = 0; j < N; ++j) {
      float s = accumulate ? c[i * ldc + j] : 0.0f;
      const Index end = lower ? std::min(K, (i / 4) * 4 + 4 <= M ? (i / 4) * 4 + 4 : i + 1) : K;
      for (Index k = 0; k < end; ++k) s = s + a[i * a_rs + k * a_cs] * b[k * ldb + j];
      c[i * ldc + j] = s;
    }
}

void expect_bits(const std::vector<float>& x, const std::vector<float>& y, const char* what, Index M, Index N,
                 Index K) {
  ASSERT_EQ(x.size(), y.size());
  ASSERT_EQ(0, std::memcmp(x.data(), y.data(), x.size() * sizeof(float)))
      << what << " M=" << M << " N=" << N << " K=" << K;
}

// Each product test runs with every register tile (2, 4 and 6 rows, gemm::set_tile_rows): the same
// bits either way.
struct TileRows {
  explicit TileRows(int rows) { gemm::set_tile_rows(rows); }
  ~TileRows() { gemm::set_tile_rows(4); }
};

const Index kSizes[] = {1, 2, 3, 4, 5, 7, 8, 9, 12, 15, 16, 17, 23, 31, 32, 33, 64, 67};

// Each product three ways: C = A Bt, C += A Bt, and C = diag(row_scale) C + A Bt (the online
// softmax's rescale: each row of C scaled before its sum starts, also in a product of rank 1,
// K = 1, where a row-by-row path serves the plain accumulation).
TEST(Gemm, MatchesFloat64AndScalarLoopOverEveryTail) {
  enum Mode { kOverwrite, kAccumulate, kRowScale };
  for (int rows : {2, 4, 6}) {
    SCOPED_TRACE(rows);
    const TileRows tiles(rows);
    std::mt19937 rng(1234);
    std::uniform_real_distribution<float> factor(0.0f, 1.0f);
    for (Index M : kSizes)
      for (Index N : kSizes)
        for (Index K : {Index(0), Index(1), Index(3), Index(4), Index(9), Index(64), Index(130)}) {
          // A row-major with a padded stride, Bt (K x N) with a padded stride, C with a padded stride.
          const Index lda = K + 3, ldb = N + 5, ldc = N + 2;
          const auto a = random_floats(static_cast<std::size_t>(M * lda), rng);
          const auto b = random_floats(static_cast<std::size_t>(std::max<Index>(K, 1) * ldb), rng);
          const auto c0 = random_floats(static_cast<std::size_t>(M * ldc), rng);
          std::vector<float> row_scale(static_cast<std::size_t>(M));
          for (float& f : row_scale) f = factor(rng);
          for (const Mode mode : {kOverwrite, kAccumulate, kRowScale}) {
            const bool accumulate = mode != kOverwrite;
            // C as the sums start from it
            std::vector<float> start = c0;
            if (mode == kRowScale)
              for (Index i = 0; i < M; ++i)
                for (Index j = 0; j < N; ++j) start[i * ldc + j] = c0[i * ldc + j] * row_scale[i];
            std::vector<float> c = c0, expect = start;
            gemm::gemm(M, N, K, a.data(), lda, 1, b.data(), ldb, c.data(), ldc, accumulate,
                       mode == kRowScale ? row_scale.data() : nullptr);
            scalar_gemm(M, N, K, a.data(), lda, 1, b.data(), ldb, expect.data(), ldc, accumulate);
            expect_bits(c, expect, mode == kRowScale ? "gemm with row_scale" : "gemm", M, N, K);
            for (Index i = 0; i < M; ++i)
              for (Index j = 0; j < ldc; ++j) {
                if (j >= N) {  // padding untouched
                  ASSERT_EQ(c[i * ldc + j], c0[i * ldc + j]);
                  continue;
                }
                double s = accumulate ? start[i * ldc + j] : 0.0, mag = std::abs(s);
                for (Index k = 0; k < K; ++k) {
                  const double t = static_cast<double>(a[i * lda + k]) * b[k * ldb + j];
                  s += t;
                  mag += std::abs(t);
                }
                ASSERT_NEAR(c[i * ldc + j], s, 1e-6 * (mag + 1.0)) << M << " " << N << " " << K;
              }
          }
        }
  }
}

TEST(Gemm, TransposedAAndPackedB) {
  for (int rows : {2, 4, 6}) {
    SCOPED_TRACE(rows);
    const TileRows tiles(rows);
    std::mt19937 rng(99);
    favor::FloatBuffer scratch;
    for (Index M : kSizes)
      for (Index N : kSizes)
        for (Index K : {Index(1), Index(5), Index(32), Index(33)}) {
          // A given transposed (K x M storage, A(i, k) = at[k ldt + i]), as kf^T in the state update.
          const Index ldt = M + 1;
          const auto at = random_floats(static_cast<std::size_t>(K * ldt), rng);
          const auto b = random_floats(static_cast<std::size_t>(K * N), rng);
          std::vector<float> c(static_cast<std::size_t>(M * N), 0.5f), expect = c;
          gemm::gemm(M, N, K, at.data(), 1, ldt, b.data(), N, c.data(), N, true);
          scalar_gemm(M, N, K, at.data(), 1, ldt, b.data(), N, expect.data(), N, true);
          expect_bits(c, expect, "transposed A", M, N, K);

          // C = A B^T with B row-major N x K (gemm_nt packs B).
          const Index lda = K + 2, ldbr = K + 1;
          const auto a = random_floats(static_cast<std::size_t>(M * lda), rng);
          const auto br = random_floats(static_cast<std::size_t>(N * ldbr), rng);
          std::vector<float> bt(static_cast<std::size_t>(K * N));
          for (Index j = 0; j < N; ++j)
            for (Index k = 0; k < K; ++k)
              bt[static_cast<std::size_t>(k * N + j)] = br[static_cast<std::size_t>(j * ldbr + k)];
          std::vector<float> c2(static_cast<std::size_t>(M * N), -1.0f), expect2 = c2;
          gemm::gemm_nt(M, N, K, a.data(), lda, br.data(), ldbr, c2.data(), N, false, scratch);
          scalar_gemm(M, N, K, a.data(), lda, 1, bt.data(), N, expect2.data(), N, false);
          expect_bits(c2, expect2, "gemm_nt", M, N, K);
          // and accumulating into C (N = 1 takes gemm's path, with no packing)
          std::vector<float> c4(static_cast<std::size_t>(M * N), -1.0f), expect4 = c4;
          gemm::gemm_nt(M, N, K, a.data(), lda, br.data(), ldbr, c4.data(), N, true, scratch);
          scalar_gemm(M, N, K, a.data(), lda, 1, bt.data(), N, expect4.data(), N, true);
          expect_bits(c4, expect4, "gemm_nt accumulating", M, N, K);
          // gemm_packed with a scale: each finished sum times it once (the feature map's root).
          scratch.resize(static_cast<std::size_t>(gemm::strips(N) * K * gemm::kStrip));
          gemm::pack_bt(N, K, br.data(), ldbr, scratch.data());
          std::vector<float> c3(static_cast<std::size_t>(M * N), -1.0f);
          gemm::gemm_packed(M, N, K, a.data(), lda, 1, scratch.data(), c3.data(), N, false, 0.37f);
          for (float& x : expect2) x = x * 0.37f;
          expect_bits(c3, expect2, "gemm_packed scaled", M, N, K);
          // With the epilogue (a key chunk's logs): each scaled sum plus its row's term, and the
          // columns' maxima over those, as a separate pass would take them (max(top, x) in vector
          // columns, x > top ? x : top in the rest: the same for these finite values).
          const auto row_add = random_floats(static_cast<std::size_t>(M), rng);
          std::vector<float> column_max(static_cast<std::size_t>(N) + 1, -INFINITY), expect_max = column_max;
          gemm::gemm_packed(M, N, K, a.data(), lda, 1, scratch.data(), c3.data(), N, false, 0.37f,
                            {row_add.data(), column_max.data()});
          for (Index i = 0; i < M; ++i)
            for (Index j = 0; j < N; ++j) {
              float& x = expect2[static_cast<std::size_t>(i * N + j)];
              x = x + row_add[static_cast<std::size_t>(i)];
              expect_max[static_cast<std::size_t>(j)] = std::max(expect_max[static_cast<std::size_t>(j)], x);
            }
          expect_bits(c3, expect2, "gemm_packed with row terms", M, N, K);
          EXPECT_EQ(column_max, expect_max) << M << " " << N << " " << K;  // and nothing past column N
          // Column terms and row maxima (the query features at the keys' shift): each row's
          // maximum is the largest of its kLanes lanes.
          const auto column_add = random_floats(static_cast<std::size_t>(N), rng);
          std::vector<float> row_max(static_cast<std::size_t>(M * gemm::kLanes) + 1, -INFINITY);
          gemm::gemm_packed(M, N, K, a.data(), lda, 1, scratch.data(), c3.data(), N, false, 0.37f,
                            {nullptr, nullptr, column_add.data(), row_max.data()});
          std::vector<float> expect3(static_cast<std::size_t>(M * N));
          scalar_gemm(M, N, K, a.data(), lda, 1, bt.data(), N, expect3.data(), N, false);
          for (Index i = 0; i < M; ++i) {
            float top = -INFINITY;
            for (Index j = 0; j < N; ++j) {
              float& x = expect3[static_cast<std::size_t>(i * N + j)];
              x = x * 0.37f + column_add[static_cast<std::size_t>(j)];
              top = std::max(top, x);
            }
            float got = -INFINITY;
            for (Index l = 0; l < gemm::kLanes; ++l)
              got = std::max(got, row_max[static_cast<std::size_t>(i * gemm::kLanes + l)]);
            ASSERT_EQ(got, top) << "row " << i << ": " << M << " " << N << " " << K;
          }
          expect_bits(c3, expect3, "gemm_packed with column terms", M, N, K);
          EXPECT_EQ(row_max.back(), -INFINITY);  // nothing past the rows
          if (N > 1)
            ASSERT_EQ(scratch.size(),
                      static_cast<std::size_t>(gemm::strips(N) * K * gemm::kStrip));  // one column: no packing
        }
  }
}

// pack_bt's layout, entry by entry: packed[(s K + k) kStrip + j] = B(s kStrip + j, k), zero past N
// (full strips go through 4 x 4 register transposes, the rest and the last K % 4 one by one).
TEST(Gemm, PackBtLayout) {
  std::mt19937 rng(17);
  for (Index N : kSizes)
    for (Index K : {Index(1), Index(4), Index(7), Index(64), Index(66)}) {
      const Index ldb = K + 3;
      const auto b = random_floats(static_cast<std::size_t>(N * ldb), rng);
      std::vector<float> packed(static_cast<std::size_t>(gemm::strips(N) * K * gemm::kStrip), -7.0f);
      gemm::pack_bt(N, K, b.data(), ldb, packed.data());
      for (Index s = 0; s < gemm::strips(N); ++s)
        for (Index k = 0; k < K; ++k)
          for (Index j = 0; j < gemm::kStrip; ++j) {
            const Index row = s * gemm::kStrip + j;
            const float want = row < N ? b[static_cast<std::size_t>(row * ldb + k)] : 0.0f;
            ASSERT_EQ(packed[static_cast<std::size_t>((s * K + k) * gemm::kStrip + j)], want)
                << "N " << N << " K " << K << " strip " << s << " k " << k << " j " << j;
          }
    }
}

TEST(Gemm, LowerTriangularSkipsOnlyZeros) {
  for (int rows : {2, 4, 6}) {
    SCOPED_TRACE(rows);
    const TileRows tiles(rows);
    std::mt19937 rng(5);
    for (Index M : kSizes)
      for (Index N : {Index(1), Index(7), Index(8), Index(64), Index(65)}) {
        const Index K = M;
        auto a = random_floats(static_cast<std::size_t>(M * K), rng);
        for (Index i = 0; i < M; ++i)
          for (Index k = i + 1; k < K; ++k) a[static_cast<std::size_t>(i * K + k)] = 0.0f;
        const auto b = random_floats(static_cast<std::size_t>(K * N), rng);
        std::vector<float> c(static_cast<std::size_t>(M * N), 0.25f), full = c, expect = c;
        gemm::gemm_lower(M, N, K, a.data(), K, 1, b.data(), N, c.data(), N, true);
        gemm::gemm(M, N, K, a.data(), K, 1, b.data(), N, full.data(), N, true);
        scalar_gemm(M, N, K, a.data(), K, 1, b.data(), N, expect.data(), N, true, true);
        expect_bits(c, expect, "gemm_lower", M, N, K);
        expect_bits(c, full, "gemm_lower vs full (finite B: zeros add nothing)", M, N, K);
      }
  }
}

// The causal in-chunk block: C = A B^T on and below the diagonal, as the full product has it.
TEST(Gemm, NtLowerMatchesTheFullProductOnAndBelowTheDiagonal) {
  for (int rows : {2, 4, 6}) {
    SCOPED_TRACE(rows);
    const TileRows tiles(rows);
    std::mt19937 rng(6);
    favor::FloatBuffer scratch;
    for (Index M : kSizes)
      for (Index N : {Index(1), Index(7), Index(8), Index(16), Index(17), Index(33)})
        for (Index K : {Index(1), Index(9), Index(64)}) {
          const Index lda = K + 1, ldb = K + 3, ldc = N + 2;
          const auto a = random_floats(static_cast<std::size_t>(M * lda), rng);
          const auto b = random_floats(static_cast<std::size_t>(N * ldb), rng);
          std::vector<float> lower(static_cast<std::size_t>(M * ldc), -7.0f), full = lower;
          gemm::gemm_nt_lower(M, N, K, a.data(), lda, b.data(), ldb, lower.data(), ldc, scratch);
          gemm::gemm_nt(M, N, K, a.data(), lda, b.data(), ldb, full.data(), ldc, false, scratch);
          for (Index i = 0; i < M; ++i)
            for (Index j = 0; j <= std::min(i, N - 1); ++j)
              ASSERT_EQ(lower[static_cast<std::size_t>(i * ldc + j)], full[static_cast<std::size_t>(i * ldc + j)])
                  << "M=" << M << " N=" << N << " K=" << K << " at " << i << "," << j;
          // the padding past N columns is never written
          for (Index i = 0; i < M; ++i)
            for (Index j = N; j < ldc; ++j) ASSERT_EQ(lower[static_cast<std::size_t>(i * ldc + j)], -7.0f);
        }
  }
}

}  // namespace
