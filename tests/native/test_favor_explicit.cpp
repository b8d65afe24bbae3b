// FAVOR attention with an explicit projection W: for every kernel, favor_attention,
// favor_attention_matrix, FeatureMap::features and kernel_estimate must equal the float64
// evaluation of the docs/design.md §3 formula for exactly that W (reference.hpp).
//
// Tolerance 1e-4 relative: the library works in float32 (unit roundoff 6e-8). Each feature is
// exp of an exponent w.x - |x|^2/2 with |exponent| <~ 10 summed over d <= 128 terms, so its
// relative error is <~ 1e-6; the kernel sums over m <= 512 positive terms and the normalizer
// over S <= 1024 terms add only ~sqrt(n) * 6e-8 more, and the per-row/per-column exponent
// shifts cancel exactly in exact arithmetic. A correct implementation lands at ~1e-6..1e-5;
// any formula error (missing prefactor does cancel in attention, but a wrong |x|^2/2 term,
// wrong A/B, swapped sin/cos, wrong scale) moves entries by >1e-2.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include <favor/engine/factored_attention.hpp>
#include <favor/features/factored.hpp>

#include "reference.hpp"

namespace {

using favor::Kernel;
using ref::Index;
using ref::MatD;
using ref::MatF;

constexpr double kTol = 1e-4;
const Kernel kAllKernels[] = {Kernel::positive, Kernel::hyperbolic, Kernel::trigonometric,
                              Kernel::relu, Kernel::oprf};

// Standard deviation of input entries such that the scaled rows x~ = x * d^(-1/4) have
// |x~| ~= target. The trigonometric kernel gets target 0.15: its weights phi(q).phi(k) =
// e^{(|q|^2+|k|^2)/2} mean_r cos(w_r.(q-k)) are signed, and the normalizer
// sum_j phi(q_i).phi(k_j) can cancel to ~0 (the paper's failure mode), which would make
// D^-1 arbitrarily ill-conditioned. With |q~ - k~| ~ 0.2, w_r.(q-k) ~ N(0, 0.04), so every
// cos term is ~0.98 and the normalizer stays ~S, far from 0: a float32 computation is then
// well-conditioned and 1e-4 applies. The other kernels use |x~| ~ 1.
double input_std(Kernel kernel, Index d, double scale = 0.0) {
  const double target = kernel == Kernel::trigonometric ? 0.15 : 1.0;
  const double s = scale > 0 ? scale : ref::default_scale(d);
  return target / std::sqrt(static_cast<double>(d) * s);  // |x~|^2 = sd^2 * d * scale
}

struct Case {
  Index L, S, d, dv, m;
};

void check_attention(Kernel kernel, const Case& c, bool causal, unsigned seed,
                     double epsilon = 1e-3, double scale = 0.0) {
  std::mt19937 gen(seed);
  const MatF w = ref::normal_matrix(c.m, c.d, gen);
  const double sd = input_std(kernel, c.d, scale);
  const MatF q = ref::normal_matrix(c.L, c.d, gen, sd);
  const MatF k = ref::normal_matrix(c.S, c.d, gen, sd);
  const MatF v = ref::normal_matrix(c.S, c.dv, gen);
  const favor::FeatureMap map(kernel, w, epsilon);
  ASSERT_TRUE(map.explicit_projection());
  ASSERT_EQ(map.num_projections(), c.m);
  ASSERT_EQ(map.dim(), c.d);
  ASSERT_EQ(map.num_features(), ref::num_features(kernel, c.m));
  ASSERT_EQ(0, std::memcmp(map.projection().data(), w.data(), sizeof(float) * w.size()));

  favor::FavorOptions opt;
  opt.causal = causal;
  const double s = scale > 0 ? scale : ref::default_scale(c.d);
  if (scale > 0) opt.scale = scale;

  SCOPED_TRACE(testing::Message() << favor::to_string(kernel) << " L=" << c.L << " S=" << c.S
                                  << " d=" << c.d << " m=" << c.m << " causal=" << causal
                                  << " scale=" << s);

  const MatD wd = ref::to_double(w), qd = ref::to_double(q), kd = ref::to_double(k);
  const MatD a_ref = ref::favor_matrix(kernel, wd, qd, kd, s, causal, epsilon);
  const MatD out_ref = a_ref * ref::to_double(v);

  const MatF out = favor::favor_attention(map, q, k, v, opt);
  EXPECT_LT(ref::max_rel(ref::to_double(out), out_ref), kTol);
  EXPECT_LT(ref::rel_frobenius(ref::to_double(out), out_ref), kTol);
  const MatF a = favor::favor_attention_matrix(map, q, k, opt);
  EXPECT_LT(ref::max_rel(ref::to_double(a), a_ref), kTol);

  // Output-parameter overloads.
  MatF out2 = MatF::Constant(c.L, c.dv, 9.0f), a2 = MatF::Constant(c.L, c.S, 9.0f);
  favor::favor_attention(map, q, k, v, out2, opt);
  favor::favor_attention_matrix(map, q, k, a2, opt);
  EXPECT_LT(ref::max_rel(ref::to_double(out2), out_ref), kTol);
  EXPECT_LT(ref::max_rel(ref::to_double(a2), a_ref), kTol);
  if (causal) {
    for (Index i = 0; i < c.L; ++i)
      for (Index j = i + 1; j < c.S; ++j) ASSERT_EQ(a(i, j), 0.0f) << i << "," << j;
  }
}

TEST(FavorExplicit, AllKernelsSmall) {
  unsigned seed = 1000;
  for (Kernel kernel : kAllKernels)
    for (bool causal : {false, true}) check_attention(kernel, {64, 64, 16, 16, 32}, causal, seed++);
}

TEST(FavorExplicit, AllKernelsCrossAttention) {
  unsigned seed = 1100;
  // L != S, dv != d, m not a multiple of d.
  for (Kernel kernel : kAllKernels) check_attention(kernel, {100, 77, 24, 9, 50}, false, seed++);
}

TEST(FavorExplicit, AllKernelsMedium) {
  unsigned seed = 1200;
  // Crosses the default chunk (128) twice when causal.
  for (Kernel kernel : kAllKernels)
    for (bool causal : {false, true})
      check_attention(kernel, {300, 300, 64, 32, 256}, causal, seed++);
}

TEST(FavorExplicit, PositiveLargest) {
  check_attention(Kernel::positive, {1024, 1024, 128, 64, 512}, false, 1300);
  check_attention(Kernel::positive, {1024, 1024, 128, 64, 512}, true, 1301);
}

TEST(FavorExplicit, OprfLarge) {
  check_attention(Kernel::oprf, {1024, 1024, 128, 32, 256}, true, 1310);
}

TEST(FavorExplicit, CustomScaleAndEpsilon) {
  check_attention(Kernel::positive, {50, 60, 16, 8, 32}, false, 1400, 1e-3, 0.7);
  check_attention(Kernel::oprf, {50, 50, 16, 8, 32}, true, 1401, 1e-3, 0.05);
  check_attention(Kernel::relu, {50, 60, 16, 8, 32}, false, 1402, 0.05);
  check_attention(Kernel::relu, {50, 50, 16, 8, 32}, true, 1403, 1e-5);
}

// A map sampled by the library (FeatureMap(options)) follows the same formulas for its W.
TEST(FavorExplicit, SampledMapFollowsFormula) {
  unsigned seed = 1500;
  for (Kernel kernel : kAllKernels) {
    for (favor::Sampling sampling : {favor::Sampling::iid, favor::Sampling::orthogonal,
                                     favor::Sampling::orthogonal_fixed}) {
      favor::FeatureMapOptions o;
      o.dim = 16;
      o.features = 40;
      o.kernel = kernel;
      o.sampling = sampling;
      o.seed = seed;
      const favor::FeatureMap map(o);
      ASSERT_FALSE(map.explicit_projection());
      ASSERT_EQ(map.projection().rows(), 40);
      ASSERT_EQ(map.projection().cols(), 16);
      std::mt19937 gen(seed++);
      const double sd = input_std(kernel, 16);
      const MatF q = ref::normal_matrix(70, 16, gen, sd), k = ref::normal_matrix(70, 16, gen, sd);
      const MatF v = ref::normal_matrix(70, 8, gen);
      for (bool causal : {false, true}) {
        favor::FavorOptions opt;
        opt.causal = causal;
        const MatD out_ref =
            ref::favor_output(kernel, ref::to_double(map.projection()), ref::to_double(q),
                              ref::to_double(k), ref::to_double(v), 0.25, causal);
        EXPECT_LT(ref::max_rel(ref::to_double(favor::favor_attention(map, q, k, v, opt)), out_ref),
                  kTol)
            << favor::to_string(kernel) << " " << favor::to_string(sampling) << " causal="
            << causal;
      }
    }
  }
}

// FeatureMap::features and kernel_estimate against phi(x) and phi(x).phi(y) in double.
// Features: each entry relative to the largest |entry| of its row, 1e-5 (a single exp of a
// float32 exponent of magnitude <~ 5: error ~1e-6). kernel_estimate: 1e-4 as above; for the
// kernels with positive features every entry relative to itself, for trigonometric (signed)
// relative to the largest entry.
TEST(FeatureMapFormula, FeaturesAndKernelEstimate) {
  unsigned seed = 1600;
  for (Kernel kernel : kAllKernels) {
    SCOPED_TRACE(favor::to_string(kernel));
    std::mt19937 gen(seed++);
    const Index d = 12, m = 20;
    const MatF w = ref::normal_matrix(m, d, gen);
    const double t = kernel == Kernel::trigonometric ? 0.3 : 0.8;  // |x| ~ t (already scaled)
    const MatF x = ref::normal_matrix(9, d, gen, t / std::sqrt(12.0));
    const MatF y = ref::normal_matrix(7, d, gen, t / std::sqrt(12.0));
    const double eps = 2e-3;
    const favor::FeatureMap map(kernel, w, eps);
    const MatD wd = ref::to_double(w), xd = ref::to_double(x), yd = ref::to_double(y);
    ref::Oprf oprf;
    if (kernel == Kernel::oprf) oprf = ref::oprf_coefficients(ref::oprf_rho(xd, yd), d);

    const favor::KernelParameters params = map.parameters(x, y);
    if (kernel == Kernel::oprf) {
      // Coefficients from the same float inputs: only float32 rounding of rho differs.
      EXPECT_NEAR(params.oprf.a, oprf.a, 1e-6 * std::abs(oprf.a));
      EXPECT_NEAR(params.oprf.b, oprf.b, 1e-6 * oprf.b);
      EXPECT_NEAR(params.oprf.log_d, oprf.log_d, 1e-6 * std::abs(oprf.log_d) + 1e-9);
    }
    for (const MatF* z : {&x, &y}) {
      const MatD f = ref::to_double(map.features(*z, params));
      const MatD f_ref = ref::phi(kernel, wd, ref::to_double(*z), eps, oprf);
      ASSERT_EQ(f.rows(), f_ref.rows());
      ASSERT_EQ(f.cols(), f_ref.cols());
      for (Index i = 0; i < f.rows(); ++i)
        EXPECT_LT(ref::max_rel(f.row(i), f_ref.row(i)), 1e-5) << "row " << i;
    }

    const MatD est = favor::kernel_estimate(map, x, y);
    const MatD est_ref = ref::kernel_estimate(kernel, wd, xd, yd, eps);
    if (kernel == Kernel::trigonometric) {
      EXPECT_LT(ref::max_rel(est, est_ref), kTol);
    } else {
      EXPECT_LT(ref::max_entry_rel(est, est_ref), kTol);
    }
  }
}

TEST(FeatureMapFormula, OprfRhoAndCoefficients) {
  std::mt19937 gen(1700);
  const MatF x = ref::normal_matrix(13, 8, gen, 0.4), y = ref::normal_matrix(21, 8, gen, 0.3);
  const double rho = ref::oprf_rho(ref::to_double(x), ref::to_double(y));
  EXPECT_NEAR(favor::oprf_rho(x, y), rho, 1e-5 * rho);
  // Past 4,096 rows the sums go by blocks of rows: against the pairs' mean in closed form,
  // mean |x|^2 + mean |y|^2 + 2 mean(x).mean(y), in float64 (the squares of floats are exact in
  // double; sums of 10^4 terms round to ~1e-12).
  const MatF xl = ref::normal_matrix(10000, 8, gen, 0.4), yl = ref::normal_matrix(9000, 8, gen, 0.3);
  const MatD xd = ref::to_double(xl), yd = ref::to_double(yl);
  const double closed = xd.rowwise().squaredNorm().mean() + yd.rowwise().squaredNorm().mean() +
                        2.0 * xd.colwise().mean().dot(yd.colwise().mean());
  EXPECT_NEAR(favor::oprf_rho(xl, yl), closed, 1e-10 * closed);
  for (double r : {0.05, 1.0, 3.7, 40.0}) {
    const ref::Oprf o = ref::oprf_coefficients(r, 16);
    const favor::OprfCoefficients c = favor::oprf_coefficients(r, 16);
    EXPECT_NEAR(c.a, o.a, 1e-12 * std::abs(o.a)) << r;
    EXPECT_NEAR(c.b, o.b, 1e-12) << r;
    EXPECT_NEAR(c.log_d, o.log_d, 1e-12 * std::abs(o.log_d)) << r;
  }
}

// log_prefactor: -log(m)/2 (positive, trigonometric), -log(2m)/2 (hyperbolic), log D - log(m)/2
// (oprf), 0 (relu). Double arithmetic: 1e-12.
TEST(FeatureMapFormula, LogPrefactor) {
  std::mt19937 gen(1750);
  const Index m = 24, d = 8;
  const MatF w = ref::normal_matrix(m, d, gen);
  const MatF x = ref::normal_matrix(5, d, gen, 0.3), y = ref::normal_matrix(6, d, gen, 0.3);
  for (Kernel kernel : kAllKernels) {
    const favor::FeatureMap map(kernel, w);
    const favor::KernelParameters p = map.parameters(x, y);
    double expected = -0.5 * std::log(static_cast<double>(m));
    if (kernel == Kernel::hyperbolic) expected = -0.5 * std::log(2.0 * m);
    if (kernel == Kernel::relu) expected = 0.0;
    if (kernel == Kernel::oprf) expected += p.oprf.log_d;
    EXPECT_NEAR(map.log_prefactor(p), expected, 1e-12) << favor::to_string(kernel);
  }
}

TEST(FeatureMapFormula, NamesAndProperties) {
  for (Kernel kernel : kAllKernels) {
    EXPECT_EQ(favor::parse_kernel(favor::to_string(kernel)), kernel);
    EXPECT_EQ(favor::is_softmax_estimator(kernel), kernel != Kernel::relu);
  }
  EXPECT_STREQ(favor::to_string(Kernel::oprf), "oprf");
  EXPECT_STREQ(favor::to_string(favor::Sampling::orthogonal_fixed), "orthogonal-fixed");
  for (auto s : {favor::Sampling::iid, favor::Sampling::orthogonal,
                 favor::Sampling::orthogonal_fixed, favor::Sampling::simplex, favor::Sampling::structured})
    EXPECT_EQ(favor::parse_sampling(favor::to_string(s)), s);
}

// TensorView API with heads: each head gets its own data-dependent parameters (OPRF rho).
TEST(FavorTensor, BatchHeadsMatchPerHeadReference) {
  const Index B = 2, H = 2, L = 40, d = 16, dv = 8, m = 32;
  std::mt19937 gen(1800);
  const MatF w = ref::normal_matrix(m, d, gen);
  const std::size_t nq = static_cast<std::size_t>(B * H * L * d);
  for (Kernel kernel : {Kernel::positive, Kernel::oprf, Kernel::hyperbolic}) {
    for (bool causal : {false, true}) {
      // Give each head a different input magnitude so per-head OPRF coefficients differ.
      std::vector<float> q = ref::normal_buffer(nq, gen, 0.5), k = ref::normal_buffer(nq, gen, 0.5);
      for (std::size_t i = 0; i < nq; ++i) {
        const float f = 0.5f + 0.5f * static_cast<float>(i / static_cast<std::size_t>(L * d));
        q[i] *= f;
        k[i] *= f;
      }
      std::vector<float> v = ref::normal_buffer(static_cast<std::size_t>(B * H * L * dv), gen);
      std::vector<float> out(static_cast<std::size_t>(B * H * L * dv), 0.0f);
      std::vector<float> mat(static_cast<std::size_t>(B * H * L * L), 0.0f);
      const favor::FeatureMap map(kernel, w);
      favor::FavorOptions opt;
      opt.causal = causal;
      favor::favor_attention(map, {q.data(), {B, H, L, d}}, {k.data(), {B, H, L, d}},
                             {v.data(), {B, H, L, dv}}, {out.data(), {B, H, L, dv}}, opt);
      favor::favor_attention_matrix(map, {q.data(), {B, H, L, d}}, {k.data(), {B, H, L, d}},
                                    {mat.data(), {B, H, L, L}}, opt);
      for (Index h = 0; h < B * H; ++h) {
        const MatD a_ref = ref::favor_matrix(kernel, ref::to_double(w),
                                             ref::to_double(ref::head(q, h, L, d)),
                                             ref::to_double(ref::head(k, h, L, d)), 0.25, causal);
        EXPECT_LT(ref::max_rel(ref::to_double(ref::head(mat, h, L, L)), a_ref), kTol)
            << favor::to_string(kernel) << " causal=" << causal << " head " << h;
        EXPECT_LT(ref::max_rel(ref::to_double(ref::head(out, h, L, dv)),
                               a_ref * ref::to_double(ref::head(v, h, L, dv))),
                  kTol)
            << favor::to_string(kernel) << " causal=" << causal << " head " << h;
      }
    }
  }
}

}  // namespace

