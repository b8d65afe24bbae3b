// favor::CausalState natively: any split of a sequence gives the one-shot causal outputs (exact bit
// for bit; FAVOR+ and codebooks to float rounding, 2e-5 of the largest entry as in the Node
// suite), with grouped-query heads and key masks; bottom-right causal and masks against the
// float64 reference; the strong guarantee of a failing append.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <favor/engine/factored_attention.hpp>
#include <favor/features/factored.hpp>

#include "reference.hpp"

namespace {

using ref::Index;
using ref::MatD;
using ref::MatF;

// A [H, n, c] tensor held as one buffer; rows [a, b) of every head copied out.
struct Tensor {
  std::vector<float> data;
  std::vector<Index> dims;
  favor::ConstTensorView view() const { return {data.data(), dims}; }
  Tensor rows(Index a, Index b) const {
    const Index H = dims[0], n = dims[1], c = dims[2];
    Tensor t{std::vector<float>(static_cast<std::size_t>(H * (b - a) * c)), {H, b - a, c}};
    for (Index h = 0; h < H; ++h)
      std::copy(data.begin() + (h * n + a) * c, data.begin() + (h * n + b) * c, t.data.begin() + h * (b - a) * c);
    return t;
  }
};

Tensor normal(Index H, Index n, Index c, std::mt19937& gen, double std) {
  Tensor t{std::vector<float>(static_cast<std::size_t>(H * n * c)), {H, n, c}};
  std::normal_distribution<double> g(0.0, std);
  for (float& x : t.data) x = static_cast<float>(g(gen));
  return t;
}

double max_rel(const std::vector<float>& got, const std::vector<float>& want) {
  double diff = 0.0, top = 0.0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    diff = std::max(diff, std::abs(static_cast<double>(got[i]) - want[i]));
    top = std::max(top, std::abs(static_cast<double>(want[i])));
  }
  return diff / top;
}

// The options of a FAVOR+ state on `map`.
favor::CausalStateOptions favor_state(const favor::FeatureMap& map) {
  favor::CausalStateOptions o;
  o.method = favor::StateMethod::favor;
  o.map = &map;
  return o;
}

// "no error", or the kind and message of the error making a state with options o throws.
std::string error_of(const favor::CausalStateOptions& o) {
  try {
    favor::CausalState state(o);
  } catch (const favor::Error& e) {
    return std::string(e.kind() == favor::Error::Kind::type ? "TypeError " : "RangeError ") + e.what();
  }
  return "no error";
}

// Appends in pieces (calling `before` ahead of each, when given); returns the outputs in sequence
// order ([Hq, L, dv]).
std::vector<float> run(favor::CausalState& state, const Tensor& q, const Tensor& k, const Tensor& v,
                       const std::vector<Index>& pieces, const std::vector<std::uint8_t>* mask = nullptr,
                       const std::function<void()>& before = {}) {
  const Index H = q.dims[0], L = q.dims[1], dv = v.dims[2], Hkv = k.dims[0];
  std::vector<float> out(static_cast<std::size_t>(H * L * dv));
  Index a = 0;
  for (Index n : pieces) {
    if (before) before();
    const Tensor qs = q.rows(a, a + n), ks = k.rows(a, a + n), vs = v.rows(a, a + n);
    std::vector<float> o(static_cast<std::size_t>(H * n * dv));
    std::vector<std::uint8_t> m;
    favor::ConstMaskView mv;
    if (mask) {
      for (Index h = 0; h < Hkv; ++h) m.insert(m.end(), mask->begin() + h * L + a, mask->begin() + h * L + a + n);
      mv = {m.data(), {Hkv, n}};
    }
    state.append(qs.view(), ks.view(), vs.view(), {o.data(), {H, n, dv}}, mv);
    for (Index h = 0; h < H; ++h) std::copy(o.begin() + h * n * dv, o.begin() + (h + 1) * n * dv, out.begin() + (h * L + a) * dv);
    a += n;
  }
  EXPECT_EQ(state.length(), L);
  return out;
}

const std::vector<std::vector<Index>> kSplits = {std::vector<Index>(45, 1), {7, 1, 1, 20, 3, 13}, {45}};

TEST(CausalState, AnySplitEqualsOneCausalCall) {
  std::mt19937 gen(9100);
  const Index Hq = 4, Hkv = 2, L = 45, d = 8;
  const Tensor q = normal(Hq, L, d, gen, 0.8), k = normal(Hkv, L, d, gen, 0.8), v = normal(Hkv, L, 5, gen, 1.0);
  std::vector<std::uint8_t> mask(static_cast<std::size_t>(Hkv * L), 1);
  for (std::size_t i = 0; i < mask.size(); i += 4) mask[i] = 0;
  const favor::ConstMaskView mv{mask.data(), {Hkv, L}};
  favor::AttentionOptions causal;
  causal.causal = true;
  favor::FavorOptions fcausal;
  fcausal.causal = true;
  favor::CodebookOptions ccausal;
  ccausal.causal = true;
  ccausal.assignment = favor::Assignment::soft;

  std::vector<float> want(static_cast<std::size_t>(Hq * L * 5));
  const favor::TensorView out{want.data(), {Hq, L, 5}};
  favor::FeatureMapOptions fo;
  fo.dim = d, fo.features = 16, fo.seed = 3, fo.kernel = favor::Kernel::hyperbolic;
  const favor::FeatureMap map(fo);
  const MatF book = ref::normal_matrix(6, d, gen);

  for (const bool masked : {false, true}) {
    const favor::ConstMaskView m = masked ? mv : favor::ConstMaskView{};
    favor::exact_attention(q.view(), k.view(), v.view(), out, causal, m);
    for (const auto& pieces : kSplits) {
      favor::CausalState state({});
      EXPECT_EQ(run(state, q, k, v, pieces, masked ? &mask : nullptr), want) << "exact, masked " << masked;
    }
    favor::favor_attention(map, q.view(), k.view(), v.view(), out, fcausal, m);
    for (const auto& pieces : kSplits) {
      favor::CausalState state(favor_state(map));
      EXPECT_LT(max_rel(run(state, q, k, v, pieces, masked ? &mask : nullptr), want), 2e-5) << "favor, masked " << masked;
    }
    favor::codebook_attention({book.data(), {6, d}}, q.view(), k.view(), v.view(), out, ccausal, m);
    for (const auto& pieces : kSplits) {
      favor::CausalStateOptions o;
      o.method = favor::StateMethod::codebook;
      o.codebook = {book.data(), {6, d}};
      o.assignment = favor::Assignment::soft;
      favor::CausalState state(o);
      EXPECT_LT(max_rel(run(state, q, k, v, pieces, masked ? &mask : nullptr), want), 2e-5) << "codebook, masked " << masked;
    }
  }
}

