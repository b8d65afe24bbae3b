// Codebook attention (Transformer-VQ) and k-means, against float64 references and identities.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include <favor/favor.hpp>
#include <favor/engine/codebook_state.hpp>

namespace {

using favor::Assignment;
using favor::CodebookOptions;
using favor::Index;
using favor::Matrix;
using favor::MatrixD;

Matrix gaussian(Index rows, Index cols, std::mt19937& g, float sigma = 1.0f) {
  std::normal_distribution<float> n(0.0f, sigma);
  Matrix m(rows, cols);
  for (Index i = 0; i < m.size(); ++i) m.data()[i] = n(g);
  return m;
}

double rel(const MatrixD& a, const MatrixD& b) { return (a - b).norm() / b.norm(); }

// w_ij = sum_y exp(s q_i.c_y) R_jy with R from the definition, normalized per row, in double.
MatrixD reference_matrix(const Matrix& c, const Matrix& q, const Matrix& k, Assignment a,
                         double temperature, bool causal) {
  const double s = 1.0 / std::sqrt(static_cast<double>(q.cols()));
  const MatrixD cd = c.cast<double>(), qd = q.cast<double>(), kd = k.cast<double>();
  MatrixD r(k.rows(), c.rows());
  for (Index j = 0; j < k.rows(); ++j) {
    Eigen::VectorXd d2(c.rows());
    for (Index y = 0; y < c.rows(); ++y) d2(y) = s * (kd.row(j) - cd.row(y)).squaredNorm();
    for (Index y = 0; y < c.rows(); ++y) {
      if (a == Assignment::gaussian) r(j, y) = std::exp(-d2(y) / 2);
      if (a == Assignment::soft) r(j, y) = std::exp(-(d2(y) - d2.minCoeff()) / (2 * temperature));
      if (a == Assignment::hard) { Index best; d2.minCoeff(&best); r(j, y) = y == best; }
    }
    if (a == Assignment::soft) r.row(j) /= r.row(j).sum();
  }
  MatrixD w(q.rows(), k.rows());
  for (Index i = 0; i < q.rows(); ++i) {
    Eigen::VectorXd e(c.rows());
    for (Index y = 0; y < c.rows(); ++y) e(y) = s * qd.row(i).dot(cd.row(y));
    e.array() -= e.maxCoeff();
    w.row(i) = (r * e.array().exp().matrix()).transpose();
    if (causal) w.row(i).tail(k.rows() - i - 1).setZero();
    w.row(i) /= w.row(i).sum();
  }
  return w;
}

constexpr Assignment kAssignments[] = {Assignment::hard, Assignment::soft, Assignment::gaussian};

TEST(Codebook, MatrixMatchesFloat64Definition) {
  std::mt19937 g(11);
  const Matrix q = gaussian(40, 8, g, 0.7f), k = gaussian(40, 8, g, 0.7f), c = gaussian(12, 8, g, 0.7f);
  for (Assignment a : kAssignments)
    for (bool causal : {false, true}) {
      SCOPED_TRACE(favor::to_string(a) + std::string(causal ? " causal" : ""));
      CodebookOptions o;
      o.assignment = a;
      o.temperature = 0.5;
      o.causal = causal;
      const MatrixD ref = reference_matrix(c, q, k, a, 0.5, causal);
      // float32 inputs to float32 exps and GEMMs of length <= 12: ~1e-6; 1e-5 leaves margin.
      EXPECT_LT(rel(favor::codebook_attention_matrix(c, q, k, o).cast<double>(), ref), 1e-5);
    }
}

TEST(Codebook, HardVqIsExactWhenEveryKeyIsACodeword) {
  std::mt19937 g(12);
  const Matrix c = gaussian(10, 16, g);
  Matrix k(100, 16);
  std::uniform_int_distribution<int> pick(0, 9);
  for (Index j = 0; j < k.rows(); ++j) k.row(j) = c.row(pick(g));
  const Matrix q = gaussian(100, 16, g), v = gaussian(100, 5, g);
  for (bool causal : {false, true}) {
    CodebookOptions o;
    o.causal = causal;
    o.chunk = 32;
    favor::AttentionOptions e;
    e.causal = causal;
    const MatrixD exact = favor::attention_matrix(q, k, e).cast<double>() * v.cast<double>();
    // Same scores as exact attention up to float rounding of q.c vs q.k: 1e-5 relative.
    EXPECT_LT(rel(favor::codebook_attention(c, q, k, v, o).cast<double>(), exact), 1e-5);
  }
}

TEST(Codebook, GaussianAssignmentWithProjectionCodebookIsFavorPlus) {
  std::mt19937 g(13);
  const Index d = 16;
  const Matrix q = gaussian(64, d, g, 0.6f), k = gaussian(64, d, g, 0.6f), v = gaussian(64, 4, g);
  favor::FeatureMapOptions fo;
  fo.dim = d;
  fo.features = 40;
  fo.kernel = favor::Kernel::positive;
  fo.sampling = favor::Sampling::orthogonal_fixed;
  fo.seed = 5;
  const favor::FeatureMap map(fo);
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));
  const Matrix c = favor::codebook_from_projection(map.projection(), scale);
  for (bool causal : {false, true}) {
    CodebookOptions o;
    o.assignment = Assignment::gaussian;
    o.causal = causal;
    favor::FavorOptions f;
    f.causal = causal;
    const MatrixD favor_out = favor::favor_attention(map, q, k, v, f).cast<double>();
    EXPECT_LT(rel(favor::codebook_attention(c, q, k, v, o).cast<double>(), favor_out), 1e-5);
    const MatrixD favor_matrix = favor::favor_attention_matrix(map, q, k, f).cast<double>();
    EXPECT_LT(rel(favor::codebook_attention_matrix(c, q, k, o).cast<double>(), favor_matrix), 1e-5);
  }
}

