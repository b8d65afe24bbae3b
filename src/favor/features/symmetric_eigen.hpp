// Eigendecomposition of a small symmetric matrix, for the data-dependent parameters of FAVOR#'s
// dense-exponential features (docs/design.md §3).
#pragma once

#include "favor/types.hpp"

namespace favor {

struct SymmetricEigen {
  VectorD values;   // d, in the order of the columns of `vectors` (not sorted)
  MatrixD vectors;  // d x d, orthonormal columns: a = vectors * diag(values) * vectors^T
};

// Householder tridiagonalization, then implicit QR steps with Wilkinson's shift, in scalar
// double loops of a fixed order and IEEE operations only, so that the result is the same bits
// natively and in wasm (Eigen's solvers vectorize their reductions by SIMD width). The
// eigenvectors are a product of reflections and plane rotations: orthonormal to rounding however
// far the iteration got, which is what unbiasedness needs; convergence only decides how optimal
// the parameters are. Only the upper triangle of `a` is read. O(d^3).
SymmetricEigen symmetric_eigen(const MatrixD& a);

}  // namespace favor
