#include "projection.hpp"

#include <cmath>
#include <vector>

#include "error.hpp"
#include "random.hpp"

namespace favor {

Sampling parse_sampling(const std::string& name, const std::string& argument) {
  if (name == "iid") return Sampling::iid;
  if (name == "orthogonal") return Sampling::orthogonal;
  if (name == "orthogonal-fixed") return Sampling::orthogonal_fixed;
  throw_range(argument, "expected 'iid', 'orthogonal' or 'orthogonal-fixed', got '" + name + "'");
}

const char* to_string(Sampling sampling) {
  switch (sampling) {
    case Sampling::iid: return "iid";
    case Sampling::orthogonal: return "orthogonal";
    case Sampling::orthogonal_fixed: return "orthogonal-fixed";
  }
  return "?";
}

namespace {

// Scalar double loops in a fixed order (no Eigen reductions, whose order depends on the SIMD
// width): the same bits natively and in wasm.
double dot(const double* a, const double* b, Index n) {
  double sum = 0.0;
  for (Index i = 0; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

// Rows of a d x d Gaussian matrix, orthonormalized by modified Gram-Schmidt with one
// re-orthogonalization pass: Haar-distributed rows, orthogonal to ~1e-15.
std::vector<double> haar_block(NormalStream& gaussian, Index d) {
  std::vector<double> rows(static_cast<std::size_t>(d * d));
  for (double& x : rows) x = gaussian.normal();
  for (Index i = 0; i < d; ++i) {
    double* row = &rows[static_cast<std::size_t>(i * d)];
    for (int pass = 0; pass < 2; ++pass) {
      for (Index j = 0; j < i; ++j) {
        const double* prev = &rows[static_cast<std::size_t>(j * d)];
        const double c = dot(row, prev, d);
        for (Index t = 0; t < d; ++t) row[t] -= c * prev[t];
      }
    }
    const double norm = std::sqrt(dot(row, row, d));
    for (Index t = 0; t < d; ++t) row[t] /= norm;
  }
  return rows;
}

}  // namespace

Matrix sample_projection(Index features, Index dim, Sampling sampling, std::uint64_t seed) {
  if (features <= 0) throw_range("features", "expected an integer >= 1, got " + std::to_string(features));
  if (dim <= 0) throw_range("dim", "expected an integer >= 1, got " + std::to_string(dim));
  Matrix w(features, dim);
  NormalStream gaussian(seed, 0);
  if (sampling == Sampling::iid) {
    for (Index r = 0; r < features; ++r)
      for (Index c = 0; c < dim; ++c) w(r, c) = static_cast<float>(gaussian.normal());
    return w;
  }
  NormalStream norms(seed, 1);
  const double fixed_norm = std::sqrt(static_cast<double>(dim));
  std::vector<double> block;
  for (Index r = 0; r < features; ++r) {
    const Index in_block = r % dim;
    if (in_block == 0) block = haar_block(gaussian, dim);
    double norm = fixed_norm;
    if (sampling == Sampling::orthogonal) {
      double sq = 0.0;
      for (Index t = 0; t < dim; ++t) {
        const double z = norms.normal();
        sq += z * z;
      }
      norm = std::sqrt(sq);
    }
    const double* row = &block[static_cast<std::size_t>(in_block * dim)];
    for (Index c = 0; c < dim; ++c) w(r, c) = static_cast<float>(row[c] * norm);
  }
  return w;
}

}  // namespace favor