TEST(Codebook, SoftTendsToHardAsTemperatureVanishes) {
  std::mt19937 g(14);
  const Matrix q = gaussian(50, 8, g), k = gaussian(50, 8, g), v = gaussian(50, 3, g), c = gaussian(6, 8, g);
  CodebookOptions hard;
  const MatrixD h = favor::codebook_attention(c, q, k, v, hard).cast<double>();
  double previous = std::numeric_limits<double>::infinity();
  for (double t : {10.0, 1.0, 0.1, 0.01, 1e-3, 1e-4, 1e-6}) {
    CodebookOptions soft;
    soft.assignment = Assignment::soft;
    soft.temperature = t;
    const double gap = rel(favor::codebook_attention(c, q, k, v, soft).cast<double>(), h);
    EXPECT_LE(gap, previous) << "temperature " << t;
    previous = gap;
  }
  // At T = 1e-6 the second-nearest codeword's weight is ~exp(-gap/(2T)), gap = the difference of
  // scaled squared distances (>~1e-3 for random data): far below float rounding.
  EXPECT_LT(previous, 1e-5);
}

TEST(Codebook, CausalEqualsMaskedMatrixForEveryChunk) {
  std::mt19937 g(15);
  const Matrix q = gaussian(70, 8, g), k = gaussian(70, 8, g), v = gaussian(70, 6, g), c = gaussian(9, 8, g);
  for (Assignment a : kAssignments)
    for (Index chunk : {1, 5, 16, 128}) {
      CodebookOptions o;
      o.assignment = a;
      o.causal = true;
      o.chunk = chunk;
      const MatrixD masked = favor::codebook_attention_matrix(c, q, k, o).cast<double>() * v.cast<double>();
      EXPECT_LT(rel(favor::codebook_attention(c, q, k, v, o).cast<double>(), masked), 1e-5)
          << favor::to_string(a) << " chunk " << chunk;
    }
}

TEST(KMeans, ObjectiveNeverIncreasesAndSeedIsDeterministic) {
  std::mt19937 g(16);
  const Matrix x = gaussian(500, 6, g);
  for (std::uint64_t seed : {0u, 1u, 2u, 3u}) {
    favor::KMeansOptions o;
    o.clusters = 16;
    o.iterations = 50;
    o.seed = seed;
    const auto r = favor::kmeans(x, o);
    ASSERT_GE(r.objective.size(), 2u);
    for (std::size_t t = 1; t < r.objective.size(); ++t) EXPECT_LE(r.objective[t], r.objective[t - 1]);
    const auto again = favor::kmeans(x, o);
    EXPECT_EQ(0, std::memcmp(r.centroids.data(), again.centroids.data(), sizeof(float) * r.centroids.size()));
  }
  favor::KMeansOptions a, b;
  a.clusters = b.clusters = 16;
  b.seed = 1;
  EXPECT_NE(favor::kmeans(x, a).centroids, favor::kmeans(x, b).centroids);
}