TEST(CausalState, FailingAppendLeavesTheStateUnchanged) {
  std::mt19937 gen(9200);
  const Index L = 12, d = 4;
  const Tensor q = normal(1, L, d, gen, 1.0), k = normal(1, L, d, gen, 1.0), v = normal(1, L, d, gen, 1.0);
  favor::FeatureMapOptions fo;
  fo.dim = d, fo.features = 8;
  const favor::FeatureMap map(fo);
  const favor::CausalStateOptions o = favor_state(map);
  favor::CausalState state(o);
  const std::vector<float> want = [&] {
    favor::CausalState fresh(o);
    return run(fresh, q, k, v, {L});
  }();
  std::vector<float> first(static_cast<std::size_t>(5 * d));
  state.append(q.rows(0, 5).view(), k.rows(0, 5).view(), v.rows(0, 5).view(), {first.data(), {1, 5, d}});
  Tensor bad = v.rows(5, L);
  bad.data[3] = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> rest(static_cast<std::size_t>(7 * d));
  EXPECT_THROW(state.append(q.rows(5, L).view(), k.rows(5, L).view(), bad.view(), {rest.data(), {1, 7, d}}), favor::Error);
  const Tensor q2 = normal(2, 7, d, gen, 1.0);
  EXPECT_THROW(state.append(q2.view(), q2.view(), q2.view(), {rest.data(), {2, 7, d}}), favor::Error);  // other heads
  EXPECT_EQ(state.length(), 5);
  state.append(q.rows(5, L).view(), k.rows(5, L).view(), v.rows(5, L).view(), {rest.data(), {1, 7, d}});
  first.insert(first.end(), rest.begin(), rest.end());
  EXPECT_LT(max_rel(first, want), 2e-5);
}

TEST(CausalState, OprfNeedsAFixedRho) {
  favor::FeatureMapOptions fo;
  fo.dim = 4, fo.features = 8, fo.kernel = favor::Kernel::oprf;
  const favor::FeatureMap loose(fo);
  favor::CausalStateOptions o = favor_state(loose);
  EXPECT_THROW(favor::CausalState{o}, favor::Error);
  fo.rho = 2.0;
  const favor::FeatureMap fixed(fo);
  o.map = &fixed;
  EXPECT_NO_THROW(favor::CausalState{o});
}

// Bottom-right causal with a key mask, every method's matrix form, against the float64 reference.
TEST(CausalState, BottomRightMaskedMatricesMatchFloat64) {
  std::mt19937 gen(9300);
  const Index L = 6, S = 15, d = 5;
  const MatF q = ref::normal_matrix(L, d, gen), k = ref::normal_matrix(S, d, gen);
  std::vector<std::uint8_t> mask(S, 1);
  mask[0] = mask[4] = mask[11] = 0;
  favor::AttentionOptions o;
  o.causal = true;
  o.key_mask = mask.data();
  const double scale = 1.0 / std::sqrt(5.0);
  MatD want = MatD::Zero(L, S);
  for (Index i = 0; i < L; ++i) {
    double top = -1e300, total = 0.0;
    for (Index j = 0; j <= i + S - L; ++j)
      if (mask[j]) top = std::max(top, scale * q.row(i).cast<double>().dot(k.row(j).cast<double>()));
    for (Index j = 0; j <= i + S - L; ++j)
      if (mask[j]) total += (want(i, j) = std::exp(scale * q.row(i).cast<double>().dot(k.row(j).cast<double>()) - top));
    want.row(i) /= total;
  }
  EXPECT_LT(ref::max_rel(ref::to_double(favor::attention_matrix(q, k, o)), want), 1e-5);
  const MatF v = ref::normal_matrix(S, 3, gen);
  EXPECT_LT(ref::max_rel(ref::to_double(favor::exact_attention(q, k, v, o)), want * v.cast<double>()), 1e-5);
}

}  // namespace

