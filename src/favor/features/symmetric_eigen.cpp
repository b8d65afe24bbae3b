#include "favor/features/symmetric_eigen.hpp"

#include <cmath>

namespace favor {

SymmetricEigen symmetric_eigen(const MatrixD& input) {
  const Index d = input.rows();
  MatrixD a(d, d);
  for (Index p = 0; p < d; ++p)
    for (Index q = p; q < d; ++q) a(p, q) = a(q, p) = input(p, q);
  SymmetricEigen e;
  e.vectors = MatrixD::Identity(d, d);
  double total = 0.0;
  for (Index p = 0; p < d; ++p)
    for (Index q = 0; q < d; ++q) total += a(p, q) * a(p, q);
  // Off-diagonal mass below this is rounding of the diagonal's own size: further sweeps would
  // only move eigenvalues by a few ulps.
  const double tolerance = 1e-30 * total;
  for (int sweep = 0; sweep < 60; ++sweep) {
    double off = 0.0;
    for (Index p = 0; p < d; ++p)
      for (Index q = p + 1; q < d; ++q) off += a(p, q) * a(p, q);
    if (!(off > tolerance)) break;  // also stops on NaN
    for (Index p = 0; p < d; ++p)
      for (Index q = p + 1; q < d; ++q) {
        const double apq = a(p, q);
        if (apq == 0.0) continue;
        // The rotation that zeroes a(p, q): t = tan of its angle, the smaller root.
        const double theta = (a(q, q) - a(p, p)) / (2.0 * apq);
        const double t = std::abs(theta) > 1e150
                             ? 0.5 / theta
                             : (theta >= 0.0 ? 1.0 : -1.0) / (std::abs(theta) + std::sqrt(theta * theta + 1.0));
        const double c = 1.0 / std::sqrt(t * t + 1.0), s = t * c;
        a(p, p) -= t * apq;
        a(q, q) += t * apq;
        a(p, q) = a(q, p) = 0.0;
        for (Index r = 0; r < d; ++r) {
          if (r == p || r == q) continue;
          const double arp = a(r, p), arq = a(r, q);
          a(r, p) = a(p, r) = c * arp - s * arq;
          a(r, q) = a(q, r) = s * arp + c * arq;
        }
        for (Index r = 0; r < d; ++r) {
          const double vrp = e.vectors(r, p), vrq = e.vectors(r, q);
          e.vectors(r, p) = c * vrp - s * vrq;
          e.vectors(r, q) = s * vrp + c * vrq;
        }
      }
  }
  e.values.resize(d);
  for (Index p = 0; p < d; ++p) e.values(p) = a(p, p);
  return e;
}

}  // namespace favor
