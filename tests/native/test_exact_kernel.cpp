// The blocked exact-attention kernel (exact_block.cpp on the micro-kernels of
// attention_kernel.hpp): against the float64 softmax of reference.hpp over many shapes that hit
// every tail (queries past a strip of 8, keys past a group of 4 and a block of kKeyBlock, value
// columns past 8 and 4), and the micro-kernels against plain scalar loops bit for bit -- the
// property that makes the SSE, wasm SIMD and scalar wasm builds agree bit for bit.
//
// Tolerance 1e-5 of the largest reference entry (as test_exact_attention.cpp): scores here stay
// below ~10 in magnitude, so a float32 dot over d <= 130 terms is off by ~1e-6 absolute, which
// exp turns into ~1e-6 relative; sums over S <= 300 keys add ~sqrt(S) * 6e-8. A masking, tail or
// rescaling mistake moves entries by >= 1e-3.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include <favor/kernels/attention_kernel.hpp>
#include <favor/engine/exact_block.hpp>

#include "reference.hpp"

namespace {

using favor::Index;
using ref::MatD;
using ref::MatF;
namespace kernel = favor::kernel;

constexpr double kTol = 1e-5;
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

favor::kernel::Keys row_major(const MatF& k) { return favor::kernel::Keys::row_major(k.data(), k.rows(), k.cols(), k.cols()); }

MatF run_kernel(const MatF& q, const MatF& k, const MatF& v, float scale, bool causal) {
  MatF out = MatF::Constant(q.rows(), v.cols(), -7.0f);
  favor::detail::ExactScratch scratch;
  for (Index q0 = 0; q0 < q.rows(); q0 += 64)  // the query blocks of exact_attention
    favor::detail::exact_query_block(q, row_major(k), v, scale, {causal, k.rows() - q.rows(), nullptr}, q0,
                                     std::min<Index>(64, q.rows() - q0), out, scratch);
  return out;
}

void check_shape(Index L, Index S, Index d, Index dv, bool causal, unsigned seed) {
  SCOPED_TRACE(testing::Message() << "L=" << L << " S=" << S << " d=" << d << " dv=" << dv
                                  << " causal=" << causal);
  std::mt19937 gen(seed);
  const MatF q = ref::normal_matrix(L, d, gen), k = ref::normal_matrix(S, d, gen);
  const MatF v = ref::normal_matrix(S, dv, gen);
  const double scale = ref::default_scale(d);
  const MatD expected = ref::softmax_output(ref::to_double(q), ref::to_double(k), ref::to_double(v), scale, causal);
  const MatF out = run_kernel(q, k, v, static_cast<float>(scale), causal);
  EXPECT_LT(ref::max_rel(ref::to_double(out), expected), kTol);
  // The public entry point runs the same kernel: identical bits.
  favor::AttentionOptions o;
  o.causal = causal;
  EXPECT_TRUE(favor::exact_attention(q, k, v, o) == out);
}

TEST(ExactKernel, EveryTailBidirectional) {
  unsigned seed = 1;
  for (Index L : {1, 5, 8, 9, 63, 64, 65, 130})
    for (Index S : {1, 3, 4, 7, 127, 128, 129, 300})
      for (Index d : {1, 3, 4, 9, 64, 130}) {
        const Index dv = d == 64 ? 64 : (d % 7) + 9 * (seed % 3);
        check_shape(L, S, d, dv, false, seed++);
      }
}

TEST(ExactKernel, ValueWidths) {
  unsigned seed = 1000;
  for (Index dv : {1, 2, 3, 4, 5, 7, 8, 9, 11, 12, 13, 16, 17, 31, 64, 65, 127, 130})
    check_shape(70, 131, 16, dv, false, seed++);
}

TEST(ExactKernel, EveryTailCausal) {
  unsigned seed = 2000;
  for (Index L : {1, 2, 7, 8, 9, 63, 64, 65, 127, 128, 129, 136, 200, 300})
    for (Index d : {1, 5, 64}) check_shape(L, L, d, d == 64 ? 64 : 6, true, seed++);
}

// Keys whose score with every query grows with the key index: the running max rises in every
// key block, so each block rescales the accumulated sums and values (by factors well below 1).
TEST(ExactKernel, RunningMaxRisesAcrossKeyBlocks) {
  std::mt19937 gen(3000);
  const Index L = 40, S = 5 * favor::detail::kKeyBlock + 3, d = 16;
  MatF q = ref::normal_matrix(L, d, gen, 0.1), k = ref::normal_matrix(S, d, gen, 0.1);
  const MatF v = ref::normal_matrix(S, 8, gen);
  q.col(0).array() += 1.0f;
  for (Index j = 0; j < S; ++j) k(j, 0) = 8.0f * static_cast<float>(j) / static_cast<float>(S);
  for (bool causal : {false, true}) {
    const MatF kk = causal ? MatF(k.topRows(L)) : k, vv = causal ? MatF(v.topRows(L)) : v;
    const MatD expected = ref::softmax_output(ref::to_double(q), ref::to_double(kk), ref::to_double(vv), 1.0, causal);
    EXPECT_LT(ref::max_rel(ref::to_double(run_kernel(q, kk, vv, 1.0f, causal)), expected), kTol) << causal;
  }
}

// Extra memory does not grow with the number of keys (the L x S matrix is never formed).
TEST(ExactKernel, ScratchIndependentOfKeyCount) {
  std::mt19937 gen(3100);
  const MatF q = ref::normal_matrix(64, 8, gen);
  std::size_t floats = 0;
  for (Index S : {10, 5000}) {
    const MatF k = ref::normal_matrix(S, 8, gen), v = ref::normal_matrix(S, 8, gen);
    MatF out(64, 8);
    favor::detail::ExactScratch s;
    favor::detail::exact_query_block(q, row_major(k), v, 0.3f, {}, 0, 64, out, s);
    const std::size_t total = s.qt.capacity() + s.p.capacity() + s.acc.capacity() + s.max.capacity() +
                              s.sum.capacity() + s.rescale.capacity();
    if (floats == 0) floats = total;
    EXPECT_EQ(total, floats) << S;
  }
}

// A NaN key poisons exactly the rows that see it (the running max must not drop it); a score of
// -inf (q.k overflowing below) weighs 0 like a masked key; +inf makes the row NaN. exact_attention
// turns any of these into an error (detail::check_result); the kernel itself must not hide them.
TEST(ExactKernel, NonFiniteScores) {
  std::mt19937 gen(3200);
  const Index L = 20;
  MatF q = ref::normal_matrix(L, 4, gen), k = ref::normal_matrix(L, 4, gen);
  const MatF v = ref::normal_matrix(L, 3, gen);
  k(13, 2) = kNaN;
  for (bool causal : {false, true}) {
    const MatF out = run_kernel(q, k, v, 0.5f, causal);
    for (Index i = 0; i < L; ++i)
      for (Index c = 0; c < 3; ++c) EXPECT_EQ(std::isnan(out(i, c)), !causal || i >= 13) << i << "," << causal;
  }
  MatF big(1, 2), keys(2, 2), vals(2, 2);
  big << 3e19f, 3e19f;
  keys << -3e19f, -3e19f, 1.0f, 1.0f;
  vals << 5.0f, 6.0f, 7.0f, 8.0f;
  const MatF out = run_kernel(big, keys, vals, 1e-20f, false);  // scores -inf and 0.6
  EXPECT_EQ(out(0, 0), 7.0f);
  EXPECT_EQ(out(0, 1), 8.0f);
  keys(0, 0) = keys(0, 1) = 3e19f;  // +inf
  EXPECT_TRUE(std::isnan(run_kernel(big, keys, vals, 1e-20f, false)(0, 0)));
  EXPECT_THROW(favor::exact_attention(big, keys, vals), favor::Error);
}

// ---- micro-kernels against scalar loops, bit for bit ------------------------------------------

std::vector<float> normal_buffer(std::size_t n, std::mt19937& gen) {
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> x(n);
  for (float& y : x) y = dist(gen);
  return x;
}

float scalar_exp(float x) { return kernel::exp_nonpositive(kernel::splat(x))[0]; }

// Equal values, or both NaN.
bool same(float a, float b) { return std::isnan(a) ? std::isnan(b) : a == b; }

// The softmax exponential against double exp over its whole domain: within 4 ulp (the
// polynomial is ~1 ulp; 4 leaves room for the reduction while a wrong constant or exponent is
// off by far more), exact at 0, 0 below the float range, -inf -> 0, NaN -> NaN.
TEST(ExactKernel, ExpNonPositive) {
  double worst = 0.0;
  for (int i = 0; i <= 873365; ++i) {
    const float x = -1e-4f * static_cast<float>(i);
    const double expected = std::exp(static_cast<double>(x));
    const double got = scalar_exp(x);
    if (expected > 1.2e-38) worst = std::max(worst, std::abs(got - expected) / expected);
    else ASSERT_LE(std::abs(got - expected), 1.2e-38 * 4 * 6e-8 + 1e-45) << x;  // subnormal: absolute
  }
  EXPECT_LT(worst, 4 * 6e-8);
  EXPECT_EQ(scalar_exp(0.0f), 1.0f);
  EXPECT_EQ(scalar_exp(-87.34f), 0.0f);
  EXPECT_EQ(scalar_exp(-1e30f), 0.0f);
  EXPECT_EQ(scalar_exp(-kInf), 0.0f);
  EXPECT_TRUE(std::isnan(scalar_exp(kNaN)));
}

// Row-major keys and the same keys in packed strips (an exact state's cache), from a first key
// k0 inside a strip so that groups of keys cross strips.
TEST(ExactKernel, ScoresEqualScalarDotProductsInBothKeyLayouts) {
  std::mt19937 gen(4000);
  for (Index d : {1, 3, 4, 5, 64, 67})
    for (Index n : {1, 3, 4, 9, 21})
      for (Index k0 : {Index{0}, kernel::kStrip / 2 + 4}) {
        const Index ldk = d + 2, rows = k0 + n;  // a key stride wider than d
        const std::vector<float> qt = normal_buffer(static_cast<std::size_t>(d * kernel::kStrip), gen);
        const std::vector<float> k = normal_buffer(static_cast<std::size_t>(rows * ldk), gen);
        std::vector<float> packed(static_cast<std::size_t>((rows + kernel::kStrip - 1) / kernel::kStrip * d * kernel::kStrip), kNaN);
        for (Index j = 0; j < rows; ++j) kernel::put_packed_key(packed.data(), d, j, &k[static_cast<std::size_t>(j * ldk)]);
        for (const kernel::Keys& keys : {kernel::Keys::row_major(k.data(), rows, d, ldk), kernel::Keys::packed(packed.data(), rows, d)}) {
          std::vector<float> p(static_cast<std::size_t>(n * kernel::kStrip));
          kernel::scores(qt.data(), keys, k0, n, 0.3f, p.data());
          for (Index j = 0; j < n; ++j)
            for (Index i = 0; i < kernel::kStrip; ++i) {
              float dot = 0.0f;
              for (Index f = 0; f < d; ++f) dot = dot + qt[f * kernel::kStrip + i] * k[(k0 + j) * ldk + f];
              ASSERT_EQ(p[j * kernel::kStrip + i], dot * 0.3f)
                  << (keys.is_packed() ? "packed " : "row-major ") << d << " " << n << " " << k0 << " " << j << " " << i;
            }
        }
      }
}

TEST(ExactKernel, SoftmaxStepEqualsScalarLanes) {
  std::mt19937 gen(4100);
  const Index n = 11;
  std::vector<float> p = normal_buffer(static_cast<std::size_t>(n * kernel::kStrip), gen);
  p[3 * kernel::kStrip + 1] = -kInf;  // a masked key
  for (Index j = 0; j < n; ++j) p[j * kernel::kStrip + 5] = -kInf;  // lane 5 fully masked, no key seen yet
  const std::vector<float> scores = p;
  std::vector<float> m(kernel::kStrip), l(kernel::kStrip), r(kernel::kStrip);
  for (Index i = 0; i < kernel::kStrip; ++i) m[i] = i == 2 || i == 5 ? -kInf : 0.5f * static_cast<float>(i), l[i] = 1.5f;
  const std::vector<float> m0 = m, l0 = l;
  kernel::softmax_step(p.data(), n, m.data(), l.data(), r.data());
  for (Index i = 0; i < kernel::kStrip; ++i) {
    float mx = -kInf;
    for (Index j = 0; j < n; ++j) mx = mx > scores[j * kernel::kStrip + i] ? mx : scores[j * kernel::kStrip + i];
    mx = m0[i] > mx ? m0[i] : mx;
    const float z = mx == -kInf ? 0.0f : mx;  // what the scores are taken against
    float sum = 0.0f;
    for (Index j = 0; j < n; ++j) {
      const float e = scalar_exp(scores[j * kernel::kStrip + i] - z);
      ASSERT_TRUE(same(p[j * kernel::kStrip + i], e)) << i << " " << j;
      sum = sum + e;
    }
    const float rescale = scalar_exp(m0[i] - z);
    EXPECT_TRUE(same(m[i], mx)) << i;
    EXPECT_TRUE(same(r[i], rescale)) << i;
    EXPECT_TRUE(same(l[i], l0[i] * rescale + sum)) << i;
  }
  EXPECT_EQ(r[2], 0.0f);      // first block of a row: old max -inf
  // Every key masked and none seen before: weight 0 and rescale 0 (not exp(-inf + inf) = NaN),
  // so that the keys of a later block count in full; the max stays -inf.
  EXPECT_EQ(r[5], 0.0f);
  EXPECT_EQ(l[5], 0.0f);
  EXPECT_EQ(m[5], -kInf);
  for (Index j = 0; j < n; ++j) EXPECT_EQ(p[j * kernel::kStrip + 5], 0.0f);
}

TEST(ExactKernel, ValueProductEqualsScalarLoops) {
  std::mt19937 gen(4200);
  for (Index dv : {1, 3, 4, 5, 8, 9, 12, 13, 64, 67})
    for (Index n : {1, 2, 7}) {
      const Index ldv = dv + 3, lda = dv + 1;
      const std::vector<float> p = normal_buffer(static_cast<std::size_t>(n * kernel::kStrip), gen);
      const std::vector<float> v = normal_buffer(static_cast<std::size_t>(n * ldv), gen);
      const std::vector<float> acc0 = normal_buffer(static_cast<std::size_t>(4 * lda), gen);
      const float rescale[4] = {1.0f, 0.5f, 0.0f, 0.25f};
      std::vector<float> acc = acc0;
      kernel::pv(p.data() + 4, v.data(), ldv, n, dv, rescale, acc.data(), lda);  // lanes 4..7
      for (Index r = 0; r < 4; ++r)
        for (Index c = 0; c < lda; ++c) {
          float x = acc0[r * lda + c];
          if (c < dv) {
            x = x * rescale[r];
            for (Index j = 0; j < n; ++j) x = x + p[j * kernel::kStrip + 4 + r] * v[j * ldv + c];
          }
          ASSERT_EQ(acc[r * lda + c], x) << dv << " " << n << " " << r << " " << c;  // padding untouched
        }
    }
}

}  // namespace