// Where Lloyd's iterations settle, each centroid is the mean of the points assigned to it (one
// point's included) and each point is assigned to a nearest centroid: over many small random sets,
// where clusters of one point and clusters that change hands are common.
TEST(KMeans, SettlesWhereEachCentroidIsItsPointsMean) {
  std::mt19937 g(20);
  for (int trial = 0; trial < 300; ++trial) {
    const Matrix x = gaussian(7, 2, g);
    favor::KMeansOptions o;
    o.clusters = 4, o.iterations = 200, o.seed = static_cast<std::uint64_t>(trial);
    const auto r = favor::kmeans(x, o);
    EXPECT_LT(r.objective.size(), 201u) << "trial " << trial << ": never settled";
    MatrixD sum = MatrixD::Zero(4, 2);
    std::vector<int> count(4, 0);
    for (Index i = 0; i < x.rows(); ++i) {
      const Index a = r.assignment[static_cast<std::size_t>(i)];
      sum.row(a) += x.row(i).cast<double>();
      ++count[static_cast<std::size_t>(a)];
      const double mine = (x.row(i) - r.centroids.row(a)).squaredNorm();
      for (Index c = 0; c < 4; ++c) EXPECT_LE(mine, (x.row(i) - r.centroids.row(c)).squaredNorm() + 1e-6) << "trial " << trial;
    }
    for (Index c = 0; c < 4; ++c) {
      if (!count[static_cast<std::size_t>(c)]) continue;
      const MatrixD mean = sum.row(c) / count[static_cast<std::size_t>(c)];
      EXPECT_LT((r.centroids.row(c).cast<double>() - mean).norm(), 1e-5) << "trial " << trial << ", cluster " << c;
    }
  }
}

TEST(KMeans, RecoversSeparatedClustersAndReseedsEmptyOnes) {
  std::mt19937 g(17);
  const Matrix centers = 20.0f * gaussian(5, 3, g);
  Matrix x(250, 3);
  for (Index i = 0; i < x.rows(); ++i) x.row(i) = centers.row(i % 5) + 0.1f * gaussian(1, 3, g);
  favor::KMeansOptions o;
  o.clusters = 5;
  const auto r = favor::kmeans(x, o);
  for (Index c = 0; c < 5; ++c) {
    double best = 1e30;
    for (Index y = 0; y < 5; ++y) best = std::min<double>(best, (r.centroids.row(y) - centers.row(c)).norm());
    EXPECT_LT(best, 0.1) << "true center " << c;  // mean of 50 points with sd 0.1: error ~0.03
  }
  // Two distinct points, three clusters: a cluster must be empty at some point and get re-seeded;
  // every centroid still sits on a data point and the objective reaches 0.
  Matrix two(6, 2);
  two << 0, 0, 0, 0, 0, 0, 5, 5, 5, 5, 5, 5;
  o.clusters = 3;
  const auto t = favor::kmeans(two, o);
  EXPECT_EQ(t.objective.back(), 0.0);
  EXPECT_TRUE(t.centroids.allFinite());
}

TEST(Codebook, ErrorsNameTheArgument) {
  std::mt19937 g(18);
  const Matrix q = gaussian(4, 3, g), v = gaussian(4, 2, g);
  auto argument_of = [](auto&& fn) {
    try { fn(); } catch (const favor::Error& e) { return e.argument(); }
    return std::string("no error");
  };
  EXPECT_EQ(argument_of([&] { favor::parse_assignment("vq"); }), "assignment");
  EXPECT_EQ(argument_of([&] { favor::codebook_attention(gaussian(3, 2, g), q, q, v); }), "codebook");
  CodebookOptions o;
  o.assignment = Assignment::soft;
  o.temperature = 0.0;
  EXPECT_EQ(argument_of([&] { favor::codebook_attention(gaussian(3, 3, g), q, q, v, o); }), "temperature");
  favor::KMeansOptions k;
  k.clusters = 5;
  EXPECT_EQ(argument_of([&] { favor::kmeans(q, k); }), "clusters");
}

