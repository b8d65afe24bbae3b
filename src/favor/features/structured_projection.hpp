// The structured (SORF) projection applied by fast Walsh-Hadamard transforms (docs/design.md §2).
// Block b of a sampled 'structured' W is the first d rows and columns of
// sqrt(p) H D1 H D2 H D3 = H' D1 H' D2 H' D3 / p (H' the unnormalized p x p Hadamard matrix, p
// the smallest power of two >= d), so a row's projections by that block are
//     (w_r . x)_{r < d} = first d entries of H' D1 H' D2 H' D3 [x, 0 ... 0] / p,
// three transforms of O(p log p) in place of d x d multiply-adds. W itself (sample_projection)
// is built from the same signs, so the map's `projection` getter is what these rows multiply by.
#pragma once

#include <cstdint>

#include "favor/kernels/gemm.hpp"
#include "favor/types.hpp"

namespace favor::structured {

// p, the smallest power of two >= dim; throws std::bad_alloc where no p-long buffer could exist.
Index padded_dim(Index dim);

// The signs of the ceil(features / dim) blocks of sample_projection(features, dim, structured,
// seed), +-1: block b holds D1, D2, D3 (p each) from 3 b p on, in the order NormalStream(seed, 4)
// gives them (a uniform below 1/2 is -1).
FloatBuffer signs(Index features, Index dim, std::uint64_t seed);

// Whether the transforms of a row of norm up to `norm` stay finite: every entry after three
// unnormalized transforms is at most p^(3/2) times its norm. Beyond that (inputs ~1e34), the GEMM.
bool transforms_fit(double norm, Index dim);

// c(i, r) = root x_i . w_r for the rows of x and the `features` rows of the sampled SORF W of
// these signs, each entry the transforms' output times root / p (exact for a power of two), then
// `out`'s epilogue in the GEMM's order (+ row_add, + column_add, column and row maxima; a row's
// maximum lands in the first of its kLanes). Rows are independent of how they are batched, so
// the result does not depend on the rows a call is given or on the build.
void project(ConstMatrixRef x, Index features, const float* signs, float root, float* c, Index ldc,
             const gemm::Epilogue& out = {});

}  // namespace favor::structured
