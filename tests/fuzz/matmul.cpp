// Fuzzing matmul and packed matrices.
#include "fuzz.hpp"

namespace fuzz {

// matmul with b given each call and with b packed once (PackedMatrix): the same outcome, and the
// same bits on success; packing rejects a non-finite b; finite tame inputs never fail, and match a
// float64 product; a wrong k, rank, bias or out shape is rejected by both.
void fuzz_matmul(Decoder& in) {
  const bool transpose = in.flag();
  std::vector<Index> a_dims;
  for (int i = in.pick(3); i > 0; --i) a_dims.push_back(in.p.ConsumeIntegralInRange<Index>(1, 3));
  const Index n = in.size(), k = in.size(), m = in.size();
  a_dims.push_back(n), a_dims.push_back(k);
  bool valid = true, finite = true;
  double magnitude = 0.0;
  std::vector<Index> b_dims = transpose ? std::vector<Index>{m, k} : std::vector<Index>{k, m};
  switch (in.pick(10)) {
    case 0: b_dims[transpose ? 1 : 0] += 1, valid = false; break;  // k differs from a's
    case 1: b_dims.insert(b_dims.begin(), 1), valid = false; break;  // rank 3
    default: break;
  }
  const Tensor a = tensor(in, a_dims, finite, magnitude), b = tensor(in, b_dims, finite, magnitude);
  const bool with_bias = in.flag();
  std::vector<Index> bias_dims{m};
  if (with_bias && in.pick(10) == 0) bias_dims[0] += 1, valid = false;
  const Tensor bias = with_bias ? tensor(in, bias_dims, finite, magnitude) : Tensor{};
  std::vector<Index> out_dims = a_dims;
  out_dims.back() = m;
  if (in.pick(16) == 0) out_dims.back() += 1, valid = false;
  std::vector<float> plain(count(out_dims)), fast(plain.size());
  favor::MatmulOptions o;
  o.transpose_b = transpose;
  const favor::ConstTensorView bias_view = bias.view();
  const favor::ConstTensorView* bias_ptr = with_bias ? &bias_view : nullptr;
  const bool tame = finite && magnitude <= kTame;
  trace("matmul transpose " + std::to_string(transpose) + " n " + std::to_string(n) + " k " + std::to_string(k) +
        " m " + std::to_string(m) + " bias " + std::to_string(with_bias));
  const Outcome direct = run("matmul", false, [&] { favor::matmul(a.view(), b.view(), bias_ptr, {plain.data(), out_dims}, o); });
  // The product of finite inputs can still overflow float32 (a documented error), so only tame
  // inputs must succeed.
  expect(direct, valid && finite, tame, "matmul");
  std::unique_ptr<favor::PackedMatrix> packed;
  const Outcome packing = run("PackedMatrix", false, [&] { packed = std::make_unique<favor::PackedMatrix>(b.view(), o); });
  const bool b_ok = b_dims.size() == 2 && std::all_of(b.data.begin(), b.data.end(), [](float x) { return std::isfinite(x); });
  if ((packing == Outcome::ok) != b_ok) fail("PackedMatrix: accepted a bad b, or rejected a finite rank-2 one: " + g_last_error);
  if (packing != Outcome::ok) return;
  const Outcome via_packed = run("matmul (packed)", false, [&] { favor::matmul(a.view(), *packed, bias_ptr, {fast.data(), out_dims}); });
  if (via_packed != direct) fail("matmul with a packed b: another outcome than with b itself (" + g_last_error + ")");
  if (direct != Outcome::ok) return;
  if (std::memcmp(plain.data(), fast.data(), 4 * plain.size()) != 0) fail("matmul with a packed b: other bits than with b itself");
  if (!tame) return;
  const Index rows = static_cast<Index>(count(a_dims) / static_cast<std::size_t>(k));
  for (Index i = 0; i < rows; ++i)
    for (Index j = 0; j < m; ++j) {
      double sum = with_bias ? bias.data[j] : 0.0, size = 1.0;
      for (Index t = 0; t < k; ++t) {
        const double term = double(a.data[i * k + t]) * double(transpose ? b.data[j * k + t] : b.data[t * m + j]);
        sum += term, size += std::abs(term);
      }
      if (!(std::abs(plain[i * m + j] - sum) <= 1e-5 * (size + std::abs(with_bias ? bias.data[j] : 0.0))))
        fail("matmul: differs from the float64 product");
    }
}

}  // namespace fuzz