// Scores beyond float range are refused whichever query head of a group holds the large rows:
// the bound takes the largest query norm over all of them.
TEST(Codebook, ScoresOutOfFloatRangeAreRefusedForAnyQueryHeadOfAGroup) {
  std::mt19937 g(19);
  const Matrix c = gaussian(6, 8, g) * 1e18f, k = gaussian(5, 8, g), v = gaussian(5, 3, g);
  const Matrix small = gaussian(5, 8, g), large = gaussian(5, 8, g) * 1e20f;  // scale |q| |c| ~ 1e38
  for (const bool large_first : {true, false}) {
    const std::vector<favor::ConstMatrixRef> qs = large_first ? std::vector<favor::ConstMatrixRef>{large, small}
                                                              : std::vector<favor::ConstMatrixRef>{small, large};
    std::vector<Matrix> out(2, Matrix(5, 3));
    std::vector<favor::MatrixRef> out_refs(out.begin(), out.end());
    try {
      favor::codebook_attention(c, qs, k, v, out_refs, CodebookOptions{});
      ADD_FAILURE() << "accepted, large head " << (large_first ? "first" : "last");
    } catch (const favor::Error& e) {
      EXPECT_EQ(e.argument(), "q, codebook") << e.what();
    }
  }
  // the same heads with the large one scaled into range are accepted
  const Matrix fine = large * 1e-20f;
  std::vector<Matrix> out(2, Matrix(5, 3));
  std::vector<favor::MatrixRef> out_refs(out.begin(), out.end());
  EXPECT_NO_THROW(favor::codebook_attention(c * 1e-18f, {favor::ConstMatrixRef(fine), favor::ConstMatrixRef(small)}, k, v,
                                            out_refs, CodebookOptions{}));
}

// A codebook prepared once (what a causal state keeps) gives the bits of the plain call, for every
// assignment and grouped heads; a prepared codebook used at another scale is refused.
TEST(Codebook, PreparedCodebookGivesTheBitsOfThePlainCall) {
  std::mt19937 g(21);
  const Matrix c = gaussian(12, 8, g), k = gaussian(9, 8, g), v = gaussian(9, 5, g);
  const std::vector<Matrix> qs{gaussian(9, 8, g), gaussian(9, 8, g)};
  for (const Assignment a : kAssignments)
    for (const bool causal : {false, true}) {
      CodebookOptions o;
      o.assignment = a, o.causal = causal, o.temperature = 0.7, o.chunk = 4;
      const favor::ScaledCodebook book(c, 1.0 / std::sqrt(8.0));
      std::vector<Matrix> plain(2, Matrix(9, 5)), prepared(2, Matrix(9, 5));
      const std::vector<favor::ConstMatrixRef> q_refs(qs.begin(), qs.end());
      std::vector<favor::MatrixRef> plain_refs(plain.begin(), plain.end()), prepared_refs(prepared.begin(), prepared.end());
      favor::codebook_attention(c, q_refs, k, v, plain_refs, o);
      favor::codebook_attention(book, q_refs, k, v, prepared_refs, o);
      for (std::size_t h = 0; h < 2; ++h)
        EXPECT_EQ(0, std::memcmp(plain[h].data(), prepared[h].data(), sizeof(float) * plain[h].size()))
            << favor::to_string(a) << (causal ? " causal" : "") << " head " << h;
      // the float64 definition, as a check that both are right and not only equal
      const MatrixD w = reference_matrix(c, qs[0], k, a, o.temperature, causal);
      EXPECT_LT(rel(plain[0].cast<double>(), w * v.cast<double>()), 2e-5) << favor::to_string(a);
    }
  const favor::ScaledCodebook book(c, 0.5);  // not 1/sqrt(8)
  std::vector<Matrix> out(1, Matrix(9, 5));
  std::vector<favor::MatrixRef> out_refs(out.begin(), out.end());
  try {
    favor::codebook_attention(book, {favor::ConstMatrixRef(qs[0])}, k, v, out_refs, CodebookOptions{});
    FAIL() << "a codebook prepared at another scale was accepted";
  } catch (const favor::Error& e) {
    EXPECT_EQ(e.argument(), "scale");
  }
  EXPECT_THROW(favor::ScaledCodebook(Matrix(0, 8), 1.0), favor::Error);
}

}  // namespace
