// Numerical stability for large inputs (docs/design.md §4): rows whose scaled norm |x~| goes
// up to 50 make exp(w.x - |x|^2/2) range over e^{+-1400}, far outside float (and double) range.
// The exponent shifts must keep every output finite and every row of A^ a probability
// distribution, without bias, for the positive-valued kernels, bidirectional and causal.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include <favor/features/factored.hpp>

#include "reference.hpp"

namespace {

using favor::Kernel;
using ref::Index;
using ref::MatD;
using ref::MatF;

// Rows in random directions with norms spread over [0.5, 50]; rows 0, 5, 10, ... have exactly
// norm 50 (the extreme).
MatF spread_rows(Index n, Index d, std::mt19937& gen) {
  MatF x = ref::normal_matrix(n, d, gen);
  std::uniform_real_distribution<double> norm(0.5, 50.0);
  for (Index i = 0; i < n; ++i) {
    const double target = (i % 5 == 0) ? 50.0 : norm(gen);
    x.row(i) *= static_cast<float>(target / x.row(i).norm());
  }
  return x;
}

struct Inputs {
  MatF w, q, k, v;
};

Inputs make(unsigned seed) {
  std::mt19937 gen(seed);
  const Index d = 16, m = 64, L = 160, dv = 6;  // L crosses the default chunk of 128
  return {ref::normal_matrix(m, d, gen), spread_rows(L, d, gen), spread_rows(L, d, gen),
          ref::normal_matrix(L, dv, gen)};
}

const Kernel kKernels[] = {Kernel::positive, Kernel::hyperbolic, Kernel::oprf};

// scale = 1 so that x~ = x and the row norms above are the scaled norms.
favor::FavorOptions opts(bool causal) {
  favor::FavorOptions o;
  o.causal = causal;
  o.scale = 1.0;
  return o;
}

// Finite outputs; rows of A^ nonnegative, summing to 1 within 1e-3 (a correctly shifted float32
// computation normalizes to ~1e-6; an underflowed row would sum to 0 or NaN); and every output
// row a convex combination of the visible values (within 1e-3 of their range).
TEST(LargeInputs, FiniteAndNormalized) {
  unsigned seed = 3000;
  for (Kernel kernel : kKernels) {
    for (bool causal : {false, true}) {
      SCOPED_TRACE(testing::Message() << favor::to_string(kernel) << " causal=" << causal);
      const Inputs s = make(seed++);
      const favor::FeatureMap map(kernel, s.w);
      const MatF out = favor::favor_attention(map, s.q, s.k, s.v, opts(causal));
      const MatF a = favor::favor_attention_matrix(map, s.q, s.k, opts(causal));
      ASSERT_TRUE(ref::all_finite(ref::to_double(out)));
      ASSERT_TRUE(ref::all_finite(ref::to_double(a)));
      for (Index i = 0; i < a.rows(); ++i) {
        EXPECT_NEAR(ref::to_double(a).row(i).sum(), 1.0, 1e-3) << "row " << i;
        EXPECT_GE(a.row(i).minCoeff(), 0.0f) << "row " << i;
        if (causal) {
          for (Index j = i + 1; j < a.cols(); ++j) ASSERT_EQ(a(i, j), 0.0f);
        }
        const Index visible = causal ? i + 1 : s.v.rows();
        for (Index c = 0; c < s.v.cols(); ++c) {
          const float lo = s.v.col(c).head(visible).minCoeff();
          const float hi = s.v.col(c).head(visible).maxCoeff();
          const float slack = 1e-3f * std::max(hi - lo, 1e-3f);
          EXPECT_GE(out(i, c), lo - slack) << "row " << i << " col " << c;
          EXPECT_LE(out(i, c), hi + slack) << "row " << i << " col " << c;
        }
      }
    }
  }
}

// Beyond finiteness: the stabilized result is still the estimator for that W (no bias from an
// added epsilon, no lost terms). Reference: log-domain float64 evaluation of the same formula.
// Tolerance 5e-4 per entry relative to the largest entry: float32 exponents of magnitude up to
// ~1300 (|x|^2/2 = 1250 at |x| = 50) carry rounding errors up to ~1e-4 absolute, i.e. ~1e-4
// relative in a weight (in practice the dominant keys have small norms and a correct
// implementation measures ~1e-5); a bias, a dropped key or an underflowed row is off by O(1).
TEST(LargeInputs, MatchesLogDomainReference) {
  unsigned seed = 3100;
  for (Kernel kernel : kKernels) {
    for (bool causal : {false, true}) {
      SCOPED_TRACE(testing::Message() << favor::to_string(kernel) << " causal=" << causal);
      const Inputs s = make(seed++);
      const favor::FeatureMap map(kernel, s.w);
      const MatD a_ref = ref::favor_matrix_log_domain(kernel, ref::to_double(s.w),
                                                      ref::to_double(s.q), ref::to_double(s.k),
                                                      1.0, causal);
      const MatF a = favor::favor_attention_matrix(map, s.q, s.k, opts(causal));
      EXPECT_LT(ref::max_rel(ref::to_double(a), a_ref), 5e-4);
      // Small chunks: many chunk boundaries, some where the new keys jump far above the carried
      // state's shift (the log-space combination) and some where they do not (one shift).
      for (Index chunk : {Index{128}, Index{16}, Index{5}}) {
        favor::FavorOptions o = opts(causal);
        o.chunk = chunk;
        const MatF out = favor::favor_attention(map, s.q, s.k, s.v, o);
        EXPECT_LT(ref::max_rel(ref::to_double(out), a_ref * ref::to_double(s.v)), 5e-4) << "chunk " << chunk;
      }
    }
  }
}

// Minimal causal case: query row 0 sees only key 0, so its output is exactly v_0 whatever the
// keys are. Key 0 has |k| = t and key 1 is 0, so (W = I, scale 1) key 0's log features sit
// t^2/2 - t ~ 88..190 nats below the column max set by key 1, which is in the same chunk but
// invisible to row 0: without care the row-0 numerator and denominator underflow together.
// Expected out(0) = v_0 to float rounding (1e-5), for the default chunk and chunk = 1.
TEST(LargeInputs, CausalRowWhoseVisibleKeysAreFarBelowLaterKeys) {
  MatF w(2, 2);
  w << 1, 0, 0, 1;
  for (Kernel kernel : kKernels) {
    const favor::FeatureMap map(kernel, w);
    for (float t : {14.3f, 15.0f, 20.0f}) {
      MatF q = MatF::Zero(2, 2), k(2, 2), v(2, 1);
      k << t, 0, 0, 0;
      v << 1, -1;
      for (Index chunk : {Index{128}, Index{1}}) {
        favor::FavorOptions o = opts(true);
        o.chunk = chunk;
        const MatF out = favor::favor_attention(map, q, k, v, o);
        EXPECT_NEAR(out(0, 0), 1.0f, 1e-5f)
            << favor::to_string(kernel) << " |k0| = " << t << " chunk " << chunk;
        EXPECT_LE(std::abs(out(1, 0)), 1.0f + 1e-5f) << favor::to_string(kernel);
      }
      const MatF a = favor::favor_attention_matrix(map, q, k, opts(true));
      EXPECT_NEAR(a(0, 0), 1.0f, 1e-5f) << favor::to_string(kernel) << " |k0| = " << t;
      EXPECT_EQ(a(0, 1), 0.0f);
    }
  }
}

// FeatureMap::factored marks factors `bounded` when |w| |x| proves every projection finite, and
// the engine then skips scanning them. The mark must never be set on factors that are not all
// finite (a wrong mark would let an overflow through as a wrong row), must be set on ordinary
// inputs (or the scan is never skipped), and must be cleared where the inputs are too large.
// Every kernel, roots below and above 1, magnitudes from 1e-30 up to where float overflows.
TEST(LargeInputs, BoundedFactorsAreFinite) {
  std::mt19937 gen(3300);
  const MatF w = ref::normal_matrix(24, 8, gen), x = ref::normal_matrix(20, 8, gen);
  // An explicit projection of huge norm overflows w.x long before |x|^2 does.
  for (float w_scale : {1.0f, 1e20f})
  for (Kernel kernel : {Kernel::positive, Kernel::hyperbolic, Kernel::oprf, Kernel::trigonometric, Kernel::relu}) {
    const favor::FeatureMap map(kernel, w * w_scale);
    for (float root : {0.3f, 1.0f, 3.0f}) {
      int bounded = 0, unbounded = 0;
      for (float magnitude : {1e-30f, 1.0f, 1e5f, 1e10f, 1e15f, 1e17f, 1e18f, 1e19f, 1e20f, 1e25f}) {
        const MatF xs = x * magnitude;
        const favor::KernelParameters params = map.parameters(xs, xs, static_cast<double>(root) * root);
        const favor::FactoredFeatures f = map.factored(xs, params, root);
        if (f.bounded) {
          ++bounded;
          EXPECT_TRUE(f.exponent.allFinite() && f.value.allFinite())
              << favor::to_string(kernel) << " |w| x " << w_scale << " root " << root << " magnitude " << magnitude;
        } else {
          ++unbounded;
        }
        if (magnitude == 1.0f && w_scale == 1.0f) EXPECT_TRUE(f.bounded) << favor::to_string(kernel) << " root " << root;
      }
      EXPECT_GT(unbounded, 0) << favor::to_string(kernel) << " root " << root;
      if (w_scale == 1.0f) EXPECT_GT(bounded, 3) << favor::to_string(kernel) << " root " << root;
    }
  }
}

}  // namespace
