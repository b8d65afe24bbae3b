#include "favor/matmul.hpp"

#include <algorithm>

#include "favor/error.hpp"
#include "favor/kernels/gemm.hpp"
#include "favor/parallel.hpp"
#include "favor/threads/thread_plan.hpp"
#include "favor/tensor/shape.hpp"
#include "favor/kernels/vector_math.hpp"

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

namespace {

void check_bias_dims(const ConstTensorView* bias, Index m) {
  if (bias && (bias->dims.size() != 1 || bias->dims[0] != m))
    throw_range("bias", "expected dims [" + std::to_string(m) + "] (m), got " + dims_string(bias->dims));
}

// out [rows, m] = a [rows, k] Bt (+ bias), Bt read as b [k, m] row-major or from pack_bt's
// strips; the arguments checked by the caller.
void product(const ConstTensorView& a, const float* bt, bool packed, Index k, Index m, const ConstTensorView* bias,
             const TensorView& out) {
  const Index rows = element_count(a.dims, "a") / k;
  constexpr Index kRows = 64;  // rows per task: independent, so any thread count gives the same bits
  const ThreadLimit limit(threads_for_work(static_cast<double>(rows) * static_cast<double>(k) * static_cast<double>(m)));
  parallel_for((rows + kRows - 1) / kRows, [&](Index block) {
    const Index r0 = block * kRows, n = std::min(kRows, rows - r0);
    float* c = out.data + r0 * m;
    if (bias)
      for (Index i = 0; i < n; ++i) std::copy(bias->data, bias->data + m, c + i * m);
    if (packed)
      gemm::gemm_packed(n, m, k, a.data + r0 * k, k, 1, bt, c, m, bias != nullptr);
    else
      gemm::gemm(n, m, k, a.data + r0 * k, k, 1, bt, m, c, m, bias != nullptr);
  });
  if (!vec::all_finite(out.data, rows * m))
    throw_range("a, b", "the product is not finite: it overflows float32 (3.4e38); scale the inputs down");
}

}  // namespace

void matmul(const ConstTensorView& a, const ConstTensorView& b, const ConstTensorView* bias,
            const TensorView& out, const MatmulOptions& options) {
  const std::vector<Index> dims = matmul_dims(a.dims, b.dims, options);
  if (!out.data || out.dims != dims) throw_range("out", "expected dims " + dims_string(dims));
  const Index m = dims.back(), k = a.dims.back();
  check_bias_dims(bias, m);
  check_values(a, "a"), check_values(b, "b");
  if (bias) check_values(*bias, "bias");
  if (!options.transpose_b) return product(a, b.data, false, k, m, bias, out);  // b [k, m] is Bt already
  FloatBuffer packed;
  gemm::pack_bt(m, k, b.data, k, packed);
  product(a, packed.data(), true, k, m, bias, out);
}

PackedMatrix::PackedMatrix(const ConstTensorView& b, const MatmulOptions& options)
    : dims_(b.dims), transposed_(options.transpose_b) {
  check_rank(b.dims, "b", transposed_ ? "[m, k]" : "[k, m]");
  if (b.dims.size() != 2)
    throw_range("b", std::string("expected dims ") + (transposed_ ? "[m, k]" : "[k, m]") + ", got " + dims_string(b.dims));
  check_values(b, "b");
  k_ = transposed_ ? b.dims[1] : b.dims[0];
  m_ = transposed_ ? b.dims[0] : b.dims[1];
  if (transposed_) {
    gemm::pack_bt(m_, k_, b.data, k_, data_);
  } else {
    data_.assign(b.data, b.data + k_ * m_);
  }
}

std::vector<Index> matmul_dims(const std::vector<Index>& a, const PackedMatrix& b) {
  MatmulOptions o;
  o.transpose_b = b.transposed();
  return matmul_dims(a, b.dims(), o);
}

void matmul(const ConstTensorView& a, const PackedMatrix& b, const ConstTensorView* bias, const TensorView& out) {
  const std::vector<Index> dims = matmul_dims(a.dims, b);
  if (!out.data || out.dims != dims) throw_range("out", "expected dims " + dims_string(dims));
  check_bias_dims(bias, b.m_);
  check_values(a, "a");
  if (bias) check_values(*bias, "bias");
  product(a, b.data_.data(), b.transposed_, b.k_, b.m_, bias, out);
}

}  // namespace favor
