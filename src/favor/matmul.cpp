#include "matmul.hpp"

#include <algorithm>

#include "error.hpp"
#include "gemm.hpp"
#include "parallel.hpp"
#include "shape.hpp"
#include "vector_math.hpp"

namespace favor {

std::vector<Index> matmul_dims(const std::vector<Index>& a, const std::vector<Index>& b,
                               const MatmulOptions& options) {
  check_rank(a, "a", "[..., n, k]");
  check_rank(b, "b", options.transpose_b ? "[m, k]" : "[k, m]");
  if (b.size() != 2)
    throw_range("b", std::string("expected dims ") + (options.transpose_b ? "[m, k]" : "[k, m]") + ", got " +
                         dims_string(b));
  const Index k = a.back(), bk = options.transpose_b ? b[1] : b[0], m = options.transpose_b ? b[0] : b[1];
  if (bk != k)
    throw_range("b", "expected " + std::string(options.transpose_b ? "[m, " : "[") + std::to_string(k) +
                         (options.transpose_b ? "]" : ", m]") + " (k = the last dim of a), got " + dims_string(b));
  std::vector<Index> out = a;
  out.back() = m;
  element_count(out, "output");
  return out;
}

void matmul(const ConstTensorView& a, const ConstTensorView& b, const ConstTensorView* bias,
            const TensorView& out, const MatmulOptions& options) {
  const std::vector<Index> dims = matmul_dims(a.dims, b.dims, options);
  if (!out.data || out.dims != dims) throw_range("out", "expected dims " + dims_string(dims));
  const Index m = dims.back(), k = a.dims.back(), rows = element_count(a.dims, "a") / k;
  if (bias && (bias->dims.size() != 1 || bias->dims[0] != m))
    throw_range("bias", "expected dims [" + std::to_string(m) + "] (m), got " + dims_string(bias->dims));
  check_values(a, "a"), check_values(b, "b");
  if (bias) check_values(*bias, "bias");
  // The GEMM reads B as Bt (k x m, row-major): b itself, or b [m, k] packed once.
  FloatBuffer packed;
  if (options.transpose_b) {
    packed.resize(static_cast<std::size_t>(gemm::strips(m) * k * gemm::kStrip));
    gemm::pack_bt(m, k, b.data, k, packed.data());
  }
  constexpr Index kRows = 64;  // rows per task: independent, so any thread count gives the same bits
  parallel_for((rows + kRows - 1) / kRows, [&](Index block) {
    const Index r0 = block * kRows, n = std::min(kRows, rows - r0);
    float* c = out.data + r0 * m;
    if (bias)
      for (Index i = 0; i < n; ++i) std::copy(bias->data, bias->data + m, c + i * m);
    if (options.transpose_b)
      gemm::gemm_packed(n, m, k, a.data + r0 * k, k, 1, packed.data(), c, m, bias != nullptr);
    else
      gemm::gemm(n, m, k, a.data + r0 * k, k, 1, b.data, m, c, m, bias != nullptr);
  });
  if (!vec::all_finite(out.data, rows * m))
    throw_range("a, b", "the product is not finite: it overflows float32 (3.4e38); scale the inputs down");
}

}  // namespace favor
