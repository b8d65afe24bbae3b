#include "favor/projection.hpp"

#include <algorithm>
#include <cmath>

#include "favor/error.hpp"
#include "favor/features/random.hpp"

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

// The first `count` rows of a d x d Gaussian matrix, orthonormalized by modified Gram-Schmidt
// with one re-orthogonalization pass: rows of a Haar-distributed orthogonal matrix, orthogonal to
// ~1e-15. Row i depends only on rows 0..i, so a block cut to the rows used costs O(count^2 d),
// not O(d^3) (m = 256 of d = 8192: 1.5 s in wasm, where the whole block took 512 MiB and minutes).
// An Eigen matrix, not a std::vector sized count * d: Eigen checks the size for overflow (it
// overflows a 32-bit Index in wasm32 from 2^31 entries) and throws std::bad_alloc.
MatrixD haar_block(NormalStream& gaussian, Index d, Index count) {
  MatrixD rows(count, d);  // row-major
  double* const all = rows.data();
  for (Index i = 0; i < rows.size(); ++i) all[i] = gaussian.normal();
  for (Index i = 0; i < count; ++i) {
    double* row = all + i * d;
    for (int pass = 0; pass < 2; ++pass) {
      for (Index j = 0; j < i; ++j) {
        const double* prev = all + j * d;
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
  MatrixD block;
  for (Index r = 0; r < features; ++r) {
    const Index in_block = r % dim;
    if (in_block == 0) block = haar_block(gaussian, dim, std::min(dim, features - r));
    double norm = fixed_norm;
    if (sampling == Sampling::orthogonal) {
      double sq = 0.0;
      for (Index t = 0; t < dim; ++t) {
        const double z = norms.normal();
        sq += z * z;
      }
      norm = std::sqrt(sq);
    }
    const double* row = block.data() + in_block * dim;
    for (Index c = 0; c < dim; ++c) w(r, c) = static_cast<float>(row[c] * norm);
  }
  return w;
}

}  // namespace favor