namespace {

// A small append makes the features of all its heads in one product (the rows stacked, passed to
// favor_attention as `features`): the same bits as favor_attention making them head by head, for
// every kernel whose parameters do not depend on the inputs, with a carried state and grouped heads.
TEST(CausalState, FeaturesMadeForAllHeadsGiveTheBitsOfFeaturesMadePerHead) {
  std::mt19937 gen(11);
  for (const favor::Kernel kernel : {favor::Kernel::positive, favor::Kernel::hyperbolic, favor::Kernel::trigonometric,
                                     favor::Kernel::relu, favor::Kernel::oprf, favor::Kernel::sderf}) {
    favor::FeatureMapOptions mo;
    mo.dim = 16, mo.features = 24, mo.kernel = kernel, mo.seed = 5;
    if (kernel == favor::Kernel::oprf) mo.rho = 1.5;
    favor::FeatureMap map(mo);
    if (kernel == favor::Kernel::sderf) map.fit(favor::Matrix::Identity(16, 16), favor::Matrix::Ones(4, 16), 0.25);
    const Index L = 3, S = 3, dv = 4, heads = 3;
    std::vector<favor::Matrix> qs;
    for (Index h = 0; h < heads; ++h) qs.push_back(favor::Matrix::NullaryExpr(L, 16, [&](Index, Index) { return std::normal_distribution<float>(0, 1)(gen); }));
    const favor::Matrix k = favor::Matrix::NullaryExpr(S, 16, [&](Index, Index) { return std::normal_distribution<float>(0, 1)(gen); });
    const favor::Matrix v = favor::Matrix::NullaryExpr(S, dv, [&](Index, Index) { return std::normal_distribution<float>(0, 1)(gen); });
    favor::FavorOptions o;
    o.causal = true;
    o.chunk = 2;
    favor::Matrix stacked_x(heads * L + S, 16);
    for (Index h = 0; h < heads; ++h) stacked_x.middleRows(h * L, L) = qs[static_cast<std::size_t>(h)];
    stacked_x.bottomRows(S) = k;
    const favor::FactoredFeatures features = favor::favor_factors(map, stacked_x, o);
    // Twice, through a carried state: the second call continues the first one's.
    favor::PrefixState mine = favor::empty_prefix_state(map.num_features(), dv), theirs = mine;
    for (int round = 0; round < 2; ++round) {
      std::vector<favor::Matrix> own(heads, favor::Matrix(L, dv)), given(heads, favor::Matrix(L, dv));
      std::vector<favor::ConstMatrixRef> q_refs(qs.begin(), qs.end());
      std::vector<favor::MatrixRef> own_refs(own.begin(), own.end()), given_refs(given.begin(), given.end());
      favor::StateStep own_step(mine), given_step(theirs);
      favor::favor_attention(map, q_refs, k, v, own_refs, o, &own_step);
      favor::favor_attention(map, q_refs, k, v, given_refs, o, &given_step, &features);
      own_step.commit(), given_step.commit();
      for (Index h = 0; h < heads; ++h)
        ASSERT_EQ(0, std::memcmp(own[static_cast<std::size_t>(h)].data(), given[static_cast<std::size_t>(h)].data(), sizeof(float) * L * dv))
            << "kernel " << static_cast<int>(kernel) << " head " << h << " round " << round;
      ASSERT_EQ(0, std::memcmp(mine.kv.data(), theirs.kv.data(), sizeof(float) * mine.kv.size()));
    }
  }
}

// A decode step adds the previous step's pending keys to the state while reading it out (one pass
// over kv instead of two): the outputs and the state are those of adding them first. Steps of 1
// and 2 rows, keys that now and then raise feature shifts (rows rescaled in place) or jump past
// the in-place path's range (the general path, which adds them first), 2 query heads per key/value
// head (the second reads the state the first has completed), dv with whole 8-vector groups,
// single vectors and scalar columns.
TEST(CausalState, ReadoutAddingPendingKeysGivesTheBitsOfAddingThemFirst) {
  for (const favor::Kernel kernel : {favor::Kernel::positive, favor::Kernel::trigonometric}) {
    for (const Index dv : {Index{64}, Index{13}, Index{3}}) {
      std::mt19937 gen(static_cast<unsigned>(17 + dv));
      favor::FeatureMapOptions mo;
      mo.dim = 16, mo.features = 24, mo.kernel = kernel, mo.seed = 9;
      const favor::FeatureMap map(mo);
      const bool positive = kernel == favor::Kernel::positive;
      favor::FavorOptions o;
      o.causal = true;
      favor::PrefixState mine = favor::empty_prefix_state(map.num_features(), dv), settled = mine;
      int fused = 0, rescaled = 0, general = 0;
      for (int step = 0; step < 60; ++step) {
        const Index n = step % 9 == 4 ? 2 : 1;
        const double scale = step % 11 == 6 ? 3.0 * (1 + step / 11) : 1.0;  // growing jumps
        const auto draw = [&](Index cols, double s) {
          return favor::Matrix(favor::Matrix::NullaryExpr(n, cols, [&](Index, Index) { return static_cast<float>(std::normal_distribution<double>(0, s)(gen)); }));
        };
        const std::vector<favor::Matrix> qs{draw(16, 1.0), draw(16, 1.0)};
        favor::Matrix k = draw(16, scale);
        const favor::Matrix v = draw(dv, 1.0);
        // a key along one feature's w: that feature's log magnitude jumps by ~5 (a shift raised)
        if (positive && step % 5 == 2) k.row(0) = 1.6f * map.projection().row(step % map.num_features());
        std::vector<favor::Matrix> a(2, favor::Matrix(n, dv)), b(2, favor::Matrix(n, dv));
        std::vector<favor::ConstMatrixRef> q_refs(qs.begin(), qs.end());
        std::vector<favor::MatrixRef> a_refs(a.begin(), a.end()), b_refs(b.begin(), b.end());
        const favor::Vector shift_before = mine.shift;  // (a copy)
        const bool pending = mine.pending_kf.rows() > 0;
        favor::settle(settled);
        favor::StateStep mine_step(mine), settled_step(settled);
        favor::favor_attention(map, q_refs, k, v, a_refs, o, &mine_step);
        favor::favor_attention(map, q_refs, k, v, b_refs, o, &settled_step);
        mine_step.commit(), settled_step.commit();
        for (std::size_t h = 0; h < 2; ++h)
          ASSERT_EQ(0, std::memcmp(a[h].data(), b[h].data(), sizeof(float) * n * dv))
              << "kernel " << static_cast<int>(kernel) << " dv " << dv << " step " << step << " head " << h;
        fused += pending && n == 1 && mine.pending_kf.rows() > 0;
        rescaled += pending && mine.pending_kf.rows() > 0 && mine.shift != shift_before;
        // the general path leaves only the zero key a carried state keeps room with
        general += mine.pending_kf.rows() == 1 && (mine.pending_kf.array() == 0).all();
        favor::PrefixState both = mine;
        favor::settle(both), favor::settle(settled);
        ASSERT_EQ(0, std::memcmp(both.kv.data(), settled.kv.data(), sizeof(float) * both.kv.size())) << "step " << step;
        ASSERT_EQ(0, std::memcmp(both.k_sum.data(), settled.k_sum.data(), sizeof(float) * both.k_sum.size()));
        ASSERT_EQ(both.shift, settled.shift);
      }
      // The paths under test ran: readouts that added pending keys, some after rows were rescaled.
      EXPECT_GE(fused, 30) << "dv " << dv;
      // Positive features of keys along w raise shifts; trigonometric ones of keys 3, 6, 9... times as
      // large (row logs |x~|^2 / 2 ~ 2 s^2 rising by 54 and more) leave the in-place path.
      if (positive) EXPECT_GE(rescaled, 5) << "dv " << dv;
      else EXPECT_GE(general, 3) << "dv " << dv;
    }
  }
}

// A sliding window's new state is the sum of its blocks' states (summed_states): per feature, at
// the largest shift, each part's sums (its pending keys added) times exp(its shift - that shift),
// against the same in double; features no part has summed yet stay empty (shift -inf, zeros).
TEST(CausalState, SummedStatesAddThePartsAtTheLargestShift) {
  std::mt19937 gen(29);
  const Index M = 20, dv = 13;
  const auto normal_matrix = [&](Index r, Index c) {
    return favor::Matrix(favor::Matrix::NullaryExpr(r, c, [&](Index, Index) { return std::normal_distribution<float>(0, 1)(gen); }));
  };
  constexpr float kEmpty = -std::numeric_limits<float>::infinity();
  std::vector<favor::PrefixState> parts;
  for (Index p = 0; p < 3; ++p) {
    const Index pending = p;  // none, one, two pending keys
    favor::PrefixState s{normal_matrix(M, dv), normal_matrix(M, 1).cwiseAbs(), 3.0f * normal_matrix(M, 1),
                         normal_matrix(pending, M).cwiseAbs(), normal_matrix(pending, dv)};
    // feature 0 empty in every part, feature 1 only in the last, feature 2 summed in this part alone
    for (const Index r : {Index{0}, Index{1}, Index{2}}) {
      if (r == 0 || (r == 1 && p < 2) || (r == 2 && p != 1)) {
        s.kv.row(r).setZero(), s.k_sum(r) = 0.0f, s.shift(r) = kEmpty;
        if (pending) s.pending_kf.col(r).setZero();
      }
    }
    parts.push_back(std::move(s));
  }
  const favor::PrefixState sum = favor::summed_states({&parts[0], &parts[1], &parts[2]});
  ASSERT_EQ(0, sum.pending_kf.rows());
  for (Index r = 0; r < M; ++r) {
    float shift = kEmpty;
    for (const favor::PrefixState& s : parts) shift = std::max(shift, s.shift(r));
    ASSERT_EQ(sum.shift(r), shift) << "feature " << r;
    Eigen::VectorXd kv = Eigen::VectorXd::Zero(dv);
    double k_sum = 0.0;
    for (const favor::PrefixState& s : parts) {
      if (s.shift(r) == kEmpty) continue;
      const double f = std::exp(static_cast<double>(s.shift(r)) - shift);
      Eigen::VectorXd row = s.kv.row(r).transpose().cast<double>();
      for (Index i = 0; i < s.pending_kf.rows(); ++i) row += static_cast<double>(s.pending_kf(i, r)) * s.pending_v.row(i).transpose().cast<double>();
      kv += f * row, k_sum += f * s.k_sum(r);
    }
    const double scale = std::max(1.0, kv.cwiseAbs().maxCoeff());
    EXPECT_LT((sum.kv.row(r).transpose().cast<double>() - kv).cwiseAbs().maxCoeff(), 1e-6 * scale) << "feature " << r;
    EXPECT_NEAR(sum.k_sum(r), k_sum, 1e-6 * std::max(1.0, k_sum)) << "feature " << r;
    if (r == 0) EXPECT_TRUE(sum.kv.row(r).isZero(0.0f) && sum.k_sum(r) == 0.0f);
  }
}

// A step rolled back after rescaling rows in place (and reading out, which added the pending keys
// to the other rows) leaves the state it started from, its pending keys added (and room for one).
TEST(CausalState, RollbackAfterReadoutGivesTheSettledState) {
  std::mt19937 gen(23);
  const Index M = 24, dv = 13;
  const auto normal_matrix = [&](Index r, Index c) {
    return favor::Matrix(favor::Matrix::NullaryExpr(r, c, [&](Index, Index) { return std::normal_distribution<float>(0, 1)(gen); }));
  };
  for (int readouts = 0; readouts <= 2; ++readouts) {
    favor::PrefixState state{normal_matrix(M, dv), normal_matrix(M, 1).cwiseAbs(), normal_matrix(M, 1),
                             normal_matrix(1, M).cwiseAbs(), normal_matrix(1, dv)};
    favor::PrefixState expected = state;
    favor::settle(expected);
    ASSERT_EQ(0, expected.pending_kf.rows());
    favor::Vector shift = state.shift;
    shift(3) += 0.5f, shift(17) += 1.0f;
    favor::StateStep step(state);
    step.rescale_in_place(shift);
    const favor::Matrix qf = normal_matrix(1, M).cwiseAbs();
    favor::Matrix numerator(1, dv);
    float denominator = 0;
    for (int i = 0; i < readouts; ++i) step.readout(qf, numerator, &denominator);
    step.rollback();
    // settled: no key pending but the zero key a carried state keeps room with
    EXPECT_EQ(1, state.pending_kf.rows());
    EXPECT_TRUE((state.pending_kf.array() == 0).all() && (state.pending_v.array() == 0).all());
    EXPECT_EQ(0, std::memcmp(state.kv.data(), expected.kv.data(), sizeof(float) * M * dv)) << readouts << " readouts";
    EXPECT_EQ(0, std::memcmp(state.k_sum.data(), expected.k_sum.data(), sizeof(float) * M));
    EXPECT_EQ(state.shift, expected.shift);
  }
}

}  // namespace

