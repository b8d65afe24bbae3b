#include "favor/projection.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "favor/error.hpp"
#include "favor/features/random.hpp"
#include "favor/features/structured_projection.hpp"
#include "favor/kernels/hadamard.hpp"

namespace favor {

Sampling parse_sampling(const std::string& name, const std::string& argument) {
  if (name == "iid") return Sampling::iid;
  if (name == "orthogonal") return Sampling::orthogonal;
  if (name == "orthogonal-fixed") return Sampling::orthogonal_fixed;
  if (name == "simplex") return Sampling::simplex;
  if (name == "structured") return Sampling::structured;
  throw_range(argument, "expected 'iid', 'orthogonal', 'orthogonal-fixed', 'simplex' or 'structured', got '" +
                            name + "'");
}

const char* to_string(Sampling sampling) {
  switch (sampling) {
    case Sampling::iid: return "iid";
    case Sampling::orthogonal: return "orthogonal";
    case Sampling::orthogonal_fixed: return "orthogonal-fixed";
    case Sampling::simplex: return "simplex";
    case Sampling::structured: return "structured";
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

// Lower-triangular factor L of the Gram matrix of d unit vectors with pairwise cosine -1/(d-1)
// (a regular simplex centred at the origin): vertex i is sum_{k<=i} L(i,k) e_k, so rotated by a
// Haar block it only needs that block's rows 0..i, and a cut block keeps its O(count^2 d) cost.
// By symmetry L(i,k) is the same b_k for every i > k; L(k,k) = a_k. The simplex spans d - 1
// dimensions, so a_{d-1} is 0 exactly (the last vertex is minus the sum of the others) rather
// than the square root of a rounding residue.
struct SimplexFactor {
  std::vector<double> diagonal, below;  // a_k, b_k
};

SimplexFactor simplex_factor(Index d) {
  SimplexFactor f;
  f.diagonal.assign(static_cast<std::size_t>(d), 0.0);
  f.below.assign(static_cast<std::size_t>(d), 0.0);
  f.diagonal[0] = 1.0;
  if (d == 1) return f;
  const double cosine = -1.0 / static_cast<double>(d - 1);
  double sum_b2 = 0.0;  // sum_{j<k} b_j^2
  for (Index k = 0; k < d; ++k) {
    const auto K = static_cast<std::size_t>(k);
    if (k > 0) f.diagonal[K] = k == d - 1 ? 0.0 : std::sqrt(1.0 - sum_b2);
    if (k == d - 1) break;
    f.below[K] = (cosine - sum_b2) / f.diagonal[K];
    sum_b2 += f.below[K] * f.below[K];
  }
  return f;
}

// Rows 0..count-1 of L Q for the Haar rows Q of `block` (overwritten): unit vectors whose
// pairwise cosines are -1/(d-1), the simplex turned by a uniformly random rotation. Each row is
// renormalized so that its length is 1 to rounding whatever the accumulated error.
void simplex_rows(MatrixD& block, const SimplexFactor& f, Index d, Index count) {
  std::vector<double> out(static_cast<std::size_t>(d));
  // Row i needs the Haar rows 0..i, so going from the last row up keeps them intact.
  for (Index i = count - 1; i >= 0; --i) {
    std::fill(out.begin(), out.end(), 0.0);
    for (Index k = 0; k <= i; ++k) {
      const double coef = k == i ? f.diagonal[static_cast<std::size_t>(i)] : f.below[static_cast<std::size_t>(k)];
      const double* q = block.data() + k * d;
      for (Index t = 0; t < d; ++t) out[static_cast<std::size_t>(t)] += coef * q[t];
    }
    const double norm = std::sqrt(dot(out.data(), out.data(), d));
    double* row = block.data() + i * d;
    for (Index t = 0; t < d; ++t) row[t] = out[static_cast<std::size_t>(t)] / norm;
  }
}

// Rows 0..count-1 of a SORF block, first d columns: with p the smallest power of two >= d and
// H' the unnormalized p x p Hadamard matrix (H = H'/sqrt(p)), row i is
// e_i^T H' D1 H' D2 H' D3 / p = sqrt(p) (H D1 H D2 H D3)_i. Each p-long row has squared norm p
// and E[entry^2] = 1, so the kept d entries have E|w|^2 = d; for p = d this is sqrt(d) H D1 H D2
// H D3 exactly, every row of norm sqrt(d). Entries are integers divided by a power of two:
// exact in double, rounded once to float. `signs`: the block's D1, D2, D3 (structured::signs, the
// same the fast transforms of the feature map read).
MatrixD structured_block(const float* signs, Index d, Index p, Index count) {
  // Eigen objects, which check their sizes for overflow and throw std::bad_alloc (see haar_block).
  MatrixD rows(count, d);
  std::vector<double> v(static_cast<std::size_t>(p));
  const double inv_p = 1.0 / static_cast<double>(p);
  for (Index i = 0; i < count; ++i) {
    std::fill(v.begin(), v.end(), 0.0);
    v[static_cast<std::size_t>(i)] = 1.0;
    // A row vector times H' is H' times the column (H' is symmetric).
    for (int r = 0; r < 3; ++r) {
      hadamard::butterflies(v.data(), p);  // integers stay exact: |entries| <= p^(3/2)
      for (Index t = 0; t < p; ++t) v[static_cast<std::size_t>(t)] *= static_cast<double>(signs[r * p + t]);
    }
    for (Index t = 0; t < d; ++t) rows(i, t) = v[static_cast<std::size_t>(t)] * inv_p;
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
  if (sampling == Sampling::structured) {
    const Index p = structured::padded_dim(dim);
    const FloatBuffer signs = structured::signs(features, dim, seed);
    MatrixD block;
    for (Index r = 0; r < features; ++r) {
      const Index in_block = r % dim;
      if (in_block == 0) block = structured_block(signs.data() + r / dim * 3 * p, dim, p, std::min(dim, features - r));
      for (Index c = 0; c < dim; ++c) w(r, c) = static_cast<float>(block(in_block, c));
    }
    return w;
  }
  NormalStream norms(seed, 1);
  const double fixed_norm = std::sqrt(static_cast<double>(dim));
  SimplexFactor simplex;
  MatrixD block;
  for (Index r = 0; r < features; ++r) {
    const Index in_block = r % dim;
    if (in_block == 0) {
      const Index count = std::min(dim, features - r);
      block = haar_block(gaussian, dim, count);
      if (sampling == Sampling::simplex) {
        // After the first block's allocation, which fails cleanly for a d that cannot be held.
        if (simplex.diagonal.empty()) simplex = simplex_factor(dim);
        simplex_rows(block, simplex, dim, count);
      }
    }
    double norm = fixed_norm;
    if (sampling == Sampling::orthogonal || sampling == Sampling::simplex) {
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
