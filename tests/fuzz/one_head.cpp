// Fuzzing the one-head (Eigen::Ref) API.
#include "fuzz.hpp"
#include "reference.hpp"

namespace fuzz {

// One-head (Eigen::Ref) API: no value validation, so NaN/inf inputs only need "no crash";
// shape errors must still be reported.
void fuzz_one_head(Decoder& in) {
  const bool causal = in.flag();
  const Index L = in.size(), S = causal && in.flag() ? L : in.size(), d = in.size(16), dv = in.size(8);
  const Matrix q = in.matrix(L, d), k = in.matrix(S, d), v = in.matrix(S, dv);
  const bool valid_causal = !(causal && L > S);
  bool valid_scale = true, valid_chunk = true;
  favor::FavorOptions fo;
  fo.causal = causal;
  fo.scale = in.scale(valid_scale);
  fo.chunk = in.chunk(valid_chunk);
  const bool valid = valid_causal && valid_scale;  // the matrix forms and exact attention
  const bool finite = q.allFinite() && k.allFinite() && v.allFinite();
  bool tame = finite && max_abs(q) <= kTame && max_abs(k) <= kTame && max_abs(v) <= kTame && tame_scale(fo.scale);
  Matrix out(L, dv);
  switch (in.pick(4)) {
    case 0: {
      const Outcome o = run("exact_attention (head)", false, [&] { favor::exact_attention(q, k, v, out, fo); });
      if (finite) expect(o, valid, tame, "exact_attention (head)");
      if (o == Outcome::ok && finite) {
        check_output(out.data(), static_cast<std::size_t>(out.size()), Signs::positive, "exact_attention (head)");
        check_hull(out.data(), v.data(), L, S, dv, causal, Signs::positive, "exact_attention (head)");
      }
      break;
    }
    case 1: {
      std::unique_ptr<favor::FeatureMap> map;
      if (run("FeatureMap", false, [&] { map = make_map(in, d, tame); }) != Outcome::ok) return;
      Matrix a(L, S);
      const bool as_matrix = in.flag();
      trace(std::string("kernel ") + favor::to_string(map->kernel()) + " epsilon " + std::to_string(map->epsilon()) + " (" + std::to_string(std::log10(map->epsilon())) + " log10)" +
            " causal " + std::to_string(causal) + " chunk " + std::to_string(fo.chunk) + " scale " +
            (fo.scale ? std::to_string(*fo.scale) : std::string("default")) + " matrix " + std::to_string(as_matrix));
      trace("W", map->projection()), trace("q", q), trace("k", k), trace("v", v);
      const Outcome o = run("favor (head)", false, [&] {
        if (as_matrix) favor::favor_attention_matrix(*map, q, k, a, fo);
        else favor::favor_attention(*map, q, k, v, out, fo);
      });
      if (o == Outcome::ok) as_matrix ? trace("out", a) : trace("out", out);
      if (finite) expect(o, valid && (as_matrix || valid_chunk), tame, "favor (head)");
      if (o == Outcome::ok && finite) {
        if (as_matrix) {
          check_output(a.data(), static_cast<std::size_t>(a.size()), signs_of(*map), "favor_attention_matrix (head)");
          check_matrix_rows(a.data(), L, S, causal, signs_of(*map), "favor_attention_matrix (head)");
        } else {
          check_output(out.data(), static_cast<std::size_t>(out.size()), signs_of(*map), "favor_attention (head)");
          check_hull(out.data(), v.data(), L, S, dv, causal, signs_of(*map), "favor_attention (head)");
        }
      }
      break;
    }
    case 2: {  // linear_attention with explicit features (signed or not)
      const Index M = in.size(32);
      Matrix qf = in.matrix(L, M), kf = in.matrix(S, M);
      const bool nonnegative = in.flag();
      if (nonnegative) {
        qf = qf.cwiseAbs();
        kf = kf.cwiseAbs();
      }
      const bool ffinite = qf.allFinite() && kf.allFinite() && finite;
      trace("qf", qf), trace("kf", kf), trace("v", v);
      trace("causal " + std::to_string(causal) + " chunk " + std::to_string(fo.chunk));
      const Outcome o = run("linear_attention", false, [&] { favor::linear_attention(qf, kf, v, out, causal, fo.chunk); });
      trace("out", out);
      if (ffinite && o == Outcome::ok) check_output(out.data(), static_cast<std::size_t>(out.size()), Signs::signed_values, "linear_attention");
      if (ffinite) expect(o, valid_causal && valid_chunk, max_abs(qf) <= 1e2 && max_abs(kf) <= 1e2 && max_abs(v) <= kTame,
                          "linear_attention");
      if (ffinite && o == Outcome::ok && nonnegative && max_abs(qf) <= 1e2 && max_abs(kf) <= 1e2) {
        LogFeatures lq{MatrixD::Zero(L, M), qf.cast<double>()}, lk{MatrixD::Zero(S, M), kf.cast<double>()};
        MatrixD expected;
        const MatrixD vd = v.cast<double>();
        if (reference_attention(lq, lk, &vd, causal, expected))
          compare_reference(out.data(), expected, 2e-3 * std::max(1e-30, vd.cwiseAbs().maxCoeff()), "linear_attention");
      }
      break;
    }
    default: {  // codebook, one head
      const Index c = in.size(16);
      const Matrix cb = in.matrix(c, in.pick(10) == 0 ? d + 1 : d);
      favor::CodebookOptions co;
      static_cast<favor::AttentionOptions&>(co) = fo;
      co.assignment = pick_assignment(in);
      co.chunk = fo.chunk;
      co.temperature = in.flag() ? std::pow(10.0, in.p.ConsumeIntegralInRange<int>(-45, 30)) : 0.5;
      tame = tame && cb.allFinite() && max_abs(cb) <= kTame;
      Matrix a(L, S);
      const bool as_matrix = in.flag();
      trace(std::string("assignment ") + favor::to_string(co.assignment) + " temperature " + std::to_string(co.temperature) +
            " causal " + std::to_string(causal) + " chunk " + std::to_string(co.chunk) + " scale " +
            (co.scale ? std::to_string(*co.scale) : std::string("default")) + " matrix " + std::to_string(as_matrix));
      trace("q", q), trace("k", k), trace("v", v), trace("codebook", cb);
      const Outcome o = run("codebook (head)", false, [&] {
        if (as_matrix) favor::codebook_attention_matrix(cb, q, k, a, co);
        else favor::codebook_attention(cb, q, k, v, out, co);
      });
      if (finite && cb.allFinite())
        expect(o, valid && cb.cols() == d && (as_matrix || valid_chunk), tame, "codebook (head)");
      if (o == Outcome::ok && finite && cb.allFinite()) {
        if (as_matrix) {
          check_output(a.data(), static_cast<std::size_t>(a.size()), Signs::positive, "codebook_attention_matrix (head)");
          check_matrix_rows(a.data(), L, S, causal, Signs::positive, "codebook_attention_matrix (head)");
        } else {
          check_output(out.data(), static_cast<std::size_t>(out.size()), Signs::positive, "codebook_attention (head)");
          check_hull(out.data(), v.data(), L, S, dv, causal, Signs::positive, "codebook_attention (head)");
        }
      }
      break;
    }
  }
}

}  // namespace fuzz