namespace {

// The float64 reference of sliding-window causal attention ([Hq, L, dv]): query i of head h sees,
// of key/value head kv = h / (Hq / Hkv), the unmasked positions j <= i, only the `window` last of
// them (window 0: all); a query that sees none is zeros.
std::vector<double> window_reference(const Tensor& q, const Tensor& k, const Tensor& v, Index window,
                                     const std::vector<std::uint8_t>* mask) {
  const Index Hq = q.dims[0], L = q.dims[1], d = q.dims[2], Hkv = k.dims[0], dv = v.dims[2];
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));
  const auto at = [](const Tensor& t, Index h, Index i, Index c) {
    return static_cast<double>(t.data[static_cast<std::size_t>((h * t.dims[1] + i) * t.dims[2] + c)]);
  };
  std::vector<double> out(static_cast<std::size_t>(Hq * L * dv), 0.0);
  for (Index h = 0; h < Hq; ++h) {
    const Index kv = h / (Hq / Hkv);
    for (Index i = 0; i < L; ++i) {
      std::vector<Index> seen;  // the keys query i attends to, newest first
      for (Index j = i; j >= 0 && (window == 0 || static_cast<Index>(seen.size()) < window); --j)
        if (!mask || (*mask)[static_cast<std::size_t>(kv * L + j)]) seen.push_back(j);
      if (seen.empty()) continue;
      std::vector<double> s;
      double top = -1e300, total = 0.0;
      for (const Index j : seen) {
        double dot = 0.0;
        for (Index f = 0; f < d; ++f) dot += at(q, h, i, f) * at(k, kv, j, f);
        s.push_back(scale * dot);
        top = std::max(top, s.back());
      }
      for (double& x : s) total += (x = std::exp(x - top));
      for (std::size_t t = 0; t < seen.size(); ++t)
        for (Index c = 0; c < dv; ++c)
          out[static_cast<std::size_t>((h * L + i) * dv + c)] += s[t] / total * at(v, kv, seen[t], c);
    }
  }
  return out;
}

