// FAVOR#'s dense-exponential features ('sderf', 'aderf'; docs/design.md §3): the eigensolver
// under their parameters, the conditions that make them unbiased and optimal, the special cases
// that are OPRF, the engine against a float64 evaluation of the formula, and Monte Carlo checks
// of the mean and of the closed-form variance.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include <favor/engine/factored_attention.hpp>
#include <favor/features/factored.hpp>
#include <favor/causal_state.hpp>
#include <favor/features/symmetric_eigen.hpp>

#include "reference.hpp"

namespace {

using favor::Kernel;
using favor::Side;
using ref::Index;
using ref::MatD;
using ref::MatF;

MatD random_symmetric(Index d, std::mt19937& gen) {
  std::normal_distribution<double> n(0.0, 1.0);
  MatD a(d, d);
  for (Index i = 0; i < d; ++i)
    for (Index j = i; j < d; ++j) a(i, j) = a(j, i) = n(gen);
  return a;
}

// Rows with very different scales per coordinate, and a shared offset: the anisotropic, uncentred
// heads where FAVOR# differs from OPRF.
MatF anisotropic(Index rows, Index d, std::mt19937& gen, double size, double tilt = 0.0) {
  MatF x = ref::normal_matrix(rows, d, gen);
  for (Index i = 0; i < rows; ++i)
    for (Index k = 0; k < d; ++k)
      x(i, k) = static_cast<float>(size * (x(i, k) * std::pow(0.6, static_cast<double>(k)) + tilt * (k % 2 ? 1 : -1)));
  return x;
}

// mean over rows of x x^T * scale (float64, independent of the library's loops)
MatD second_moment(const MatF& x, double scale) {
  const MatD xd = ref::to_double(x);
  return xd.transpose() * xd * (scale / static_cast<double>(x.rows()));
}

void expect_eigen(const MatD& a, const char* what) {
  const Index d = a.rows();
  const favor::SymmetricEigen e = favor::symmetric_eigen(a);
  const MatD v = e.vectors;
  // Rounding of O(d) reflections and rotations of O(d) operations each: ~1e-14 at d = 128.
  EXPECT_LT((v.transpose() * v - MatD::Identity(d, d)).norm(), 1e-12) << what << " d=" << d;
  EXPECT_LT((a * v - v * e.values.asDiagonal()).norm(), 1e-12 * std::max(1.0, a.norm())) << what << " d=" << d;
}

TEST(SymmetricEigen, DiagonalizesWithOrthonormalVectors) {
  std::mt19937 gen(7);
  for (Index d : {1, 2, 3, 5, 32, 64, 128}) expect_eigen(random_symmetric(d, gen), "random");
  // Repeated eigenvalues (the identity plus rank one; the zero matrix), a graded spectrum, and a
  // second moment of rank 2 in d = 16: the parameters' inputs.
  MatD u = MatD::Ones(6, 1);
  expect_eigen(MatD::Identity(6, 6) + u * u.transpose(), "identity + rank one");
  expect_eigen(MatD::Zero(4, 4), "zero");
  MatD graded = random_symmetric(10, gen);
  for (Index i = 0; i < 10; ++i)
    for (Index j = 0; j < 10; ++j) graded(i, j) *= std::pow(10.0, -static_cast<double>(i + j) / 2.0);
  expect_eigen(graded, "graded");
  const MatD r = ref::to_double(ref::normal_matrix(2, 16, gen));
  expect_eigen(r.transpose() * r, "rank 2");
  // A diagonal matrix is already reduced: exact values, identity vectors.
  MatD diag = MatD::Zero(3, 3);
  diag(0, 0) = 3, diag(1, 1) = -1, diag(2, 2) = 0.5;
  const favor::SymmetricEigen e = favor::symmetric_eigen(diag);
  EXPECT_EQ(e.vectors, MatD::Identity(3, 3));
  EXPECT_EQ(e.values(0), 3.0);
  EXPECT_EQ(e.values(1), -1.0);
  EXPECT_EQ(e.values(2), 0.5);
}

TEST(DenseExponential, SymmetricParametersRotateToTheEigenbasisWithOprfPerDirection) {
  std::mt19937 gen(11);
  const Index d = 8;
  const MatF x = anisotropic(200, d, gen, 0.8, 0.2), y = anisotropic(150, d, gen, 0.7, 0.1);
  const double scale = 0.4;
  const favor::DenseExponentialParameters p = favor::dense_exponential_parameters(Kernel::sderf, x, y, scale);
  const MatD t = p.query_transform;
  EXPECT_EQ(p.query_transform, p.key_transform);
  EXPECT_LT((t * t.transpose() - MatD::Identity(d, d)).norm(), 1e-12);
  const MatD xd = ref::to_double(x) * std::sqrt(scale), yd = ref::to_double(y) * std::sqrt(scale);
  const ref::VecD mx = xd.colwise().mean(), my = yd.colwise().mean();
  const MatD both = second_moment(x, scale) + second_moment(y, scale) + mx * my.transpose() + my * mx.transpose();
  // The library sums x x^T in float (relative error <~ n u = 200 * 6e-8 ~ 1e-5, first order in
  // the eigenvalues and the parameters); a wrong basis or coefficient is off by O(1).
  const MatD rotated = t * both * t.transpose();
  double log_d = 0.0;
  for (Index k = 0; k < d; ++k) {
    for (Index j = 0; j < d; ++j)
      if (j != k) EXPECT_NEAR(rotated(k, j), 0.0, 1e-5 * both.norm());
    const ref::Oprf o = ref::oprf_coefficients(rotated(k, k), 1);
    EXPECT_NEAR(p.a(k), o.a, 1e-5 * std::abs(o.a) + 1e-9) << k;
    EXPECT_LE(p.a(k), 0.0);
    log_d += o.log_d;
  }
  EXPECT_NEAR(p.log_d, log_d, 1e-5 * std::abs(log_d) + 1e-9);
}

// Past 4,096 rows the moments are summed in blocks (float sums of at most 4,096 rows, added in
// double): the parameters still rotate 10,000 rows' moments, as float64 sums them, into their
// eigenbasis. Tolerance 1e-4 of the norm: a float sum of 4,096 products is within 4096 u ~ 2.4e-4
// of their absolute sum, and ~sqrt(4096) u ~ 4e-6 in practice; a block counted twice or left out
// moves the moments by ~40%.
TEST(DenseExponential, ParametersOfManyRowsFollowTheirFloat64Moments) {
  std::mt19937 gen(13);
  const Index d = 8, n = 10000;
  const MatF x = anisotropic(n, d, gen, 0.8, 0.2), y = anisotropic(n, d, gen, 0.7, 0.1);
  const double scale = 0.4;
  const favor::DenseExponentialParameters p = favor::dense_exponential_parameters(Kernel::sderf, x, y, scale);
  const MatD xd = ref::to_double(x) * std::sqrt(scale), yd = ref::to_double(y) * std::sqrt(scale);
  const ref::VecD mx = xd.colwise().mean(), my = yd.colwise().mean();
  const MatD both = second_moment(x, scale) + second_moment(y, scale) + mx * my.transpose() + my * mx.transpose();
  const MatD rotated = p.query_transform * both * p.query_transform.transpose();
  for (Index k = 0; k < d; ++k) {
    for (Index j = 0; j < d; ++j)
      if (j != k) EXPECT_NEAR(rotated(k, j), 0.0, 1e-4 * both.norm()) << k << ", " << j;
    const ref::Oprf o = ref::oprf_coefficients(rotated(k, k), 1);
    EXPECT_NEAR(p.a(k), o.a, 1e-4 * std::abs(o.a) + 1e-9) << k;
  }
}

TEST(DenseExponential, AsymmetricParametersBalanceTheMomentsAndKeepTheDotProduct) {
  std::mt19937 gen(12);
  const Index d = 8;
  // Queries large along the first coordinates, keys along the last ones.
  MatF x = anisotropic(300, d, gen, 1.0, 0.3), y = anisotropic(300, d, gen, 0.3);
  y = y.rowwise().reverse().eval();
  const double scale = 0.5;
  const favor::DenseExponentialParameters p = favor::dense_exponential_parameters(Kernel::aderf, x, y, scale);
  // (Psi x).(Psi^-T y) = x.y: Psi^T Psi^-T = I.
  EXPECT_LT((p.query_transform.transpose() * p.key_transform - MatD::Identity(d, d)).norm(), 1e-9);
  // Balanced: the two moments, each with the ridge delta I the parameters add (1e-6 of their mean
  // eigenvalue; docs/design.md §3), are equal after the maps. The library's moments are float
  // sums (see above): balanced to ~1e-5, not to rounding.
  MatD mx = second_moment(x, scale), my = second_moment(y, scale);
  const double delta = 1e-6 * (mx.trace() + my.trace()) / (2.0 * d) + 1e-30;
  mx += delta * MatD::Identity(d, d), my += delta * MatD::Identity(d, d);
  const MatD bx = p.query_transform * mx * p.query_transform.transpose();
  const MatD by = p.key_transform * my * p.key_transform.transpose();
  EXPECT_LT((bx - by).norm(), 1e-4 * bx.norm());
  // a is OPRF's for the balanced rows' rho.
  const MatD xd = ref::to_double(x) * std::sqrt(scale), yd = ref::to_double(y) * std::sqrt(scale);
  const double rho = ref::oprf_rho(xd * p.query_transform.transpose(), yd * p.key_transform.transpose());
  const ref::Oprf o = ref::oprf_coefficients(rho, d);
  for (Index k = 0; k < d; ++k) EXPECT_NEAR(p.a(k), o.a, 1e-5 * std::abs(o.a));
  EXPECT_NEAR(p.log_d, o.log_d, 1e-5 * std::abs(o.log_d));
}

// Features of rows x (one side) from the parameters, in float64: the formula of the header.
MatD reference_phi(const MatD& w, const MatD& x, const favor::DenseExponentialParameters& p, bool key) {
  const MatD t = key ? p.key_transform : p.query_transform;
  const Index m = w.rows(), d = w.cols();
  MatD phi(x.rows(), m);
  for (Index i = 0; i < x.rows(); ++i) {
    const ref::VecD tx = t * x.row(i).transpose();
    for (Index r = 0; r < m; ++r) {
      double e = p.log_d - 0.5 * std::log(static_cast<double>(m)) - 0.5 * tx.squaredNorm();
      for (Index k = 0; k < d; ++k) e += p.a(k) * w(r, k) * w(r, k) + std::sqrt(1.0 - 4.0 * p.a(k)) * w(r, k) * tx(k);
      phi(i, r) = std::exp(e);
    }
  }
  return phi;
}

// favor_attention / favor_attention_matrix of a map whose parameters come from each call equal
// the float64 formula for the parameters the map reports for those inputs. Tolerance 1e-4
// relative, as test_favor_explicit.cpp argues (|x~| ~ 1, float32 exponents summed over d terms).
TEST(DenseExponential, AttentionFollowsTheFormula) {
  std::mt19937 gen(13);
  for (Kernel kernel : {Kernel::sderf, Kernel::aderf})
    for (bool causal : {false, true}) {
      const Index L = 90, S = causal ? 90 : 70, d = 16, dv = 8, m = 48;
      favor::FeatureMapOptions o;
      o.dim = d, o.features = m, o.kernel = kernel, o.seed = 21;
      const favor::FeatureMap map(o);
      const double scale = ref::default_scale(d);
      const MatF q = anisotropic(L, d, gen, 1.0 / std::pow(d * scale, 0.5) * 0.6, 0.1);
      const MatF k = anisotropic(S, d, gen, 1.0 / std::pow(d * scale, 0.5) * 0.5, -0.1);
      const MatF v = ref::normal_matrix(S, dv, gen);
      const favor::KernelParameters params = map.parameters(q, k, scale);
      const MatD w = ref::to_double(map.projection());
      const MatD qf = reference_phi(w, ref::to_double(q) * std::sqrt(scale), params.dense, false);
      const MatD kf = reference_phi(w, ref::to_double(k) * std::sqrt(scale), params.dense, true);
      MatD weights = qf * kf.transpose();
      if (causal)
        for (Index i = 0; i < L; ++i)
          for (Index j = i + 1; j < S; ++j) weights(i, j) = 0.0;
      const MatD a_ref = weights.array().colwise() / weights.rowwise().sum().array();
      favor::FavorOptions fo;
      fo.causal = causal;
      SCOPED_TRACE(testing::Message() << favor::to_string(kernel) << " causal=" << causal);
      EXPECT_LT(ref::max_rel(ref::to_double(favor::favor_attention_matrix(map, q, k, fo)), a_ref), 1e-4);
      EXPECT_LT(ref::max_rel(ref::to_double(favor::favor_attention(map, q, k, v, fo)), a_ref * ref::to_double(v)), 1e-4);
      // The raw features too, each side its own.
      EXPECT_LT(ref::max_rel(ref::to_double(map.features(q * static_cast<float>(std::sqrt(scale)), params, Side::query)), qf), 1e-4);
      EXPECT_LT(ref::max_rel(ref::to_double(map.features(k * static_cast<float>(std::sqrt(scale)), params, Side::key)), kf), 1e-4);
    }
}

// Where FAVOR#'s family meets OPRF: isotropic moments make 'sderf''s per-direction coefficient
// OPRF's, and equal query and key moments make 'aderf''s Psi the identity. Features then equal
// OPRF's for the same W to float rounding (1e-5 relative: exponents of size ~3 in float32).
TEST(DenseExponential, ReducesToOprfWhereTheMomentsAllowIt) {
  const Index d = 8, m = 32;
  favor::FeatureMapOptions o;
  o.dim = d, o.features = m, o.seed = 3;
  o.kernel = Kernel::oprf;
  const favor::FeatureMap oprf(o);
  // +-c e_k for every k: mean 0, second moment (c^2 / d) I exactly.
  MatF iso = MatF::Zero(2 * d, d);
  for (Index k = 0; k < d; ++k) iso(2 * k, k) = 0.75f, iso(2 * k + 1, k) = -0.75f;
  {
    o.kernel = Kernel::sderf;
    const favor::FeatureMap sderf(o);
    const favor::KernelParameters ps = sderf.parameters(iso, iso), po = oprf.parameters(iso, iso);
    EXPECT_EQ(ps.dense.query_transform, MatD::Identity(d, d));  // no rotation was needed
    for (Index k = 0; k < d; ++k) EXPECT_NEAR(ps.dense.a(k), po.oprf.a, 1e-15);
    std::mt19937 gen(5);
    const MatF x = ref::normal_matrix(10, d, gen, 0.4);
    EXPECT_LT(ref::max_rel(ref::to_double(sderf.features(x, ps)), ref::to_double(oprf.features(x, po))), 1e-5);
  }
  {
    o.kernel = Kernel::aderf;
    const favor::FeatureMap aderf(o);
    std::mt19937 gen(6);
    const MatF x = anisotropic(400, d, gen, 0.5, 0.1);
    const favor::KernelParameters pa = aderf.parameters(x, x), po = oprf.parameters(x, x);
    EXPECT_LT((pa.dense.query_transform - MatD::Identity(d, d)).norm(), 1e-6);
    EXPECT_NEAR(pa.dense.a(0), po.oprf.a, 1e-6 * std::abs(po.oprf.a));
    EXPECT_LT(ref::max_rel(ref::to_double(aderf.features(x.topRows(10), pa, Side::key)),
                           ref::to_double(oprf.features(x.topRows(10), po))), 1e-5);
  }
}

// The second moment E[(phi(x).phi(y))^2] of one feature (m = 1, w ~ N(0, I)), in closed form:
// D^4 prod_k (1 - 8 a_k)^-1/2 exp(sum_k 2 b_k^2 u_k^2 / (1 - 8 a_k) - |x'|^2 - |y'|^2), with
// x' = T_q x, y' = T_k y, u = x' + y' (docs/design.md §3).
double log_second_moment(const favor::DenseExponentialParameters& p, const ref::VecD& x, const ref::VecD& y) {
  const ref::VecD xt = p.query_transform * x, yt = p.key_transform * y, u = xt + yt;
  double s = 4.0 * p.log_d - xt.squaredNorm() - yt.squaredNorm();
  for (Index k = 0; k < x.size(); ++k) {
    const double b2 = 1.0 - 4.0 * p.a(k);
    s += -0.5 * std::log(1.0 - 8.0 * p.a(k)) + 2.0 * b2 * u(k) * u(k) / (1.0 - 8.0 * p.a(k));
  }
  return s;
}

// OPRF's parameters in FAVOR#'s form (T = I, every a_k = A): a member of both families.
favor::DenseExponentialParameters as_dense(const favor::OprfCoefficients& c, Index d) {
  favor::DenseExponentialParameters p;
  p.query_transform = p.key_transform = MatD::Identity(d, d);
  p.a = ref::VecD::Constant(d, c.a);
  p.log_d = c.log_d;
  return p;
}

// Unbiased: over 4,000 iid draws of W (m = 16), the mean estimate of every pair is within 4.5
// standard errors of exp(x~.y~) (a false failure has probability ~1e-5 per pair; the draws are
// fixed). The empirical variance matches the closed form within 15% (its relative standard
// error is ~sqrt(kurtosis / n) ~ 3% here). And the closed-form objective, the mean log second
// moment over pairs, is below OPRF's (a member of both families), which is what the
// parameters minimize.
TEST(DenseExponential, UnbiasedWithTheClosedFormVarianceAndBelowOprf) {
  std::mt19937 gen(17);
  const Index d = 4, m = 16, draws = 4000;
  MatF x = anisotropic(3, d, gen, 0.9, 0.2), y = anisotropic(3, d, gen, 0.6);
  y = y.rowwise().reverse().eval();
  const MatD xd = ref::to_double(x), yd = ref::to_double(y);
  for (Kernel kernel : {Kernel::sderf, Kernel::aderf}) {
    SCOPED_TRACE(favor::to_string(kernel));
    const favor::DenseExponentialParameters p = favor::dense_exponential_parameters(kernel, x, y);
    std::vector<std::vector<double>> samples(9);
    for (Index s = 0; s < draws; ++s) {
      favor::FeatureMapOptions o;
      o.dim = d, o.features = m, o.kernel = kernel, o.sampling = favor::Sampling::iid;
      o.seed = static_cast<std::uint64_t>(1000 + s);
      const favor::FeatureMap map(o);
      const MatD est = favor::kernel_estimate(map, x, y);
      for (Index i = 0; i < 3; ++i)
        for (Index j = 0; j < 3; ++j) samples[static_cast<std::size_t>(i * 3 + j)].push_back(est(i, j));
    }
    double objective = 0.0, oprf_objective = 0.0;
    const favor::DenseExponentialParameters oprf = as_dense(favor::oprf_coefficients(favor::oprf_rho(x, y), d), d);
    for (Index i = 0; i < 3; ++i)
      for (Index j = 0; j < 3; ++j) {
        const std::vector<double>& xs = samples[static_cast<std::size_t>(i * 3 + j)];
        const double exact = std::exp(xd.row(i).dot(yd.row(j)));
        const ref::MeanSe ms = ref::mean_se(xs);
        EXPECT_LT(std::abs(ms.mean - exact), 4.5 * ms.se) << i << "," << j;
        double var = 0.0;
        for (double v : xs) var += (v - ms.mean) * (v - ms.mean);
        var /= static_cast<double>(xs.size() - 1);
        const double lsm = log_second_moment(p, xd.row(i).transpose(), yd.row(j).transpose());
        const double closed = (std::exp(lsm) - exact * exact) / static_cast<double>(m);
        EXPECT_NEAR(var / closed, 1.0, 0.15) << i << "," << j;
        objective += lsm / 9.0;
        oprf_objective += log_second_moment(oprf, xd.row(i).transpose(), yd.row(j).transpose()) / 9.0;
      }
    EXPECT_LT(objective, oprf_objective - 0.01);
  }
}

// A map whose parameters come from each call cannot carry a causal state; fitted, it can, and a
// prefill in pieces gives the one-call causal output (the same fitted parameters both ways).
TEST(DenseExponential, CausalStateNeedsAFittedMap) {
  std::mt19937 gen(19);
  const Index L = 40, d = 8, dv = 4;
  const MatF q = anisotropic(L, d, gen, 0.5, 0.1), k = anisotropic(L, d, gen, 0.4), v = ref::normal_matrix(L, dv, gen);
  for (Kernel kernel : {Kernel::sderf, Kernel::aderf}) {
    favor::FeatureMapOptions o;
    o.dim = d, o.features = 24, o.kernel = kernel, o.seed = 2;
    favor::FeatureMap map(o);
    EXPECT_FALSE(map.data_independent());
    favor::CausalStateOptions so;
    so.method = favor::StateMethod::favor;
    so.map = &map;
    try {
      favor::CausalState state(so);
      ADD_FAILURE() << "an unfitted map was accepted";
    } catch (const favor::Error& e) {
      EXPECT_NE(std::string(e.what()).find("not fitted"), std::string::npos) << e.what();
    }
    map.fit(q, k, ref::default_scale(d));
    EXPECT_TRUE(map.data_independent());
    favor::CausalState state(so);
    favor::FavorOptions fo;
    fo.causal = true;
    const MatD expected = ref::to_double(favor::favor_attention(map, q, k, v, fo));
    MatD got(L, dv);
    for (Index i0 = 0; i0 < L; i0 += 13) {
      const Index n = std::min<Index>(13, L - i0);
      const MatF qi = q.middleRows(i0, n), ki = k.middleRows(i0, n), vi = v.middleRows(i0, n);
      const std::vector<Index> qd = {1, n, d}, vd = {1, n, dv};
      MatF out(n, dv);
      state.append({qi.data(), qd}, {ki.data(), qd}, {vi.data(), vd}, {out.data(), vd});
      got.middleRows(i0, n) = ref::to_double(out);
    }
    // Chunked prefix sums against one pass: float32 reassociation only (1e-5 relative).
    EXPECT_LT(ref::max_rel(got, expected), 1e-5) << favor::to_string(kernel);
  }
}

// The chunk of the causal scan does not change the output (float reassociation only, 1e-5), and
// grouped query heads over one key head give each head what a call of its own gives, bit for bit
// (each head's parameters from its own q and the shared keys).
TEST(DenseExponential, ChunksAndGroupedHeads) {
  std::mt19937 gen(23);
  const Index L = 150, d = 8, dv = 4;
  const MatF k = anisotropic(L, d, gen, 0.5), v = ref::normal_matrix(L, dv, gen);
  std::vector<MatF> qs;
  for (int h = 0; h < 3; ++h) qs.push_back(anisotropic(L, d, gen, 0.3 + 0.2 * h, 0.1 * h));
  for (Kernel kernel : {Kernel::sderf, Kernel::aderf}) {
    SCOPED_TRACE(favor::to_string(kernel));
    favor::FeatureMapOptions o;
    o.dim = d, o.features = 32, o.kernel = kernel, o.seed = 4;
    const favor::FeatureMap map(o);
    favor::FavorOptions fo;
    fo.causal = true;
    fo.chunk = 1000;
    const MatD one_chunk = ref::to_double(favor::favor_attention(map, qs[0], k, v, fo));
    for (Index chunk : {1, 7, 64}) {
      fo.chunk = chunk;
      EXPECT_LT(ref::max_rel(ref::to_double(favor::favor_attention(map, qs[0], k, v, fo)), one_chunk), 1e-5) << chunk;
    }
    std::vector<MatF> outs(3, MatF(L, dv));
    std::vector<favor::ConstMatrixRef> q_refs(qs.begin(), qs.end());
    std::vector<favor::MatrixRef> out_refs(outs.begin(), outs.end());
    favor::favor_attention(map, q_refs, k, v, out_refs, fo);
    for (int h = 0; h < 3; ++h) {
      const MatF own = favor::favor_attention(map, qs[static_cast<std::size_t>(h)], k, v, fo);
      EXPECT_EQ(own, outs[static_cast<std::size_t>(h)]) << "head " << h;
    }
  }
}

TEST(DenseExponential, MisuseIsRefusedWithTheArgumentNamed) {
  favor::FeatureMapOptions o;
  o.dim = 300, o.features = 8, o.kernel = Kernel::sderf;
  EXPECT_THROW({ favor::FeatureMap map(o); }, favor::Error);
  o.dim = 4;
  o.kernel = Kernel::positive;
  favor::FeatureMap positive(o);
  const MatF x = MatF::Ones(3, 4);
  try {
    positive.fit(x, x);
    ADD_FAILURE();
  } catch (const favor::Error& e) {
    EXPECT_NE(std::string(e.what()).find("kernel"), std::string::npos);
  }
  EXPECT_THROW(favor::dense_exponential_parameters(Kernel::oprf, x, x), favor::Error);
  o.kernel = Kernel::aderf;
  favor::FeatureMap aderf(o);
  EXPECT_THROW(aderf.fit(x, MatF::Ones(3, 5)), favor::Error);
  MatF bad = x;
  bad(1, 1) = std::nanf("");
  EXPECT_THROW(aderf.fit(bad, x), favor::Error);
  EXPECT_THROW(aderf.fit(x, x, -1.0), favor::Error);
  EXPECT_FALSE(aderf.data_independent());  // a failed fit changed nothing
  // A W so large that the query side's W diag(b) Psi leaves float32 (zero queries against large
  // keys make Psi ~30): a RangeError naming the inputs, not weights lost to infinities.
  // The same once fitted to those inputs (the map keeps no prepared copy then; each call reports it).
  favor::FeatureMap huge(Kernel::aderf, MatF::Constant(4, 2, 1e36f));
  for (bool fitted : {false, true}) {
    if (fitted) huge.fit(MatF::Zero(3, 2), MatF::Constant(3, 2, 100.0f), 1.0 / std::sqrt(2.0));
    try {
      favor::favor_attention(huge, MatF::Zero(3, 2), MatF::Constant(3, 2, 100.0f), MatF::Ones(3, 1));
      ADD_FAILURE() << "an overflowing projection was accepted, fitted " << fitted;
    } catch (const favor::Error& e) {
      EXPECT_EQ(std::string(e.what()).rfind("q, k: FAVOR#'s ", 0), 0u) << e.what();
      EXPECT_NE(std::string(e.what()).find("overflows float32 (-1.97e+72)"), std::string::npos) << e.what();
    }
  }
  // Zero inputs: finite parameters (the ridge) and exact weights of 1.
  const MatF zero = MatF::Zero(5, 4);
  const MatD est = favor::kernel_estimate(aderf, zero, zero);
  EXPECT_NEAR(est(0, 0), 1.0, 1e-5);
}

}  // namespace
