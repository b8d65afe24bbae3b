// Sampling the random projection W (m x d) whose rows are the features' omegas.
#pragma once

#include <cstdint>
#include <string>

#include "types.hpp"

namespace favor {

enum class Sampling {
  iid,               // every entry N(0, 1)
  orthogonal,        // orthogonal d x d blocks, each row rescaled to a chi_d norm: unbiased
  orthogonal_fixed,  // orthogonal blocks, every row norm exactly sqrt(d) (SMREG, "scaling 1")
  simplex,           // each block's directions a randomly rotated regular simplex, chi_d norms: unbiased
  structured,        // blocks sqrt(d) H D1 H D2 H D3 (SORF), applied by fast transforms: slightly biased
};

// 'iid' | 'orthogonal' | 'orthogonal-fixed' | 'simplex' | 'structured'; throws favor::Error naming `argument` otherwise.
Sampling parse_sampling(const std::string& name, const std::string& argument = "sampling");
const char* to_string(Sampling sampling);

// Deterministic in (features, dim, sampling, seed) across platforms, bit for bit.
// The block modes stack ceil(m/d) independent d x d blocks (Haar-orthogonal, simplex or SORF);
// the last block keeps its first m mod d rows (docs/design.md §2).
Matrix sample_projection(Index features, Index dim, Sampling sampling, std::uint64_t seed);

}  // namespace favor