double max_rel(const std::vector<float>& got, const std::vector<double>& want) {
  double diff = 0.0, top = 0.0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    if (!std::isfinite(got[i])) return std::numeric_limits<double>::infinity();
    diff = std::max(diff, std::abs(got[i] - want[i]));
    top = std::max(top, std::abs(want[i]));
  }
  return diff / top;
}

favor::CausalState windowed(Index window) {
  favor::CausalStateOptions o;
  o.window = window;
  return favor::CausalState(o);
}

std::vector<Index> ones(Index n) { return std::vector<Index>(static_cast<std::size_t>(n), 1); }

// Every split (one append, one position at a time, uneven pieces, a long prefill then decode
// steps), with and without key masks (including queries that see no key), grouped heads, windows
// of 1 key to more than the length: the float64 banded causal softmax.
TEST(CausalStateWindow, AnySplitMatchesTheFloat64SlidingWindow) {
  std::mt19937 gen(9400);
  struct Case {
    Index L, d, dv;
    std::vector<Index> windows;
    std::vector<std::vector<Index>> splits;
  };
  std::vector<Index> prefill_then_decode{200};
  for (int i = 0; i < 100; ++i) prefill_then_decode.push_back(1);
  const std::vector<Case> cases{
      {45, 8, 5, {1, 3, 8, 17, 45, 60}, kSplits},
      // Windows past a key block (128 keys) and many strips; sliding buffers; a long prefill
      // (the buffers then shrink back at the first decode step).
      {300, 16, 7, {1, 29, 150}, {{300}, ones(300), {100, 37, 163}, prefill_then_decode}},
  };
  for (const Case& t : cases) {
    const Index Hq = 4, Hkv = 2, L = t.L;
    const Tensor q = normal(Hq, L, t.d, gen, 0.8), k = normal(Hkv, L, t.d, gen, 0.8), v = normal(Hkv, L, t.dv, gen, 1.0);
    std::vector<std::uint8_t> mask(static_cast<std::size_t>(Hkv * L), 1);
    for (std::size_t i = 0; i < mask.size(); i += 4) mask[i] = 0;
    mask[1] = mask[2] = 0;  // head 0's first 3 keys: its first 3 queries see none
    for (Index j = L / 2; j < L / 2 + 12; ++j) mask[static_cast<std::size_t>(L + j)] = 0;  // a gap in head 1
    for (const Index window : t.windows) {
      for (const bool masked : {false, true}) {
        const std::vector<std::uint8_t>* m = masked ? &mask : nullptr;
        const std::vector<double> want = window_reference(q, k, v, window, m);
        for (const auto& pieces : t.splits) {
          favor::CausalState state = windowed(window);
          EXPECT_LT(max_rel(run(state, q, k, v, pieces, m), want), 1e-5)
              << "L " << L << " window " << window << " masked " << masked << " pieces " << pieces.size();
        }
      }
    }
  }
}

// A window at least as long as the sequence never drops a key: the unbounded cache's bits.
TEST(CausalStateWindow, WindowAtLeastTheLengthGivesTheUnboundedBits) {
  std::mt19937 gen(9500);
  const Index Hq = 4, Hkv = 2, L = 45, d = 8;
  const Tensor q = normal(Hq, L, d, gen, 0.8), k = normal(Hkv, L, d, gen, 0.8), v = normal(Hkv, L, 5, gen, 1.0);
  std::vector<std::uint8_t> mask(static_cast<std::size_t>(Hkv * L), 1);
  for (std::size_t i = 1; i < mask.size(); i += 3) mask[i] = 0;
  for (const bool masked : {false, true}) {
    const std::vector<std::uint8_t>* m = masked ? &mask : nullptr;
    for (const auto& pieces : kSplits) {
      favor::CausalState unbounded({});
      const std::vector<float> want = run(unbounded, q, k, v, pieces, m);
      for (const Index window : {L, L + 1, Index{1000}}) {
        favor::CausalState state = windowed(window);
        EXPECT_EQ(run(state, q, k, v, pieces, m), want) << "window " << window << " masked " << masked;
      }
    }
  }
}