namespace {

// Positive keys take their logs w.x - |x|^2/2 and the column maxima in the projection's epilogue
// (FeatureMap::factored with fold_row_log); features made beforehand (favor_factors) keep the
// separate pass. Both must give the same bits: bidirectional and causal, with and without a key
// mask (which drops the maxima, as they counted masked rows), m = 37 features (full strips, a
// vector of 4 and single columns) and 70 rows (6- and 4-row tiles and single rows).
TEST(FavorExplicit, KeyLogsFromTheProjectionEpilogueEqualASeparatePass) {
  const Index L = 70, d = 16, dv = 8, m = 37;
  std::mt19937 gen(2100);
  const MatF w = ref::normal_matrix(m, d, gen);
  const favor::FeatureMap map(Kernel::positive, w);
  const favor::Matrix q = ref::normal_matrix(L, d, gen, 0.6), k = ref::normal_matrix(L, d, gen, 0.6);
  const favor::Matrix v = ref::normal_matrix(L, dv, gen);
  favor::Matrix stacked(2 * L, d);
  stacked.topRows(L) = q;
  stacked.bottomRows(L) = k;
  std::vector<std::uint8_t> mask(static_cast<std::size_t>(L), 1);
  for (Index j = 0; j < L; j += 7) mask[static_cast<std::size_t>(j)] = 0;
  for (bool causal : {false, true})
    for (bool masked : {false, true}) {
      favor::FavorOptions o;
      o.causal = causal;
      o.chunk = 32;
      o.key_mask = masked ? mask.data() : nullptr;
      const favor::FactoredFeatures features = favor::favor_factors(map, stacked, o);
      favor::Matrix own(L, dv), given(L, dv);
      favor::favor_attention(map, {q}, k, v, {favor::MatrixRef(own)}, o);
      favor::favor_attention(map, {q}, k, v, {favor::MatrixRef(given)}, o, nullptr, &features);
      EXPECT_EQ(0, std::memcmp(own.data(), given.data(), sizeof(float) * L * dv))
          << "causal " << causal << " masked " << masked;
    }
}

// v far from 1 is scaled by a power of two for the call and the output scaled back (its max |v|
// taken as the bidirectional fold reads v, then folded again). Scaling by 2^s commutes with
// every float operation short of underflow and overflow, so out(v 2^s) must be out(v) 2^s bit for
// bit, on either side of the 2^+-20 threshold.
TEST(FavorExplicit, OutputScalesExactlyWithVFarFromOne) {
  const Index L = 150, d = 16, dv = 8, m = 24;
  std::mt19937 gen(2200);
  const favor::FeatureMap map(Kernel::positive, ref::normal_matrix(m, d, gen));
  const favor::Matrix q = ref::normal_matrix(L, d, gen, 0.6), k = ref::normal_matrix(L, d, gen, 0.6);
  // |v| >= 0.5, so that v 2^s stays a normal float (v itself, scaled exactly) for every s below.
  const favor::Matrix v = ref::normal_matrix(L, dv, gen).unaryExpr([](float x) { return std::copysign(0.5f + std::abs(x), x); });
  for (bool causal : {false, true}) {
    favor::FavorOptions o;
    o.causal = causal;
    o.chunk = 64;
    const favor::Matrix base = favor::favor_attention(map, q, k, v, o);
    for (int s : {-120, -100, -60, -21, -3, 19, 21, 60, 100, 120}) {
      const favor::Matrix vs = v.unaryExpr([s](float x) { return std::ldexp(x, s); });
      const favor::Matrix want = base.unaryExpr([s](float x) { return std::ldexp(x, s); });
      const favor::Matrix got = favor::favor_attention(map, q, k, vs, o);
      EXPECT_EQ(0, std::memcmp(got.data(), want.data(), sizeof(float) * L * dv)) << "causal " << causal << " 2^" << s;
    }
  }
}

// Causal FAVOR+ (default chunk) of L random rows, v (|v| in [0.5, 1.5]) scaled by 2^e in rows
// [first, first + n), against the estimator in double: the max error relative to its largest
// entry.
double causal_error_with_v_scaled_in_rows(Index L, unsigned seed, Index first, Index n, int e) {
  const Index d = 16, dv = 8, m = 24;
  std::mt19937 gen(seed);
  const favor::FeatureMap map(Kernel::positive, ref::normal_matrix(m, d, gen));
  const favor::Matrix q = ref::normal_matrix(L, d, gen, 0.6), k = ref::normal_matrix(L, d, gen, 0.6);
  favor::Matrix v = ref::normal_matrix(L, dv, gen).unaryExpr([](float x) {
    return std::copysign(0.5f + std::min(std::abs(x), 1.0f), x);
  });
  v.middleRows(first, n) = v.middleRows(first, n).unaryExpr([e](float x) { return std::ldexp(x, e); });
  favor::FavorOptions o;
  o.causal = true;
  const favor::Matrix got = favor::favor_attention(map, q, k, v, o);
  const MatD want = ref::favor_output(Kernel::positive, ref::to_double(map.projection()), ref::to_double(q),
                                      ref::to_double(k), ref::to_double(v), ref::default_scale(d), true);
  return ref::max_rel(ref::to_double(got), want);
}

// A causal call takes max |v| as its folds read v, not beforehand. Here the rows far from 1 are
// only the last (2^126): unless the call finds them, it does not scale v, and the sums of their
// products overflow float32 (the rows of the first blocks, near 1, are 2^-126 of the largest).
TEST(FavorExplicit, CausalFindsVFarFromOneInItsLastRows) {
  EXPECT_LT(causal_error_with_v_scaled_in_rows(1100, 2201, 1024, 76, 126), kTol);
}

// The other way round: only the first rows of v far below 1 (2^-60). The call finds v far from
// 1 in its first chunk and stops; all of v is near 1, so it runs again unscaled. A call that kept
// the first run's outputs (not all written) or scaled v by the first rows' exponent (2^60, which
// overflows the others) fails.
TEST(FavorExplicit, CausalWithVFarBelowOneInItsFirstRowsOnly) {
  EXPECT_LT(causal_error_with_v_scaled_in_rows(300, 2202, 0, 40, -60), kTol);
}

}  // namespace
