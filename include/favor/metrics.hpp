// Error measures between an exact attention matrix (or output) and its approximation.
#pragma once

#include "types.hpp"

namespace favor {

struct MatrixErrors {
  double mse = 0.0;            // mean over entries of (A - A^)^2
  double rel_frobenius = 0.0;  // |A - A^|_F / |A|_F
  double max_abs = 0.0;        // max |A - A^|
  // Mean over rows of KL(A_i || A^_i), both rows normalized to sum 1 first (so that float
  // rounding of the row sums cannot make it negative). Entries of A^ that are <= 0 or not finite
  // (the trigonometric kernel can give them) are replaced by kKlFloor before normalizing; terms
  // with A_ij <= 0 contribute 0.
  double mean_row_kl = 0.0;
};

inline constexpr double kKlFloor = 1e-12;

// Both matrices L x S (any number of rows: callers may stack heads).
MatrixErrors compare(ConstMatrixRef exact, ConstMatrixRef approx);

// |out - out_exact|_F / |out_exact|_F.
double output_relative_error(ConstMatrixRef exact, ConstMatrixRef approx);

}  // namespace favor