// Once a windowed cache is full, decode steps (masked ones too) run in the same buffers: the
// bytes do not change, whether it was filled one position at a time or by a long prefill; an
// unbounded cache grows meanwhile.
TEST(CausalStateWindow, DecodeStepsKeepTheBytesOnceFull) {
  std::mt19937 gen(9600);
  const Index Hq = 4, Hkv = 2, d = 8, dv = 6, window = 16;
  const auto step = [&](favor::CausalState& state, Index n, bool masked) {
    const Tensor q = normal(Hq, n, d, gen, 1.0), k = normal(Hkv, n, d, gen, 1.0), v = normal(Hkv, n, dv, gen, 1.0);
    std::vector<float> out(static_cast<std::size_t>(Hq * n * dv));
    std::vector<std::uint8_t> m(static_cast<std::size_t>(Hkv * n), masked ? 0 : 1);
    state.append(q.view(), k.view(), v.view(), {out.data(), {Hq, n, dv}}, {m.data(), {Hkv, n}});
  };
  favor::CausalState one_by_one = windowed(window), prefilled = windowed(window), unbounded({});
  for (int i = 0; i < 2 * window; ++i) step(one_by_one, 1, false), step(unbounded, 1, false);
  step(prefilled, 20 * window, false);
  const std::size_t prefill_bytes = prefilled.state_bytes();
  step(prefilled, 1, false);
  const std::size_t full = one_by_one.state_bytes(), unbounded_before = unbounded.state_bytes();
  EXPECT_LT(prefilled.state_bytes(), prefill_bytes / 4);  // the prefill's room given back
  EXPECT_EQ(prefilled.state_bytes(), full);
  // The window's keys and values, and at most 3 strips (of up to 16 positions) more per head.
  EXPECT_LE(full, 4u * Hkv * (window + 48) * (d + dv));
  for (int i = 0; i < 50; ++i) {
    const bool masked = i % 7 == 3;
    step(one_by_one, 1, masked), step(prefilled, 1, masked), step(unbounded, 1, masked);
    ASSERT_EQ(one_by_one.state_bytes(), full) << "step " << i;
    ASSERT_EQ(prefilled.state_bytes(), full) << "step " << i;
  }
  EXPECT_GT(unbounded.state_bytes(), unbounded_before);
}

TEST(CausalStateWindow, WindowIsNotForCodebooksAndNotNegative) {
  favor::FeatureMapOptions fo;
  fo.dim = 4, fo.features = 8;
  const favor::FeatureMap map(fo);
  const MatF book = MatF::Ones(3, 4);
  favor::CausalStateOptions o = favor_state(map);
  o.window = 4;
  o.method = favor::StateMethod::codebook;
  o.codebook = {book.data(), {3, 4}};
  EXPECT_EQ(error_of(o), "TypeError window: not an option of method 'codebook' (a sliding window is for methods 'exact' and 'favor')");
  o.window = 0;
  EXPECT_EQ(error_of(o), "no error");
  favor::CausalStateOptions exact;
  exact.window = -1;
  EXPECT_EQ(error_of(exact), "RangeError window: expected an integer >= 1 (or 0 for no window), got -1");
  exact.window = 1;
  EXPECT_EQ(error_of(exact), "no error");
}

// An append that fails after the cache made room and wrote its keys (its scores overflow float32)
// leaves the state as it was: later appends give the bits of a state that never saw it, which
// match the float64 reference. The first append failing too.
TEST(CausalStateWindow, FailingAppendLeavesTheStateUnchanged) {
  std::mt19937 gen(9700);
  const Index Hq = 2, Hkv = 1, L = 60, d = 4, window = 5;
  const Tensor q = normal(Hq, L, d, gen, 1.0), k = normal(Hkv, L, d, gen, 1.0), v = normal(Hkv, L, d, gen, 1.0);
  const std::vector<Index> pieces{12, 1, 1, 30, 16};
  const std::vector<float> want = [&] {
    favor::CausalState fresh = windowed(window);
    return run(fresh, q, k, v, pieces);
  }();
  EXPECT_LT(max_rel(want, window_reference(q, k, v, window, nullptr)), 1e-5);
  const auto fail = [&](favor::CausalState& state, Index n) {
    // q.k of the new keys overflows to +inf: every new query's row is NaN
    Tensor bq = normal(Hq, n, d, gen, 1.0), bk = normal(Hkv, n, d, gen, 1.0);
    for (float& x : bq.data) x = 1e30f * (1.0f + std::abs(x));
    for (float& x : bk.data) x = 1e30f * (1.0f + std::abs(x));
    const Tensor bv = normal(Hkv, n, d, gen, 1.0);
    std::vector<float> out(static_cast<std::size_t>(Hq * n * d));
    const Index length = state.length();
    EXPECT_THROW(state.append(bq.view(), bk.view(), bv.view(), {out.data(), {Hq, n, d}}), favor::Error) << "n " << n;
    EXPECT_EQ(state.length(), length);
  };
  favor::CausalState state = windowed(window);
  fail(state, 3);  // the first append
  EXPECT_EQ(run(state, q, k, v, pieces, nullptr, [&] { fail(state, 1), fail(state, 40); }), want);  // a decode step and an append that grows the buffers
}

}  // namespace

