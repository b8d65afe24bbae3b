// Shape checks shared by the one-head kernels (internal).
#pragma once

#include <cmath>
#include <string>

#include "favor/error.hpp"
#include "favor/types.hpp"
#include "favor/kernels/vector_math.hpp"

namespace favor::detail {

inline std::string shape(Index rows, Index cols) {
  return "[" + std::to_string(rows) + ", " + std::to_string(cols) + "]";
}

// q: L x d, k: S x d, optional v: S x dv; causal needs L <= S (bottom-right alignment).
inline void check_head(ConstMatrixRef q, ConstMatrixRef k, const Eigen::Ref<const Matrix>* v,
                       bool causal) {
  if (q.rows() < 1 || q.cols() < 1) throw_range("q", "expected [L, d] with L, d >= 1, got " + shape(q.rows(), q.cols()));
  if (k.rows() < 1 || k.cols() != q.cols())
    throw_range("k", "expected [S, " + std::to_string(q.cols()) + "] (d of q) with S >= 1, got " +
                         shape(k.rows(), k.cols()));
  if (v && ((*v).rows() != k.rows() || (*v).cols() < 1))
    throw_range("v", "expected [" + std::to_string(k.rows()) + ", dv] (S of k) with dv >= 1, got " +
                         shape((*v).rows(), (*v).cols()));
  if (causal && q.rows() > k.rows())
    throw_range("causal", "causal attention needs at least as many keys as queries (the L queries are the last L "
                          "positions), got L = " + std::to_string(q.rows()) + ", S = " + std::to_string(k.rows()));
}

inline void check_out(const MatrixRef& out, Index rows, Index cols) {
  if (out.rows() != rows || out.cols() != cols)
    throw_range("out", "expected " + shape(rows, cols) + ", got " + shape(out.rows(), out.cols()));
}

// True if every entry is finite, by the library's vector loop over each contiguous row (several
// times faster than Eigen's allFinite, whose loops run one float at a time in wasm). For stored
// matrices and views with rows of adjacent floats, the only kind checked.
template <class Derived>
inline bool all_finite(const Eigen::DenseBase<Derived>& m) {
  static_assert(bool(Derived::Flags & Eigen::DirectAccessBit) && Derived::InnerStrideAtCompileTime == 1,
                "all_finite reads stored rows of adjacent floats");
  const Derived& x = m.derived();
  if (x.size() == 0) return true;
  const Index inner = Derived::IsRowMajor ? x.cols() : x.rows(), outer = x.size() / inner;
  for (Index o = 0; o < outer; ++o)
    if (!vec::all_finite(x.data() + o * x.outerStride(), inner)) return false;
  return true;
}

// Outputs are finite for finite inputs unless an intermediate result overflows float32
// (|scale q.k| or the squared norm of a scaled row beyond ~3.4e38, or sums over huge v): the
// call then reports it instead of returning Infinity or NaN. Signed estimators (trigonometric
// features) may legitimately give +-Infinity where a row's normalizer cancels to 0
// (`allow_infinite`); NaN is always an error.
inline void check_result(const MatrixRef& out, const char* inputs, bool allow_infinite = false) {
  if (all_finite(out)) return;
  for (Index i = 0; i < out.rows(); ++i)
    for (Index j = 0; j < out.cols(); ++j) {
      const float x = out(i, j);
      if (std::isnan(x) || (!allow_infinite && std::isinf(x)))
        throw_range(inputs, "the result is not finite at [" + std::to_string(i) + ", " + std::to_string(j) +
                                "]: the inputs are too large for float32 (scale * q.k, the squared norms of "
                                "the scaled rows or sums over v overflow 3.4e38) or not finite; scale them down");
    }
}

}  // namespace favor::detail
