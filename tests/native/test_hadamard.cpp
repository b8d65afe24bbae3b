// The fast Walsh-Hadamard kernel (kernels/hadamard.hpp) and the structured projection built on it
// (features/structured_projection.hpp, docs/design.md §2): the batched SIMD transform equals its
// scalar twin bit for bit and the Hadamard matrix to float rounding; a map sampled 'structured'
// projects by transforms, within rounding of the GEMM with the same W and of a float64 product,
// for every kernel and both epilogues (key logs with column maxima, queries at a shift).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include <favor/features/factored.hpp>
#include <favor/features/structured_projection.hpp>
#include <favor/kernels/hadamard.hpp>

#include "reference.hpp"

namespace {

using favor::FeatureMap;
using favor::Index;
using favor::Kernel;
using favor::Sampling;
using ref::MatF;
namespace hadamard = favor::hadamard;

constexpr double kU = 0x1p-24;  // float's unit roundoff

int log2_of(Index p) {
  int k = 0;
  while ((Index{1} << k) < p) ++k;
  return k;
}

std::vector<float> normals(std::size_t n, std::mt19937& gen) {
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(gen);
  return v;
}

std::vector<float> random_signs(Index p, std::mt19937& gen) {
  std::vector<float> s(static_cast<std::size_t>(p));
  for (float& x : s) x = gen() & 1 ? 1.0f : -1.0f;
  return s;
}

TEST(Hadamard, BatchedRowsEqualTheScalarTwinBitForBit) {
  std::mt19937 gen(11);
  for (Index p = 1; p <= 1024; p *= 2)
    for (bool with_signs : {false, true})
      for (bool in_place : {false, true}) {
        SCOPED_TRACE(::testing::Message() << "p " << p << " signs " << with_signs << " in place " << in_place);
        const std::vector<float> signs = random_signs(p, gen);
        const float* s = with_signs ? signs.data() : nullptr;
        std::vector<float> batch = normals(static_cast<std::size_t>(p * hadamard::kRows), gen), out(batch.size());
        std::vector<float> rows(batch.size());  // row r at r p
        for (Index t = 0; t < p; ++t)
          for (Index r = 0; r < hadamard::kRows; ++r) rows[r * p + t] = batch[t * hadamard::kRows + r];
        if (in_place) {
          hadamard::transform_rows(batch.data(), batch.data(), p, s);
          out = batch;
        } else {
          hadamard::transform_rows(batch.data(), out.data(), p, s);
        }
        for (Index r = 0; r < hadamard::kRows; ++r) {
          hadamard::transform(rows.data() + r * p, p, s);
          for (Index t = 0; t < p; ++t)
            ASSERT_EQ(0, std::memcmp(&rows[r * p + t], &out[t * hadamard::kRows + r], sizeof(float)))
                << "row " << r << " entry " << t;
        }
      }
}

// H'(i, j) = (-1)^popcount(i & j). Each output is a sum of p terms +-s_j x_j by a tree of log2 p
// rounded adds, so |error| <= gamma_{log2 p} sum |x_j| with gamma_k = k u / (1 - k u) (Higham,
// pairwise summation); the sign products are exact.
TEST(Hadamard, MatchesTheHadamardMatrixWithinTheSummationBound) {
  std::mt19937 gen(12);
  for (Index p = 1; p <= 512; p *= 2) {
    const std::vector<float> signs = random_signs(p, gen);
    std::vector<float> x = normals(static_cast<std::size_t>(p), gen), y = x;
    hadamard::transform(y.data(), p, signs.data());
    const double k = log2_of(p), gamma = k * kU / (1.0 - k * kU);
    double l1 = 0.0;
    for (float v : x) l1 += std::abs(v);
    for (Index i = 0; i < p; ++i) {
      double exact = 0.0;
      for (Index j = 0; j < p; ++j)
        exact += (__builtin_popcountll(static_cast<unsigned long long>(i & j)) % 2 ? -1.0 : 1.0) * signs[j] * x[j];
      EXPECT_LE(std::abs(y[i] - exact), gamma * l1) << "p " << p << " i " << i;
    }
  }
}

// Bounds on |computed - root x.w_r| for row x (|root x| = norm). Transforms: each of the 3 log2 p
// butterfly stages maps the vector's norm by sqrt 2 exactly and rounds each entry by <= u, an
// error vector of norm <= u times the stage's output norm, carried by the later stages with that
// same growth; so the p outputs of three transforms of x err by <= 3 log2(p) u p^(3/2) |x| in
// 2-norm (first order; 1% covers the rest), which /p is sqrt(p) |x| 3 log2(p) u; the scale by
// root / p rounds once more, <= u |w.x~| <= u sqrt(p) |x~|. GEMM: a sequential sum of d rounded
// products, <= gamma_d sum |w_t x~_t| <= d u |w_r| |x~|, and the scale by root once more.
double transform_bound(Index d, double norm) {
  const Index p = favor::structured::padded_dim(d);
  return 1.01 * (3.0 * log2_of(p) + 1.0) * kU * std::sqrt(static_cast<double>(p)) * norm;
}
double gemm_bound(Index d, double w_norm, double norm) { return 1.01 * (d + 1.0) * kU * w_norm * norm; }

struct Shape {
  Index d, m, rows;
};
const Shape kShapes[] = {{1, 3, 5}, {2, 5, 4}, {3, 7, 9}, {8, 8, 1}, {12, 30, 7},
                         {16, 64, 33}, {64, 256, 70}, {100, 130, 6}, {5, 1, 3}};

TEST(StructuredProjection, EqualsTheFloat64ProductAndTheGemmWithinRounding) {
  std::mt19937 gen(13);
  for (const Shape& s : kShapes)
    for (float root : {1.0f, static_cast<float>(std::pow(s.d, -0.25))}) {
      SCOPED_TRACE(::testing::Message() << "d " << s.d << " m " << s.m << " rows " << s.rows << " root " << root);
      const MatF w = favor::sample_projection(s.m, s.d, Sampling::structured, 40 + s.d);
      const favor::FloatBuffer signs = favor::structured::signs(s.m, s.d, 40 + s.d);
      // x as a view with a row stride wider than d (a head's block of a wider tensor)
      const MatF wide = ref::normal_matrix(s.rows, s.d + 3, gen);
      const favor::ConstMatrixRef x = wide.leftCols(s.d);
      MatF fast(s.rows, s.m), product(s.rows, s.m);
      favor::structured::project(x, s.m, signs.data(), root, fast.data(), s.m);
      favor::FloatBuffer packed;
      favor::gemm::pack_bt(s.m, s.d, w.data(), s.d, packed);
      favor::gemm::gemm_packed(s.rows, s.m, s.d, x.data(), x.outerStride(), 1, packed.data(), product.data(), s.m,
                               false, root);
      for (Index i = 0; i < s.rows; ++i) {
        const double norm = root * x.row(i).cast<double>().norm();
        for (Index r = 0; r < s.m; ++r) {
          const double exact = root * x.row(i).cast<double>().dot(w.row(r).cast<double>());
          const double t = transform_bound(s.d, norm), g = gemm_bound(s.d, w.row(r).cast<double>().norm(), norm);
          EXPECT_LE(std::abs(fast(i, r) - exact), t) << i << ", " << r;
          EXPECT_LE(std::abs(fast(i, r) - product(i, r)), t + g) << i << ", " << r;
        }
      }
    }
}

// The epilogue in the GEMM's order: each entry its scaled projection + row_add[i] + column_add[j],
// and the maxima exactly those of the stored entries (a row's in the first of its kLanes).
TEST(StructuredProjection, EpilogueAddsAndTakesMaximaAsTheGemmDoes) {
  std::mt19937 gen(14);
  for (const Shape& s : kShapes) {
    SCOPED_TRACE(::testing::Message() << "d " << s.d << " m " << s.m << " rows " << s.rows);
    const favor::FloatBuffer signs = favor::structured::signs(s.m, s.d, 7);
    const MatF x = ref::normal_matrix(s.rows, s.d, gen);
    const float root = 0.7f;
    MatF plain(s.rows, s.m);
    favor::structured::project(x, s.m, signs.data(), root, plain.data(), s.m);
    const MatF adds = ref::normal_matrix(2, std::max(s.rows, s.m), gen);
    std::vector<float> column_max(static_cast<std::size_t>(s.m), -std::numeric_limits<float>::infinity());
    std::vector<float> row_max(static_cast<std::size_t>(s.rows * favor::gemm::kLanes), std::numeric_limits<float>::lowest());
    MatF keys(s.rows, s.m), queries(s.rows, s.m);
    favor::structured::project(x, s.m, signs.data(), root, keys.data(), s.m, {adds.row(0).data(), column_max.data()});
    favor::structured::project(x, s.m, signs.data(), root, queries.data(), s.m,
                               {nullptr, nullptr, adds.row(1).data(), row_max.data()});
    for (Index i = 0; i < s.rows; ++i) {
      float top = std::numeric_limits<float>::lowest();
      for (Index l = 0; l < favor::gemm::kLanes; ++l) top = std::max(top, row_max[i * favor::gemm::kLanes + l]);
      float expected_top = std::numeric_limits<float>::lowest();
      for (Index j = 0; j < s.m; ++j) {
        EXPECT_EQ(keys(i, j), plain(i, j) + adds(0, i));
        EXPECT_EQ(queries(i, j), plain(i, j) + adds(1, j));
        expected_top = std::max(expected_top, queries(i, j));
      }
      EXPECT_EQ(top, expected_top) << "row " << i;
    }
    for (Index j = 0; j < s.m; ++j) EXPECT_EQ(column_max[j], keys.col(j).maxCoeff()) << "column " << j;
  }
}

// Every other combination of the epilogue's parts (the feature maps use only those above) gives
// the same: each entry its scaled projection + row_add[i] + column_add[j], and the maxima those
// of the stored entries.
TEST(StructuredProjection, EveryEpilogueCombinationAddsAndTakesMaxima) {
  std::mt19937 gen(16);
  const Index d = 24, m = 60, rows = 11;
  const favor::FloatBuffer signs = favor::structured::signs(m, d, 9);
  const MatF x = ref::normal_matrix(rows, d, gen);
  MatF plain(rows, m);
  favor::structured::project(x, m, signs.data(), 0.7f, plain.data(), m);
  const MatF adds = ref::normal_matrix(2, std::max(rows, m), gen);
  for (int flags = 1; flags < 16; ++flags) {
    SCOPED_TRACE(::testing::Message() << "flags " << flags);
    std::vector<float> column_max(static_cast<std::size_t>(m), -std::numeric_limits<float>::infinity());
    std::vector<float> row_max(static_cast<std::size_t>(rows * favor::gemm::kLanes), std::numeric_limits<float>::lowest());
    favor::gemm::Epilogue out;
    if (flags & 1) out.row_add = adds.row(0).data();
    if (flags & 2) out.column_max = column_max.data();
    if (flags & 4) out.column_add = adds.row(1).data();
    if (flags & 8) out.row_max = row_max.data();
    MatF c(rows, m);
    favor::structured::project(x, m, signs.data(), 0.7f, c.data(), m, out);
    std::vector<float> expected_column_max(static_cast<std::size_t>(m), -std::numeric_limits<float>::infinity());
    for (Index i = 0; i < rows; ++i) {
      float expected_top = std::numeric_limits<float>::lowest();
      for (Index j = 0; j < m; ++j) {
        float e = plain(i, j);
        if (flags & 1) e = e + adds(0, i);
        if (flags & 4) e = e + adds(1, j);
        ASSERT_EQ(c(i, j), e) << "entry " << i << ", " << j;
        expected_top = std::max(expected_top, e);
        expected_column_max[j] = std::max(expected_column_max[j], e);
      }
      if (flags & 8) {
        float top = std::numeric_limits<float>::lowest();
        for (Index l = 0; l < favor::gemm::kLanes; ++l) top = std::max(top, row_max[i * favor::gemm::kLanes + l]);
        EXPECT_EQ(top, expected_top) << "row " << i;
      }
    }
    if (flags & 2)
      for (Index j = 0; j < m; ++j) EXPECT_EQ(column_max[j], expected_column_max[j]) << "column " << j;
  }
}

// Rows are transformed independently of the batch they share: any split of the rows (as threads
// and chunks make) gives the same bits.
TEST(StructuredProjection, RowsGiveTheSameBitsHoweverTheyAreSplit) {
  std::mt19937 gen(15);
  const Index d = 24, m = 60, rows = 23;
  const favor::FloatBuffer signs = favor::structured::signs(m, d, 3);
  const MatF x = ref::normal_matrix(rows, d, gen);
  MatF whole(rows, m);
  favor::structured::project(x, m, signs.data(), 0.5f, whole.data(), m);
  for (Index split : {1, 2, 3, 5, 6}) {
    MatF parts(rows, m);
    for (Index i0 = 0; i0 < rows; i0 += split) {
      const Index n = std::min(split, rows - i0);
      favor::structured::project(x.middleRows(i0, n), m, signs.data(), 0.5f, parts.data() + i0 * m, m);
    }
    EXPECT_EQ(0, std::memcmp(whole.data(), parts.data(), sizeof(float) * rows * m)) << "split " << split;
  }
}

bool same_bits(const MatF& a, const MatF& b) {
  return a.rows() == b.rows() && a.cols() == b.cols() && std::memcmp(a.data(), b.data(), sizeof(float) * a.size()) == 0;
}

favor::FeatureMapOptions structured_options(Kernel kernel, Index d, Index m, std::uint64_t seed) {
  favor::FeatureMapOptions o;
  o.dim = d;
  o.features = m;
  o.kernel = kernel;
  o.sampling = Sampling::structured;
  o.seed = seed;
  o.rho = 1.5;  // OPRF's parameters fixed, the same for both maps
  return o;
}

// Every kernel's factors from the sampled map (transforms) against the same W given explicitly
// (the GEMM): each factor is a function of the projection with slope at most `slope` (1; |B| for
// OPRF's exponent), so it may differ by slope times both projections' bounds, plus the rounding
// of the function itself: one rounded add or multiply of the result (u |result|), and for cos and
// sin Eigen's vectorized forms, within a few ulp of 1 on these arguments (8 u allowed).
TEST(StructuredProjection, EveryKernelMatchesTheGemmWithTheSameProjection) {
  std::mt19937 gen(16);
  const Kernel kernels[] = {Kernel::positive, Kernel::hyperbolic, Kernel::trigonometric, Kernel::relu, Kernel::oprf};
  for (const Shape& s : {Shape{64, 256, 37}, Shape{12, 30, 9}, Shape{3, 8, 5}})
    for (Kernel kernel : kernels)
      for (bool fold : {false, true}) {
        SCOPED_TRACE(::testing::Message() << favor::to_string(kernel) << " d " << s.d << " m " << s.m << " fold " << fold);
        const FeatureMap fast(structured_options(kernel, s.d, s.m, 91));
        const FeatureMap dense(kernel, fast.projection(), fast.epsilon(), Sampling::structured);
        const MatF x = ref::normal_matrix(s.rows, s.d, gen, 0.8);
        const float root = static_cast<float>(std::pow(s.d, -0.25));
        const favor::KernelParameters params = fast.parameters(x, x, static_cast<double>(root) * root);
        const favor::FactoredFeatures a = fast.factored(x, params, root, fold), b = dense.factored(x, params, root, fold);
        ASSERT_EQ(a.row_log.size(), b.row_log.size());
        EXPECT_TRUE(a.row_log == b.row_log);  // |x~|^2 / 2, not projected
        EXPECT_EQ(a.column_max.size(), b.column_max.size());
        const double slope = kernel == Kernel::oprf ? params.oprf.b : 1.0;
        const double fn = kernel == Kernel::trigonometric ? 8.0 * kU : 0.0;
        const bool values = a.value.size() > 0;
        const MatF& fa = values ? a.value : a.exponent;
        const MatF& fb = values ? b.value : b.exponent;
        ASSERT_EQ(fa.rows(), s.rows);
        ASSERT_EQ(fa.cols(), fb.cols());
        for (Index i = 0; i < s.rows; ++i) {
          const double norm = root * x.row(i).cast<double>().norm();
          for (Index j = 0; j < fa.cols(); ++j) {
            const Index r = j % s.m;
            const double bound = slope * (transform_bound(s.d, norm) +
                                          gemm_bound(s.d, fast.projection().row(r).cast<double>().norm(), norm)) +
                                 2.0 * kU * std::abs(fb(i, j)) + fn;
            EXPECT_LE(std::abs(fa(i, j) - fb(i, j)), bound) << i << ", " << j;
          }
        }
        // Each column maximum is that of its column (row_log folded in: the logs the keys carry).
        for (Index j = 0; j < a.column_max.size(); ++j)
          EXPECT_EQ(a.column_max(j), (a.exponent.col(j) + a.row_log).maxCoeff()) << "column " << j;
      }
}

// The positive kernel's queries at the keys' shift: exp(t - row max of t), t = w.x~ + shift,
// from the transforms against the GEMM. |d t| is bounded by both projections' bounds, the row
// max moves by at most the largest of them, so the exponent moves by <= twice the largest (plus
// the adds' rounding, u |t| each) and exp (within ~1 ulp) by that relative.
TEST(StructuredProjection, QueriesAtShiftMatchTheGemm) {
  std::mt19937 gen(17);
  const Index d = 64, m = 256, rows = 45;
  const FeatureMap fast(structured_options(Kernel::positive, d, m, 5));
  const FeatureMap dense(Kernel::positive, fast.projection(), fast.epsilon(), Sampling::structured);
  const MatF x = ref::normal_matrix(rows, d, gen, 0.8);
  const float root = static_cast<float>(std::pow(d, -0.25));
  favor::Vector shift = ref::normal_matrix(1, m, gen).row(0).transpose();
  shift(3) = -std::numeric_limits<float>::infinity();  // a column no key carries weight in
  MatF qa, qb;
  ASSERT_TRUE(fast.queries_at_shift(x, root, shift, qa));
  ASSERT_TRUE(dense.queries_at_shift(x, root, shift, qb));
  for (Index i = 0; i < rows; ++i) {
    const double norm = root * x.row(i).cast<double>().norm();
    double worst = 0.0, t_top = 0.0;
    for (Index r = 0; r < m; ++r) {
      worst = std::max(worst, transform_bound(d, norm) + gemm_bound(d, fast.projection().row(r).cast<double>().norm(), norm));
      if (std::isfinite(shift(r))) t_top = std::max(t_top, std::abs(root * x.row(i).cast<double>().dot(fast.projection().row(r).cast<double>())) + std::abs(shift(r)));
    }
    const double move = 2.0 * (worst + 2.0 * kU * t_top) + 2.0 * kU;
    for (Index r = 0; r < m; ++r) {
      EXPECT_LE(std::abs(qa(i, r) - qb(i, r)), move * std::max(qa(i, r), qb(i, r)) + 1e-45) << i << ", " << r;
      if (r == 3) EXPECT_EQ(qa(i, r), 0.0f);
    }
  }
}

// Which maps take the transforms: a sampled 'structured' W (constructor or redraw), not an
// explicit one nor other samplings (their bits are the GEMM's: equal to the explicit map's), and
// not rows whose transforms could overflow (huge inputs: the GEMM's bits and its infinities).
TEST(StructuredProjection, OnlySampledStructuredMapsTakeTheTransforms) {
  std::mt19937 gen(18);
  const Index d = 32, m = 64, rows = 16;
  const MatF x = ref::normal_matrix(rows, d, gen);
  const auto projected = [&](const FeatureMap& map, const MatF& in) { return map.factored(in, {}, 0.5f).exponent; };
  FeatureMap sampled(structured_options(Kernel::positive, d, m, 21));
  FeatureMap given(Kernel::positive, sampled.projection(), 1e-3, Sampling::structured);
  EXPECT_FALSE(same_bits(projected(sampled, x), projected(given, x)));  // rounding differs somewhere
  favor::FeatureMapOptions o = structured_options(Kernel::positive, d, m, 21);
  o.sampling = Sampling::orthogonal;
  const FeatureMap orthogonal(o);
  EXPECT_TRUE(same_bits(projected(orthogonal, x), projected(FeatureMap(Kernel::positive, orthogonal.projection()), x)));
  // Huge rows (|x|^2 overflows float): the GEMM, whose infinities prepared() then reports.
  const MatF huge = x * 1e30f;
  EXPECT_TRUE(same_bits(projected(sampled, huge), projected(given, huge)));
  // redraw: a new W, and the transforms follow it; an explicit map redrawn is sampled from then on.
  sampled.redraw(22);
  given.redraw(22);
  ASSERT_TRUE(sampled.projection() == given.projection());
  EXPECT_TRUE(same_bits(projected(sampled, x), projected(given, x)));
  const FeatureMap reference(Kernel::positive, sampled.projection());
  const MatF a = projected(sampled, x), b = projected(reference, x);
  EXPECT_FALSE(same_bits(a, b));
  for (Index i = 0; i < rows; ++i)
    for (Index r = 0; r < m; ++r) {
      const double norm = 0.5 * x.row(i).cast<double>().norm();
      EXPECT_LE(std::abs(a(i, r) - b(i, r)),
                transform_bound(d, norm) + gemm_bound(d, sampled.projection().row(r).cast<double>().norm(), norm));
    }
}

// FAVOR+ end to end, bidirectional and causal, on 2 threads and 1: the same bits either way, and
// within rounding of the explicit W's output (relative 1e-5: projections differing by ~1e-6
// relative move each weight by as much, and the normalized output by at most twice that).
TEST(StructuredProjection, FavorAttentionIsDeterministicAndNearTheGemm) {
  std::mt19937 gen(19);
  const Index L = 300, d = 64, dv = 16, m = 256;
  const FeatureMap fast(structured_options(Kernel::positive, d, m, 23));
  const FeatureMap dense(Kernel::positive, fast.projection());
  const MatF q = ref::normal_matrix(L, d, gen, 0.5), k = ref::normal_matrix(L, d, gen, 0.5), v = ref::normal_matrix(L, dv, gen);
  for (bool causal : {false, true}) {
    favor::FavorOptions o;
    o.causal = causal;
    const int threads = favor::max_threads();
    favor::set_max_threads(2);
    const MatF two = favor::favor_attention(fast, q, k, v, o);
    favor::set_max_threads(1);
    const MatF one = favor::favor_attention(fast, q, k, v, o);
    favor::set_max_threads(threads);
    EXPECT_TRUE(same_bits(one, two)) << "causal " << causal;
    const MatF reference = favor::favor_attention(dense, q, k, v, o);
    EXPECT_LT(ref::rel_frobenius(ref::to_double(one), ref::to_double(reference)), 1e-5) << "causal " << causal;
  }
}

}  // namespace
