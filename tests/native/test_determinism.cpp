// Determinism of the sampler: same seed -> bit-identical W, different seed -> different W,
// redraw(seed) == fresh map with that seed, golden values pinned bit for bit (the wasm build
// must reproduce them), and the portable random primitives (NormalStream, portable_log).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include <favor/features/random.hpp>

#include "reference.hpp"

namespace {

using favor::Kernel;
using favor::Sampling;
using ref::Index;
using ref::MatF;

bool bit_identical(const MatF& a, const MatF& b) {
  return a.rows() == b.rows() && a.cols() == b.cols() &&
         std::memcmp(a.data(), b.data(), sizeof(float) * static_cast<std::size_t>(a.size())) == 0;
}

const Sampling kSamplings[] = {Sampling::iid, Sampling::orthogonal, Sampling::orthogonal_fixed, Sampling::simplex,
                               Sampling::structured};

favor::FeatureMapOptions options(Sampling s, std::uint64_t seed, Kernel k = Kernel::positive) {
  favor::FeatureMapOptions o;
  o.dim = 16;
  o.features = 40;
  o.kernel = k;
  o.sampling = s;
  o.seed = seed;
  return o;
}

TEST(Determinism, SameSeedSameW) {
  for (Sampling s : kSamplings) {
    for (std::uint64_t seed : {0ull, 1ull, 42ull, 0xFFFFFFFFFFFFFFFFull, 0x100000000ull}) {
      const MatF a = favor::sample_projection(40, 16, s, seed);
      const MatF b = favor::sample_projection(40, 16, s, seed);
      EXPECT_TRUE(bit_identical(a, b)) << favor::to_string(s) << " seed " << seed;
      const favor::FeatureMap m1(options(s, seed)), m2(options(s, seed));
      EXPECT_TRUE(bit_identical(m1.projection(), m2.projection()));
      // The map samples exactly sample_projection(m, d, sampling, seed).
      EXPECT_TRUE(bit_identical(m1.projection(), a));
    }
  }
}

TEST(Determinism, DifferentSeedDifferentW) {
  for (Sampling s : kSamplings) {
    const MatF a = favor::sample_projection(40, 16, s, 42);
    // Neighbouring seeds, and seeds differing only in the high 32 bits (a generator that drops
    // them would collide).
    for (std::uint64_t other : {41ull, 43ull, 42ull + (1ull << 32), 42ull + (1ull << 63)}) {
      const MatF b = favor::sample_projection(40, 16, s, other);
      EXPECT_FALSE(bit_identical(a, b)) << favor::to_string(s) << " seed 42 vs " << other;
      // Not just a few different bits: the matrices are unrelated.
      EXPECT_GT((a - b).cwiseAbs().maxCoeff(), 0.1f);
    }
  }
}

// Different blocks of one W come from different random streams (no repeated block).
TEST(Determinism, BlocksAreDistinct) {
  const MatF w = favor::sample_projection(48, 16, Sampling::orthogonal, 5);
  EXPECT_GT((w.topRows(16) - w.middleRows(16, 16)).cwiseAbs().maxCoeff(), 0.1f);
  EXPECT_GT((w.middleRows(16, 16) - w.bottomRows(16)).cwiseAbs().maxCoeff(), 0.1f);
}

TEST(Determinism, RedrawEqualsFreshMap) {
  for (Sampling s : kSamplings) {
    for (Kernel k : {Kernel::positive, Kernel::hyperbolic, Kernel::oprf, Kernel::sderf}) {
      favor::FeatureMap map(options(s, 1, k));
      const MatF before = map.projection();
      map.redraw(777);
      const favor::FeatureMap fresh(options(s, 777, k));
      EXPECT_TRUE(bit_identical(map.projection(), fresh.projection()))
          << favor::to_string(s) << " " << favor::to_string(k);
      EXPECT_FALSE(bit_identical(map.projection(), before));
      EXPECT_EQ(map.sampling(), s);
      EXPECT_EQ(map.kernel(), k);
      EXPECT_EQ(map.num_projections(), 40);
      EXPECT_EQ(map.dim(), 16);
    }
  }
}

// A map built from an explicit projection redraws with its `sampling` argument, orthogonal by
// default (feature_map.hpp), keeping m x d.
TEST(Determinism, RedrawOfExplicitMap) {
  std::mt19937 gen(3);
  favor::FeatureMap map(Kernel::positive, ref::normal_matrix(40, 16, gen));
  EXPECT_TRUE(map.explicit_projection());
  map.redraw(99);
  EXPECT_TRUE(bit_identical(map.projection(), favor::sample_projection(40, 16, Sampling::orthogonal, 99)));
  EXPECT_EQ(map.num_projections(), 40);
  EXPECT_EQ(map.dim(), 16);
  favor::FeatureMap iid(Kernel::hyperbolic, ref::normal_matrix(24, 8, gen), 1e-3, Sampling::iid);
  iid.redraw(5);
  EXPECT_TRUE(bit_identical(iid.projection(), favor::sample_projection(24, 8, Sampling::iid, 5)));
  EXPECT_EQ(iid.num_features(), 48);
}

// Golden values: printed once from the implementation with %a and pasted here. They pin the
// sampler (Philox4x32-10, portable normal transform, block QR, chi norms) bit for bit so that
// the wasm build and any other platform must produce exactly the same W for a given seed.
TEST(Determinism, GoldenOrthogonal) {
  const MatF w = favor::sample_projection(5, 3, Sampling::orthogonal, 12345);
  const float golden[5][3] = {
      {-0x1.31ee3ep-3f, 0x1.1b2d92p-4f, 0x1.943p-5f},
      {-0x1.078538p-3f, 0x1.f1bfeep-2f, -0x1.12181p+0f},
      {-0x1.20c8f6p+0f, -0x1.e9fcfap+0f, -0x1.777e62p-1f},
      {0x1.a6d538p-1f, 0x1.6a4bdap-2f, -0x1.b9a6a4p+0f},
      {0x1.d9738p-1f, 0x1.5ec636p+0f, 0x1.72835cp-1f},
  };
  ASSERT_EQ(w.rows(), 5);
  ASSERT_EQ(w.cols(), 3);
  for (Index i = 0; i < 5; ++i)
    for (Index j = 0; j < 3; ++j) {
      std::uint32_t got, want;
      std::memcpy(&got, &w(i, j), 4);
      std::memcpy(&want, &golden[i][j], 4);
      EXPECT_EQ(got, want) << "(" << i << "," << j << ") got " << std::hexfloat << w(i, j)
                           << " want " << golden[i][j];
    }
}

TEST(Determinism, GoldenIid) {
  const MatF w = favor::sample_projection(4, 2, Sampling::iid, 7);
  const float golden[4][2] = {
      {0x1.048cacp-2f, 0x1.5bcffap+0f},
      {0x1.6a787p-4f, 0x1.929af2p-3f},
      {0x1.c58836p-1f, -0x1.904234p-3f},
      {-0x1.22ac62p-1f, -0x1.414012p-5f},
  };
  ASSERT_EQ(w.rows(), 4);
  ASSERT_EQ(w.cols(), 2);
  for (Index i = 0; i < 4; ++i)
    for (Index j = 0; j < 2; ++j) {
      std::uint32_t got, want;
      std::memcpy(&got, &w(i, j), 4);
      std::memcpy(&want, &golden[i][j], 4);
      EXPECT_EQ(got, want) << "(" << i << "," << j << ") got " << std::hexfloat << w(i, j)
                           << " want " << golden[i][j];
    }
}

// Philox4x32-10 known-answer vectors from the Random123 distribution (kat_vectors):
// counter = key = 0 and counter = key = all ones.
TEST(Random, Philox4x32KnownAnswers) {
  using A4 = std::array<std::uint32_t, 4>;
  using A2 = std::array<std::uint32_t, 2>;
  EXPECT_EQ(favor::philox4x32(A4{0, 0, 0, 0}, A2{0, 0}),
            (A4{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}));
  EXPECT_EQ(favor::philox4x32(A4{0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu},
                              A2{0xffffffffu, 0xffffffffu}),
            (A4{0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}));
  EXPECT_EQ(favor::philox4x32(A4{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u},
                              A2{0xa4093822u, 0x299f31d0u}),
            (A4{0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}));
}

// NormalStream: n = 200000 draws. Normal: mean SE 1/sqrt(n) = 0.0022, variance SE
// sqrt(2/n) = 0.0032, tolerance 4 SE. Uniform: strictly inside (0,1), mean 0.5 with SE
// sqrt(1/12/n) = 0.00065, tolerance 4 SE.
TEST(Random, NormalStreamMoments) {
  const int n = 200000;
  favor::NormalStream s(123, 0);
  double sum = 0, sq = 0, mx = 0;
  for (int i = 0; i < n; ++i) {
    const double z = s.normal();
    ASSERT_TRUE(std::isfinite(z));
    sum += z;
    sq += z * z;
    mx = std::max(mx, std::abs(z));
  }
  const double mean = sum / n, var = sq / n - mean * mean;
  EXPECT_NEAR(mean, 0.0, 4 * 0.0022);
  EXPECT_NEAR(var, 1.0, 4 * 0.0032);
  EXPECT_GT(mx, 3.5);  // tails exist: P(max |z| < 3.5 over 2e5 draws) ~ e^-93

  favor::NormalStream u(123, 1);
  double usum = 0;
  for (int i = 0; i < n; ++i) {
    const double x = u.uniform();
    ASSERT_GT(x, 0.0);
    ASSERT_LT(x, 1.0);
    usum += x;
  }
  EXPECT_NEAR(usum / n, 0.5, 4 * 0.00065);
}

TEST(Random, NormalStreamDeterministicAndIndependentStreams) {
  favor::NormalStream a(9, 0), b(9, 0), c(9, 1), e(10, 0);
  int differ_c = 0, differ_e = 0;
  for (int i = 0; i < 1000; ++i) {
    const double x = a.normal(), y = b.normal(), z = c.normal(), w = e.normal();
    ASSERT_EQ(std::memcmp(&x, &y, sizeof x), 0) << i;
    differ_c += x != z;
    differ_e += x != w;
  }
  EXPECT_EQ(differ_c, 1000);
  EXPECT_EQ(differ_e, 1000);
}

// Distance in units in the last place between two positive finite doubles.
std::int64_t ulp_distance(double a, double b) {
  std::int64_t ia, ib;
  std::memcpy(&ia, &a, 8);
  std::memcpy(&ib, &b, 8);
  if (ia < 0) ia = std::numeric_limits<std::int64_t>::min() - ia;
  if (ib < 0) ib = std::numeric_limits<std::int64_t>::min() - ib;
  return ia > ib ? ia - ib : ib - ia;
}

// portable_log vs std::log (glibc's log is correctly rounded in practice, < 1 ulp): within
// 2 ulp over many magnitudes, random mantissas, and values near 1 where log x ~ x - 1 is tiny
// and a naive implementation loses relative accuracy.
TEST(Random, PortableLogWithinTwoUlp) {
  std::vector<double> xs = {1.0,
                            2.0,
                            0.5,
                            10.0,
                            std::exp(1.0),
                            std::numeric_limits<double>::min(),
                            std::numeric_limits<double>::max(),
                            std::nextafter(1.0, 2.0),
                            std::nextafter(1.0, 0.0),
                            1.0 + 1e-10,
                            1.0 - 1e-10,
                            std::sqrt(2.0),
                            std::sqrt(0.5),
                            0x1.0p-53,
                            1.0 - 0x1.0p-53};
  std::mt19937_64 gen(4242);
  std::uniform_real_distribution<double> mant(1.0, 2.0);
  for (int e = -1020; e <= 1020; e += 7)
    for (int r = 0; r < 8; ++r) xs.push_back(std::ldexp(mant(gen), e));
  std::uniform_real_distribution<double> near1(-0.3, 0.3);
  for (int r = 0; r < 2000; ++r) xs.push_back(1.0 + near1(gen));
  for (int r = 0; r < 500; ++r) xs.push_back(1.0 + near1(gen) * 1e-6);
  // Uniforms as the normal transform uses them: (0, 1) with 53 bits.
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  for (int r = 0; r < 2000; ++r) {
    const double u = unit(gen);
    if (u > 0) xs.push_back(u);
  }
  int bad = 0;
  for (double x : xs) {
    const double got = favor::portable_log(x), want = std::log(x);
    const std::int64_t ulps = ulp_distance(got, want);
    if (ulps > 2 && bad++ < 10)
      ADD_FAILURE() << std::hexfloat << "portable_log(" << x << ") = " << got << ", std::log = "
                    << want << " (" << std::dec << ulps << " ulp)";
  }
  EXPECT_EQ(bad, 0) << "of " << xs.size() << " values";
}

// Subnormal inputs are positive and finite too (the documented domain).
TEST(Random, PortableLogSubnormal) {
  for (double x : {std::numeric_limits<double>::denorm_min(), 0x1.8p-1050, 0x1.fffffp-1023}) {
    const double got = favor::portable_log(x), want = std::log(x);
    EXPECT_LE(ulp_distance(got, want), 2) << std::hexfloat << x << " got " << got << " want "
                                          << want;
  }
}

}  // namespace