// A FAVOR+ state holds the same bytes after every append: a prefill, decode steps (each leaving
// its key pending), a longer append again, and a failed append (rolled back, settled).
TEST(CausalState, FavorStateBytesAreTheSameAfterEveryAppend) {
  std::mt19937 gen(9700);
  const Index H = 2, d = 8, dv = 6;
  favor::FeatureMapOptions fo;
  fo.dim = d, fo.features = 16;
  const favor::FeatureMap map(fo);
  favor::CausalState state(favor_state(map));
  const auto step = [&](Index n) {
    const Tensor q = normal(H, n, d, gen, 1.0), k = normal(H, n, d, gen, 1.0), v = normal(H, n, dv, gen, 1.0);
    std::vector<float> out(static_cast<std::size_t>(H * n * dv));
    state.append(q.view(), k.view(), v.view(), {out.data(), {H, n, dv}});
  };
  step(40);
  const std::size_t bytes = state.state_bytes();
  for (int i = 0; i < 30; ++i) {
    step(i % 10 == 9 ? 37 : 1);
    ASSERT_EQ(state.state_bytes(), bytes) << "append " << i;
  }
  const Tensor q = normal(H, 1, d, gen, 1.0), k = normal(H, 1, d, gen, 1.0), bad = normal(H, 1, dv + 1, gen, 1.0);
  std::vector<float> out(static_cast<std::size_t>(H * (dv + 1)));
  EXPECT_THROW(state.append(q.view(), k.view(), bad.view(), {out.data(), {H, 1, dv + 1}}), favor::Error);
  EXPECT_EQ(state.state_bytes(), bytes);
  step(1);
  EXPECT_EQ(state.state_bytes(), bytes);
}

