// Fuzzing the tensor attention calls (exact, FAVOR+ and codebook attention, their outputs and
// their matrices), also with inputs that arrive while the call runs.
#include "fuzz.hpp"
#include "reference.hpp"

namespace fuzz {

namespace {

// An attention call (exact, FAVOR+ or codebook) with its inputs arriving while it runs
// (favor/input_arrival.hpp), into memory that holds NaN until each piece is in: the same bits
// as on the inputs in place, or the same error. A read before its await would see the NaN.
using AttentionCall = std::function<void(const Tensor& q, const Tensor& k, const Tensor& v, const favor::TensorView& out)>;
void check_arriving(const AttentionCall& attend, const Tensor& q, const Tensor& k, const Tensor& v,
                    const std::vector<Index>& out_dims, bool causal, Index rows, favor::HeadReading reading) {
  try {
    if (favor::attention_output_dims(q.dims, k.dims, v.dims, causal) != out_dims) return;
  } catch (...) {
    return;
  }
  const auto call = [&](const Tensor& a, const Tensor& b, const Tensor& c, std::vector<float>& out) -> std::string {
    try {
      attend(a, b, c, favor::TensorView{out.data(), out_dims});
      return "";
    } catch (const std::exception& e) {
      return std::string("error: ") + e.what();
    }
  };
  std::vector<float> expected(count(out_dims)), got(count(out_dims));
  const std::string expected_error = call(q, k, v, expected);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor hq{std::vector<float>(q.data.size(), nan), q.dims}, hk{std::vector<float>(k.data.size(), nan), k.dims},
      hv{std::vector<float>(v.data.size(), nan), v.dims};
  std::string error;
  {
    const std::vector<const Tensor*> from{&q, &k, &v};
    const std::vector<Tensor*> to{&hq, &hk, &hv};
    favor::InputArrival arrival(
        {hq.data.data(), hk.data.data(), hv.data.data()},
        {static_cast<Index>(q.data.size()), static_cast<Index>(k.data.size()), static_cast<Index>(v.data.size())},
        favor::attention_input_order(q.dims, k.dims, v.dims, rows, 1, reading), [&](const favor::InputPiece& p) {
          std::memcpy(to[p.input]->data.data() + p.offset, from[p.input]->data.data() + p.offset, sizeof(float) * p.count);
        });
    error = call(hq, hk, hv, got);
  }
  if (error != expected_error) fail(std::string("arriving inputs: ") + (error.empty() ? "no error" : error) + " against " + (expected_error.empty() ? "no error" : expected_error));
  if (error.empty() && std::memcmp(got.data(), expected.data(), sizeof(float) * got.size()) != 0)
    fail("arriving inputs: other bits than the inputs in place");
}

}  // namespace

void fuzz_tensor_attention(Decoder& in, int method) {
  // method: 0 exact, 1 exact matrix, 2 favor, 3 favor matrix, 4 codebook, 5 codebook matrix
  const bool causal = in.flag();
  const bool matrix = method % 2 == 1;
  Shapes s = decode_shapes(in, causal, !matrix);
  bool valid = s.valid, finite = true;
  double magnitude = 0.0;
  const Tensor q = tensor(in, s.q, finite, magnitude);
  const Tensor k = tensor(in, s.k, finite, magnitude);
  Tensor v;
  if (!matrix) v = tensor(in, s.v, finite, magnitude);
  favor::FavorOptions fo;
  fo.causal = causal;
  fo.scale = in.scale(valid);
  favor::CodebookOptions co;
  static_cast<favor::AttentionOptions&>(co) = fo;
  bool tame = true;
  std::unique_ptr<favor::FeatureMap> map;
  Tensor codebook;
  bool shared_codebook = true;
  Index clusters = 0;
  if (method == 2 || method == 3) {
    if (method == 2) fo.chunk = in.chunk(valid);
    const Index map_dim = in.pick(10) == 0 ? s.d + 1 : s.d;
    if (map_dim != s.d) valid = false;
    if (run("FeatureMap", false, [&] { map = make_map(in, map_dim, tame); }) != Outcome::ok) fail("FeatureMap: valid options rejected");
  } else if (method >= 4) {
    co.assignment = pick_assignment(in);
    switch (in.pick(6)) {
      case 0: co.temperature = std::pow(10.0, in.p.ConsumeIntegralInRange<int>(-45, 30)); break;
      case 1: co.temperature = in.pick(2) ? 0.0 : -1.0; valid = false; break;
      case 2: co.temperature = std::numeric_limits<double>::quiet_NaN(); valid = false; break;
      default: co.temperature = in.p.ConsumeFloatingPointInRange<double>(0.05, 4.0); break;
    }
    if (method == 4) co.chunk = in.chunk(valid);
    clusters = in.size(16);
    shared_codebook = s.lead.empty() || in.flag();
    std::vector<Index> cdims = shared_codebook ? std::vector<Index>{} : s.lead;
    cdims.push_back(clusters);
    cdims.push_back(in.pick(12) == 0 ? s.d + 1 : s.d);
    if (cdims.back() != s.d) valid = false;
    codebook = tensor(in, cdims, finite, magnitude);
  }
  if (!finite) valid = false;
  tame = tame && magnitude <= kTame && tame_scale(fo.scale);
  if (g_tracing) {
    auto dims = [](const std::vector<Index>& x) {
      std::string t;
      for (Index e : x) t += std::to_string(e) + " ";
      return t;
    };
    trace("method " + std::to_string(method) + " causal " + std::to_string(causal) + " scale " +
          (fo.scale ? std::to_string(*fo.scale) : std::string("default")) + " chunk " + std::to_string(fo.chunk) +
          " valid " + std::to_string(valid) + " tame " + std::to_string(tame));
    trace("q dims " + dims(s.q) + "k dims " + dims(s.k) + "v dims " + dims(s.v));
    auto flat = [](const Tensor& t) {
      const Index cols = t.dims.empty() ? 0 : std::max<Index>(t.dims.back(), 1);
      return Eigen::Map<const Matrix>(t.data.data(), static_cast<Index>(t.data.size()) / cols, cols);
    };
    trace("q", flat(q)), trace("k", flat(k));
    if (!matrix) trace("v", flat(v));
    if (map) {
      trace(std::string("kernel ") + favor::to_string(map->kernel()) + " epsilon " + std::to_string(map->epsilon()) + " (" + std::to_string(std::log10(map->epsilon())) + " log10)");
      trace("W", map->projection());
    }
    if (method >= 4) {
      trace(std::string("assignment ") + favor::to_string(co.assignment) + " temperature " + std::to_string(co.temperature));
      trace("codebook", flat(codebook));
    }
  }
  const std::vector<Index> out_dims = output_dims(in, s, matrix ? s.S : s.dv, valid);
  std::vector<float> out(count(out_dims) + 1, -7.0f);  // one guard element
  const favor::TensorView out_view{out.data(), out_dims};
  const char* names[] = {"exact_attention", "attention_matrix", "favor_attention",
                         "favor_attention_matrix", "codebook_attention", "codebook_attention_matrix"};
  const char* what = names[method];
  const Outcome outcome = run(what, false, [&] {
    switch (method) {
      case 0: favor::exact_attention(q.view(), k.view(), v.view(), out_view, fo); break;
      case 1: favor::attention_matrix(q.view(), k.view(), out_view, fo); break;
      case 2: favor::favor_attention(*map, q.view(), k.view(), v.view(), out_view, fo); break;
      case 3: favor::favor_attention_matrix(*map, q.view(), k.view(), out_view, fo); break;
      case 4: favor::codebook_attention(codebook.view(), q.view(), k.view(), v.view(), out_view, co); break;
      case 5: favor::codebook_attention_matrix(codebook.view(), q.view(), k.view(), out_view, co); break;
    }
  });
  // Trigonometric features may legitimately give errors for "tame" inputs only through
  // overflow of a cancelled normalizer, which they report as +-inf instead: so no exemption.
  expect(outcome, valid, tame, what);
  if (g_tracing && outcome == Outcome::ok)
    trace("out", Eigen::Map<const Matrix>(out.data(), static_cast<Index>((out.size() - 1) / static_cast<std::size_t>(out_dims.back())), out_dims.back()));
  if (out.back() != -7.0f) fail(std::string(what) + ": wrote past the end of its output");
  if (!matrix)
    check_arriving([&](const Tensor& a, const Tensor& b, const Tensor& c, const favor::TensorView& o) {
      if (method == 0) favor::exact_attention(a.view(), b.view(), c.view(), o, fo);
      else if (method == 2) favor::favor_attention(*map, a.view(), b.view(), c.view(), o, fo);
      else favor::codebook_attention(codebook.view(), a.view(), b.view(), c.view(), o, co);
    }, q, k, v, out_dims, causal, 1 + in.pick(64),
    // as the bindings order them: a bidirectional FAVOR+ call's heads by slices
    method == 2 && !causal ? favor::HeadReading::by_slices : favor::HeadReading::whole);
  if (outcome != Outcome::ok) return;

  const std::size_t n = count(out_dims);
  const Signs signs = map ? signs_of(*map) : Signs::positive;
  check_output(out.data(), n, signs, what);
  if (matrix) check_matrix_rows(out.data(), static_cast<Index>(n / static_cast<std::size_t>(s.S)), s.S, causal, signs, what, s.L);
  else
    for (Index h = 0; h < s.heads(); ++h)
      check_hull(out.data() + h * s.L * s.dv, v.data.data() + h * s.S * s.dv, s.L, s.S, s.dv, causal,
                 signs, what);

  // Float64 reference per head when moderate.
  const double scale = fo.scale ? *fo.scale : 1.0 / std::sqrt(static_cast<double>(s.d));
  for (Index h = 0; h < std::min<Index>(s.heads(), 2); ++h) {
    const auto qh = head(q, h, s.L, s.d), kh = head(k, h, s.S, s.d);
    const MatrixD qs = scaled(qh, scale), ks = scaled(kh, scale);
    LogFeatures fq, fk;
    if (method <= 1) {
      // Weights exp(score_ij) as "features" indexed by j: fq.log = scores, fk = identity.
      const MatrixD scores = scale * (qh.cast<double>() * kh.cast<double>().transpose());
      if (scores.cwiseAbs().maxCoeff() > 50.0) continue;
      fq.log = scores;
      fq.value = MatrixD::Ones(s.L, s.S);
      fk.log = MatrixD::Zero(s.S, s.S);
      fk.value = MatrixD::Identity(s.S, s.S);
    } else if (method <= 3) {
      const auto params = map->parameters(qh, kh, scale);
      if (map->kernel() == favor::Kernel::trigonometric) continue;  // signed: ill-conditioned
      // relu with (almost) no epsilon: float32 features of tiny inputs underflow to 0 (a zero row).
      if (map->kernel() == favor::Kernel::relu && map->epsilon() < 1e-6) continue;
      if (max_abs(map->projection()) > 1e2) continue;
      fq = feature_logs(*map, qs, params, favor::Side::query);
      fk = feature_logs(*map, ks, params, favor::Side::key);
      if (max_sq_norm(qs) > 50.0 || max_sq_norm(ks) > 50.0) continue;
      if (max_finite_log(fq) > 50.0 || max_finite_log(fk) > 50.0) continue;
    } else {
      const Index ch = shared_codebook ? 0 : h;
      const MatrixD cs = scaled(head(codebook, ch, clusters, s.d), scale);
      if (max_sq_norm(qs) > 50.0 || max_sq_norm(ks) > 50.0 || max_sq_norm(cs) > 50.0) continue;
      if (co.assignment == favor::Assignment::soft && co.temperature < 0.05) continue;
      if (!codebook_logs(cs, qs, ks, co.assignment, co.temperature, fq, fk)) continue;
    }
    MatrixD expected;
    const MatrixD vh = matrix ? MatrixD() : head(v, h, s.S, s.dv).cast<double>();
    if (!reference_attention(fq, fk, matrix ? nullptr : &vh, causal, expected)) continue;
    const double vmax = matrix ? 1.0 : std::max(1e-30, vh.cwiseAbs().maxCoeff());
    const std::size_t per_head = static_cast<std::size_t>(expected.size());
    compare_reference(out.data() + static_cast<std::size_t>(h) * per_head, expected, 2e-3 * vmax, what);
  }
}

}  // namespace fuzz
