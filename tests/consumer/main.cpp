// A downstream program that sees only the installed public headers: exits 0 only if FAVOR+ with
// many features lands near exact attention, a causal state fed in two pieces gives one causal
// call's output, FAVOR#'s SDERF fitted to the inputs lands near exact attention, hard codebook
// attention with the keys as codebook is exact, and matmul multiplies.
#include <favor/favor.hpp>

#include <cmath>
#include <cstdio>

namespace {

bool check(const char* what, double error, double bound) {
  std::printf("%s %.3g\n", what, error);
  return error < bound;
}

}  // namespace

int main() {
  using favor::Matrix;
  const Matrix q = 0.3f * Matrix::Random(32, 8), k = 0.3f * Matrix::Random(32, 8);
  const Matrix v = Matrix::Random(32, 4);
  favor::FeatureMapOptions options;
  options.dim = 8;
  options.features = 1024;
  const favor::FeatureMap map(options);
  const Matrix exact = favor::exact_attention(q, k, v);
  bool ok = check("favor+ output relative error", favor::output_relative_error(exact, favor::favor_attention(map, q, k, v)), 0.1);

  // The same positions appended as 20 then 12 rows, against one causal call on all 32.
  favor::FavorOptions causal;
  causal.causal = true;
  const Matrix whole = favor::favor_attention(map, q, k, v, causal);
  favor::CausalStateOptions state_options;
  state_options.method = favor::StateMethod::favor;
  state_options.map = &map;
  favor::CausalState state(state_options);
  Matrix pieces(32, 4);
  for (const auto [row0, rows] : {std::pair<favor::Index, favor::Index>{0, 20}, {20, 12}}) {
    const favor::Index d = 8, dv = 4;
    state.append({q.data() + row0 * d, {rows, d}}, {k.data() + row0 * d, {rows, d}}, {v.data() + row0 * dv, {rows, dv}},
                 {pieces.data() + row0 * dv, {rows, dv}});
  }
  ok &= check("causal state vs one causal call", favor::output_relative_error(whole, pieces), 1e-5);

  favor::FeatureMapOptions sderf_options = options;
  sderf_options.kernel = favor::Kernel::sderf;
  favor::FeatureMap sderf(sderf_options);
  sderf.fit(q, k, 1.0 / std::sqrt(8.0));
  ok &= check("favor# (sderf) output relative error", favor::output_relative_error(exact, favor::favor_attention(sderf, q, k, v)), 0.1);

  // Every key is a codeword: hard VQ changes nothing.
  ok &= check("codebook (keys as codewords) vs exact", favor::output_relative_error(exact, favor::codebook_attention(k, q, k, v)), 1e-5);

  const Matrix a = Matrix::Random(3, 5), b = Matrix::Random(5, 2);
  Matrix product(3, 2);
  favor::matmul({a.data(), {3, 5}}, {b.data(), {5, 2}}, nullptr, {product.data(), {3, 2}});
  ok &= check("matmul vs Eigen", favor::output_relative_error(a * b, product), 1e-6);
  return ok ? 0 : 1;
}