namespace {

// A FAVOR+ state over a window of `window` positions (blocks of window / 4).
favor::CausalState favor_windowed(const favor::FeatureMap& map, Index window) {
  favor::CausalStateOptions o = favor_state(map);
  o.window = window;
  return favor::CausalState(o);
}

// The float64 reference of windowed FAVOR+ ([Hq, L, dv]): query i of head h sees, of key/value
// head kv = h / (Hq / Hkv), the unmasked positions from the start of the block 3 blocks before
// its own (blocks of window / 4 from position 0) up to itself; weights phi(q~_i).phi(k~_j) from
// the map's W (positive features: every weight > 0).
std::vector<double> favor_window_reference(const favor::FeatureMap& map, const Tensor& q, const Tensor& k,
                                           const Tensor& v, Index window, const std::vector<std::uint8_t>* mask) {
  const Index Hq = q.dims[0], L = q.dims[1], d = q.dims[2], Hkv = k.dims[0], dv = v.dims[2], block = window / 4;
  const double root = std::pow(static_cast<double>(d), -0.25);  // x~ = x d^(-1/4)
  const MatD w = map.projection().cast<double>();
  const auto head = [&](const Tensor& t, Index h) {
    MatD x(t.dims[1], t.dims[2]);
    for (Index i = 0; i < x.rows(); ++i)
      for (Index c = 0; c < x.cols(); ++c) x(i, c) = t.data[static_cast<std::size_t>((h * t.dims[1] + i) * t.dims[2] + c)];
    return x;
  };
  std::vector<double> out(static_cast<std::size_t>(Hq * L * dv), 0.0);
  for (Index h = 0; h < Hq; ++h) {
    const Index kv = h / (Hq / Hkv);
    const MatD qf = ref::phi(favor::Kernel::positive, w, head(q, h) * root);
    const MatD kf = ref::phi(favor::Kernel::positive, w, head(k, kv) * root), vs = head(v, kv);
    for (Index i = 0; i < L; ++i) {
      Eigen::VectorXd num = Eigen::VectorXd::Zero(dv);
      double den = 0.0;
      for (Index j = std::max<Index>(0, (i / block - 3) * block); j <= i; ++j) {
        if (mask && !(*mask)[static_cast<std::size_t>(kv * L + j)]) continue;
        const double weight = qf.row(i).dot(kf.row(j));
        num += weight * vs.row(j).transpose(), den += weight;
      }
      for (Index c = 0; c < dv; ++c) out[static_cast<std::size_t>((h * L + i) * dv + c)] = den > 0.0 ? num(c) / den : 0.0;
    }
  }
  return out;
}

favor::FeatureMap positive_map(Index d, Index m, std::uint64_t seed) {
  favor::FeatureMapOptions fo;
  fo.dim = d, fo.features = m, fo.seed = seed;
  return favor::FeatureMap(fo);
}

// Every split (one append, one position at a time, pieces across block starts, a prefill then
// decode steps), with and without key masks, grouped heads, windows of 1-position blocks to more
// than the length, a long sequence of short blocks: the float64 windowed sums.
TEST(CausalStateFavorWindow, AnySplitMatchesTheFloat64Window) {
  std::mt19937 gen(9800);
  std::vector<Index> prefill_then_decode{130};
  for (int i = 0; i < 70; ++i) prefill_then_decode.push_back(1);
  struct Case {
    Index L, d, dv;
    std::vector<Index> windows;
    std::vector<std::vector<Index>> splits;
  };
  const std::vector<Case> cases{
      {45, 8, 5, {4, 8, 12, 20, 44, 200}, kSplits},
      {200, 16, 7, {64}, {{200}, ones(200), {100, 37, 63}, prefill_then_decode}},
      // 150 block starts, each making the window's state anew from the blocks' sums: the error
      // stays that of 3 blocks however long the sequence.
      {600, 8, 5, {16}, {{600}, ones(600), {290, 1, 1, 1, 307}}},
  };
  for (const Case& t : cases) {
    const Index Hq = 4, Hkv = 2, L = t.L;
    const favor::FeatureMap map = positive_map(t.d, 32, 5);
    const Tensor q = normal(Hq, L, t.d, gen, 0.8), k = normal(Hkv, L, t.d, gen, 0.8), v = normal(Hkv, L, t.dv, gen, 1.0);
    std::vector<std::uint8_t> mask(static_cast<std::size_t>(Hkv * L), 1);
    for (std::size_t i = 1; i < mask.size(); i += 4) mask[i] = 0;
    for (const Index window : t.windows) {
      for (const bool masked : {false, true}) {
        const std::vector<std::uint8_t>* m = masked ? &mask : nullptr;
        const std::vector<double> want = favor_window_reference(map, q, k, v, window, m);
        for (const auto& pieces : t.splits) {
          favor::CausalState state = favor_windowed(map, window);
          EXPECT_LT(max_rel(run(state, q, k, v, pieces, m), want), 2e-5)
              << "L " << L << " window " << window << " masked " << masked << " pieces " << pieces.size();
        }
      }
    }
  }
}

// While every position is in the first block, the windowed state is one unwindowed state fed the
// same appends: the same bits.
TEST(CausalStateFavorWindow, OneBlockGivesTheUnwindowedBits) {
  std::mt19937 gen(9810);
  const Index Hq = 4, Hkv = 2, L = 45, d = 8;
  const favor::FeatureMap map = positive_map(d, 16, 7);
  const Tensor q = normal(Hq, L, d, gen, 0.8), k = normal(Hkv, L, d, gen, 0.8), v = normal(Hkv, L, 5, gen, 1.0);
  for (const auto& pieces : kSplits) {
    favor::CausalState whole(favor_state(map)), state = favor_windowed(map, 4 * L);
    EXPECT_EQ(run(state, q, k, v, pieces), run(whole, q, k, v, pieces));
  }
}

// The memory: one unwindowed state's per block started (the window's, then one per block after
// the first), 4 once 3 blocks have passed, the same after every decode step from then on.
TEST(CausalStateFavorWindow, BytesAreFourStatesOnceThreeBlocksHavePassed) {
  std::mt19937 gen(9820);
  const Index H = 2, d = 8, dv = 6, window = 32;
  const favor::FeatureMap map = positive_map(d, 16, 9);
  favor::CausalState state = favor_windowed(map, window), whole(favor_state(map));
  const std::size_t map_bytes = state.state_bytes();
  const auto step = [&](Index n) {
    const Tensor q = normal(H, n, d, gen, 1.0), k = normal(H, n, d, gen, 1.0), v = normal(H, n, dv, gen, 1.0);
    std::vector<float> out(static_cast<std::size_t>(H * n * dv));
    state.append(q.view(), k.view(), v.view(), {out.data(), {H, n, dv}});
    whole.append(q.view(), k.view(), v.view(), {out.data(), {H, n, dv}});
    return whole.state_bytes() - map_bytes;
  };
  for (Index p = 0; p < 3 * window; ++p) {
    const std::size_t one = step(1);
    const std::size_t started = static_cast<std::size_t>(std::min<Index>(4, p / (window / 4) + 1));
    ASSERT_EQ(state.state_bytes() - map_bytes, started * one) << "position " << p;
  }
  const std::size_t steady = state.state_bytes();
  // Longer appends in between (each state's last piece of one may leave more keys pending).
  for (const Index n : {Index{5}, Index{40}, Index{3}, Index{70}}) {
    step(n);
    const std::size_t one = step(1);
    ASSERT_EQ(state.state_bytes() - map_bytes, 4 * one) << "the step after an append of " << n;
  }
  EXPECT_EQ(state.state_bytes(), steady);
}

// A window is a multiple of 4 (its blocks are window / 4 positions).
TEST(CausalStateFavorWindow, WindowIsAMultipleOfFour) {
  const favor::FeatureMap map = positive_map(4, 8, 1);
  favor::CausalStateOptions o = favor_state(map);
  for (const Index w : {Index{4}, Index{8}, Index{1024}}) {
    o.window = w;
    EXPECT_EQ(error_of(o), "no error") << w;
  }
  for (const Index w : {Index{1}, Index{6}, Index{1023}}) {
    o.window = w;
    EXPECT_EQ(error_of(o), "RangeError window: FAVOR+'s window is in blocks of window / 4 positions: expected a multiple of 4, got " +
                               std::to_string(w));
  }
  o.window = -4;
  EXPECT_EQ(error_of(o), "RangeError window: expected an integer >= 1 (or 0 for no window), got -4");
}

// An append that fails inside its run (values so large that the weighted sums overflow) leaves
// the state as it was, in one block or across block starts, on the first append too: later
// appends give the bits of a state that never saw it.
TEST(CausalStateFavorWindow, FailingAppendLeavesTheStateUnchanged) {
  std::mt19937 gen(9830);
  const Index Hq = 2, Hkv = 1, L = 60, d = 4, window = 8;
  const favor::FeatureMap map = positive_map(d, 16, 11);
  const Tensor q = normal(Hq, L, d, gen, 1.0), k = normal(Hkv, L, d, gen, 1.0), v = normal(Hkv, L, d, gen, 1.0);
  const std::vector<Index> pieces{5, 1, 1, 30, 1, 16, 6};
  const std::vector<float> want = [&] {
    favor::CausalState fresh = favor_windowed(map, window);
    return run(fresh, q, k, v, pieces);
  }();
  const auto fail = [&](favor::CausalState& state, Index n) {
    const Tensor bq = normal(Hq, n, d, gen, 1.0), bk = normal(Hkv, n, d, gen, 1.0);
    Tensor bv = normal(Hkv, n, d, gen, 1.0);
    for (float& x : bv.data) x = 3e38f;
    std::vector<float> out(static_cast<std::size_t>(Hq * n * d));
    const Index length = state.length();
    EXPECT_THROW(state.append(bq.view(), bk.view(), bv.view(), {out.data(), {Hq, n, d}}), favor::Error) << "n " << n;
    EXPECT_EQ(state.length(), length);
  };
  favor::CausalState state = favor_windowed(map, window);
  fail(state, 3);  // the first append
  EXPECT_EQ(run(state, q, k, v, pieces, nullptr, [&] { fail(state, 1), fail(state, 11); }), want);  // in one block or at its start, and across block starts
}

}  // namespace
