// Fuzzing causal states, key masks and grouped heads.
#include "fuzz.hpp"

namespace fuzz {

// Causal states, key masks and grouped-query heads: appends in random pieces (with random masks,
// sometimes a bad append that must leave the state as it was) against one causal tensor call on
// the whole sequence (a state with a window shorter than it, exact or FAVOR+: against the same
// state appending it at once); and grouped heads against K and V repeated by hand. A window on a
// codebook state, a negative one, or one of FAVOR+ that is not a multiple of 4, is refused.
void fuzz_state_and_groups(Decoder& in) {
  const int method = in.pick(3);  // exact, favor, codebook
  const Index hkv = 1 + in.pick(2), group = 1 + in.pick(3), hq = hkv * group;
  const Index L = in.size(), d = in.size(16), dv = in.size(8);
  std::vector<float> q = in.values(hq * L, d, false), k = in.values(hkv * L, d, false), v = in.values(hkv * L, dv, false);
  q.resize(static_cast<std::size_t>(hq * L * d)), k.resize(static_cast<std::size_t>(hkv * L * d)), v.resize(static_cast<std::size_t>(hkv * L * dv));
  const bool tame = max_abs(q) <= 10.0 && max_abs(k) <= 10.0 && max_abs(v) <= kTame;
  std::vector<std::uint8_t> mask(static_cast<std::size_t>(hkv * L), 1);
  const bool masked = in.flag();
  if (masked)
    for (auto& m : mask) m = in.pick(3) != 0;
  bool tame_map = true;
  std::unique_ptr<favor::FeatureMap> map;
  favor::CausalStateOptions so;
  so.method = static_cast<favor::StateMethod>(method);
  Matrix book;
  if (method == 1) {
    if (run("FeatureMap", false, [&] { map = make_map(in, d, tame_map); }) != Outcome::ok) return;
    if (map->kernel() == favor::Kernel::oprf && !map->data_independent())
      map->set_rho(in.p.ConsumeFloatingPointInRange<double>(0.0, 20.0));
    if (!map->data_independent()) {  // FAVOR#: fixed from a sample of queries and keys
      const Matrix x = in.matrix(1 + in.pick(4), d, false), y = in.matrix(1 + in.pick(4), d, false);
      tame_map = tame_map && max_abs(x) <= 10.0 && max_abs(y) <= 10.0;
      if (run("fit", false, [&] { map->fit(x, y, 1.0 / std::sqrt(static_cast<double>(d))); }) != Outcome::ok) return;
    }
    so.map = map.get();
  } else if (method == 2) {
    book = in.matrix(1 + in.pick(8), d, false);
    so.codebook = {book.data(), {book.rows(), d}};
    so.assignment = pick_assignment(in);
  }
  if (method == 0 && in.flag()) so.window = 1 + static_cast<Index>(in.pick(static_cast<int>(L) + 2));  // < L or not
  if (method == 1 && in.flag()) so.window = 4 * (1 + static_cast<Index>(in.pick(static_cast<int>(L) / 4 + 2)));  // blocks < L or not
  if (in.pick(8) == 0) {
    favor::CausalStateOptions bad = so;
    bad.window = method == 0   ? -1 - static_cast<Index>(in.pick(3))
                 : method == 1 ? (in.flag() ? -4 : 4 * static_cast<Index>(in.pick(4)) + 1 + static_cast<Index>(in.pick(3)))
                               : 1 + static_cast<Index>(in.pick(4));
    if (run("CausalState (bad window)", false, [&] { favor::CausalState refused(bad); }) == Outcome::ok)
      fail("CausalState: a window of " + std::to_string(bad.window) + " was accepted for method " + std::to_string(method));
  }
  favor::CausalState state(so);
  const std::vector<Index> qd{hq, L, d}, kd{hkv, L, d}, vd{hkv, L, dv}, od{hq, L, dv};
  std::vector<float> whole(static_cast<std::size_t>(hq * L * dv) + 1, -7.0f), got(whole.size() - 1, 0.0f);
  favor::FavorOptions fo;
  fo.causal = true;
  favor::CodebookOptions co;
  co.causal = true;
  co.assignment = so.assignment;
  const favor::ConstMaskView mv = masked ? favor::ConstMaskView{mask.data(), {hkv, L}} : favor::ConstMaskView{};
  const Outcome one = run("causal call", false, [&] {
    const favor::TensorView out{whole.data(), od};
    switch (method) {
      case 0:
        if (so.window != 0 && so.window < L) {
          favor::CausalState once(so);
          once.append({q.data(), qd}, {k.data(), kd}, {v.data(), vd}, out, mv);
        } else {
          favor::exact_attention({q.data(), qd}, {k.data(), kd}, {v.data(), vd}, out, fo, mv);
        }
        break;
      case 1:
        if (so.window != 0 && so.window / 4 < L) {
          favor::CausalState once(so);
          once.append({q.data(), qd}, {k.data(), kd}, {v.data(), vd}, out, mv);
        } else {
          favor::favor_attention(*map, {q.data(), qd}, {k.data(), kd}, {v.data(), vd}, out, fo, mv);
        }
        break;
      default: favor::codebook_attention(so.codebook, {q.data(), qd}, {k.data(), kd}, {v.data(), vd}, out, co, mv); break;
    }
  });
  if (whole.back() != -7.0f) fail("causal call: wrote past the end of its output");
  // Append in pieces.
  bool ok = true;
  for (Index a = 0; a < L && ok;) {
    const Index n = std::min(L - a, 1 + static_cast<Index>(in.pick(6)));
    auto rows = [&](const std::vector<float>& t, Index heads, Index cols) {
      std::vector<float> r(static_cast<std::size_t>(heads * n * cols));
      for (Index h = 0; h < heads; ++h)
        std::copy(t.begin() + (h * L + a) * cols, t.begin() + (h * L + a + n) * cols, r.begin() + h * n * cols);
      return r;
    };
    const auto qs = rows(q, hq, d), ks = rows(k, hkv, d), vs = rows(v, hkv, dv);
    std::vector<std::uint8_t> ms;
    for (Index h = 0; h < hkv; ++h) ms.insert(ms.end(), mask.begin() + h * L + a, mask.begin() + h * L + a + n);
    std::vector<float> out(static_cast<std::size_t>(hq * n * dv) + 1, -7.0f);
    if (in.pick(5) == 0) {  // a bad append: one more key (and value) than queries
      std::vector<float> bk(static_cast<std::size_t>(hkv * (n + 1) * std::max(d, dv)), 0.5f);
      const Outcome o = run("append (bad)", false, [&] {
        state.append({qs.data(), {hq, n, d}}, {bk.data(), {hkv, n + 1, d}}, {bk.data(), {hkv, n + 1, dv}}, {out.data(), {hq, n, dv}});
      });
      if (o == Outcome::ok) fail("append: dims that do not match were accepted");
      if (state.length() != a) fail("append: a failed append changed the length");
    }
    const favor::ConstMaskView m = masked ? favor::ConstMaskView{ms.data(), {hkv, n}} : favor::ConstMaskView{};
    const Outcome o = run("append", false, [&] {
      state.append({qs.data(), {hq, n, d}}, {ks.data(), {hkv, n, d}}, {vs.data(), {hkv, n, dv}}, {out.data(), {hq, n, dv}}, m);
    });
    if (out.back() != -7.0f) fail("append: wrote past the end of its output");
    if (o != Outcome::ok) {
      ok = false;
      if (state.length() != a) fail("append: a failed append changed the length");
      break;
    }
    for (Index h = 0; h < hq; ++h) std::copy(out.begin() + h * n * dv, out.begin() + (h + 1) * n * dv, got.begin() + (h * L + a) * dv);
    a += n;
  }
  if (one == Outcome::ok && ok && tame && tame_map && signs_of_state(map.get()) && finite_all(got)) {
    double diff = 0.0, top = 0.0;
    for (std::size_t i = 0; i < got.size(); ++i) {
      diff = std::max(diff, std::abs(static_cast<double>(got[i]) - whole[i]));
      top = std::max(top, std::abs(static_cast<double>(whole[i])));
    }
    if (diff > 1e-3 * std::max(top, max_abs(v)) + 1e-30)
      fail("causal state: appends differ from one causal call by " + std::to_string(diff) + " (max " + std::to_string(top) + ")");
  }
  if (one == Outcome::ok && tame && !ok) fail("append: rejected what one causal call accepted: " + g_last_error);
}

}  // namespace fuzz
