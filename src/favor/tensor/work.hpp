// Multiply-adds of a call's heads, which decide how many threads it takes (thread_plan.hpp).
#pragma once

#include <cmath>

#include "favor/feature_map.hpp"
#include "favor/features/structured_projection.hpp"
#include "favor/types.hpp"

namespace favor {

// One query head's softmax attention: L x S scores and their use (half when causal).
inline double exact_work(Index L, Index S, double d, double dv, bool causal) {
  return static_cast<double>(L) * static_cast<double>(S) * (d + dv) * (causal ? 0.5 : 1.0);
}

// A codebook head's rows: each row's scores against the features (codewords) and their products
// with v.
inline double factored_work(Index rows, Index features, double d, double dv) {
  return static_cast<double>(rows) * static_cast<double>(features) * (d + dv);
}

// A random-feature head's rows: each row's projections (m d by the GEMM; for a sampled structured
// W, three fast Walsh-Hadamard transforms of p log2 p per block of d of them) and its features'
// products with v (M dv).
inline double favor_work(const FeatureMap& map, Index rows, double dv) {
  const double m = static_cast<double>(map.num_projections()), d = static_cast<double>(map.dim());
  double projection = m * d;
  if (map.sampling() == Sampling::structured && !map.explicit_projection()) {
    const double p = static_cast<double>(structured::padded_dim(map.dim()));
    projection = std::ceil(m / d) * 3.0 * p * std::log2(p);
  }
  return static_cast<double>(rows) * (projection + static_cast<double>(map.num_features()) * dv);
}

}  // namespace favor
