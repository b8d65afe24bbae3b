// Fuzzing the error measures.
#include "fuzz.hpp"

namespace fuzz {

void fuzz_metrics(Decoder& in) {
  std::vector<Index> dims;
  for (int i = in.pick(3); i > 0; --i) dims.push_back(in.p.ConsumeIntegralInRange<Index>(1, 3));
  dims.push_back(in.size());
  dims.push_back(in.size());
  bool finite_exact = true, finite_approx = true;
  double magnitude = 0.0;
  const Tensor exact = tensor(in, dims, finite_exact, magnitude);
  std::vector<Index> approx_dims = dims;
  const bool same = in.pick(8) != 0;
  if (!same) approx_dims.back() += 1;
  const Tensor approx = tensor(in, approx_dims, finite_approx, magnitude);
  favor::MatrixErrors e;
  const Outcome o = run("compare", false, [&] { e = favor::compare(exact.view(), approx.view()); });
  expect(o, same && finite_exact, true, "compare");
  if (o == Outcome::ok && finite_approx) {
    if (std::isnan(e.mse) || std::isnan(e.rel_frobenius) || std::isnan(e.max_abs) || std::isnan(e.mean_row_kl))
      fail("compare: NaN for finite inputs");
    if (e.mse < 0 || e.rel_frobenius < 0 || e.max_abs < 0) fail("compare: negative error measure");
  }
  if (same) {
    const Index cols = dims.back(), rows = static_cast<Index>(count(dims) / static_cast<std::size_t>(cols));
    const Eigen::Map<const Matrix> a(exact.data.data(), 1, rows * cols), b(approx.data.data(), 1, rows * cols);
    double r = 0.0;
    run("output_relative_error", false, [&] { r = favor::output_relative_error(a, b); });
    if (finite_exact && finite_approx && std::isnan(r)) fail("output_relative_error: NaN for finite inputs");
  }
}

}  // namespace fuzz
