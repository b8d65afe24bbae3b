// Bad input throws favor::Error naming the offending argument (error.hpp): bindings rely on the
// name to build a useful JS TypeError/RangeError.
#include <gtest/gtest.h>

#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <favor/tensor/shape.hpp>

#include "reference.hpp"

namespace {

using favor::Kernel;
using favor::Sampling;
using ref::Index;
using ref::MatF;

// Runs f, expects a favor::Error whose argument() is `argument` and whose message starts with
// "<argument>: ".
void expect_error(const std::function<void()>& f, const std::string& argument,
                  const char* what) {
  try {
    f();
    ADD_FAILURE() << what << ": no exception thrown";
  } catch (const favor::Error& e) {
    EXPECT_EQ(e.argument(), argument) << what << ": message '" << e.what() << "'";
    EXPECT_EQ(std::string(e.what()).rfind(argument + ": ", 0), 0u) << what << ": " << e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << what << ": threw a non-favor::Error: " << e.what();
  }
}

struct Inputs {
  MatF q, k, v, w;
};

Inputs inputs(Index L, Index S, Index d, Index dk = -1) {
  std::mt19937 gen(5000);
  return {ref::normal_matrix(L, d, gen), ref::normal_matrix(S, dk < 0 ? d : dk, gen),
          ref::normal_matrix(S, 4, gen), ref::normal_matrix(12, d, gen)};
}

TEST(Errors, MismatchedDimBetweenQAndK) {
  const Inputs in = inputs(10, 10, 8, 9);
  expect_error([&] { favor::exact_attention(in.q, in.k, in.v); }, "k", "exact_attention");
  expect_error([&] { favor::attention_matrix(in.q, in.k); }, "k", "attention_matrix");
  const favor::FeatureMap map(Kernel::positive, in.w);
  expect_error([&] { favor::favor_attention(map, in.q, in.k, in.v); }, "k", "favor_attention");
  expect_error([&] { favor::favor_attention_matrix(map, in.q, in.k); }, "k",
               "favor_attention_matrix");
  // Tensor API.
  std::vector<float> q(2 * 10 * 8, 0.1f), k(2 * 10 * 9, 0.1f), v(2 * 10 * 4, 0.1f),
      out(2 * 10 * 4);
  expect_error(
      [&] {
        favor::exact_attention({q.data(), {2, 10, 8}}, {k.data(), {2, 10, 9}},
                               {v.data(), {2, 10, 4}}, {out.data(), {2, 10, 4}});
      },
      "k", "tensor exact_attention");
}

TEST(Errors, CausalNeedsNoMoreQueriesThanKeys) {
  const Inputs in = inputs(12, 10, 8);
  favor::FavorOptions opt;
  opt.causal = true;
  expect_error([&] { favor::exact_attention(in.q, in.k, in.v, opt); }, "causal",
               "exact_attention");
  expect_error([&] { favor::attention_matrix(in.q, in.k, opt); }, "causal", "attention_matrix");
  const favor::FeatureMap map(Kernel::positive, in.w);
  expect_error([&] { favor::favor_attention(map, in.q, in.k, in.v, opt); }, "causal",
               "favor_attention");
  expect_error([&] { favor::favor_attention_matrix(map, in.q, in.k, opt); }, "causal",
               "favor_attention_matrix");
  // Non-causal with L > S is fine, and causal with L < S (bottom-right alignment).
  opt.causal = false;
  EXPECT_NO_THROW(favor::exact_attention(in.q, in.k, in.v, opt));
  opt.causal = true;
  EXPECT_NO_THROW(favor::exact_attention(in.q.topRows(6), in.k, in.v, opt));
}

TEST(Errors, NaNInQViaTensorApi) {
  const Index H = 2, L = 6, d = 4;
  std::vector<float> q(H * L * d, 0.25f), k(H * L * d, 0.5f), v(H * L * d, 1.0f),
      out(H * L * d), mat(H * L * L);
  q[H * L * d - 3] = std::numeric_limits<float>::quiet_NaN();  // in the last head
  const std::vector<Index> dims{H, L, d};
  try {
    favor::exact_attention({q.data(), dims}, {k.data(), dims}, {v.data(), dims},
                           {out.data(), dims});
    ADD_FAILURE() << "no exception";
  } catch (const favor::Error& e) {
    EXPECT_EQ(e.argument(), "q");
    EXPECT_EQ(e.kind(), favor::Error::Kind::range);  // tensor.hpp: check_finite throws range
  }
  std::mt19937 gen(5002);
  const favor::FeatureMap map(Kernel::positive, ref::normal_matrix(8, d, gen));
  expect_error([&] { favor::attention_matrix({q.data(), dims}, {k.data(), dims}, {mat.data(), {H, L, L}}); },
               "q", "attention_matrix");
  expect_error([&] { favor::favor_attention(map, {q.data(), dims}, {k.data(), dims}, {v.data(), dims}, {out.data(), dims}); },
               "q", "favor_attention");
  expect_error([&] { favor::favor_attention_matrix(map, {q.data(), dims}, {k.data(), dims}, {mat.data(), {H, L, L}}); },
               "q", "favor_attention_matrix");
  // Infinity is rejected as well, and in k it names k.
  q[H * L * d - 3] = 0.0f;
  k[5] = std::numeric_limits<float>::infinity();
  expect_error([&] { favor::exact_attention({q.data(), dims}, {k.data(), dims}, {v.data(), dims}, {out.data(), dims}); },
               "k", "exact_attention inf in k");
  // check_finite itself.
  const float bad[3] = {1.0f, std::numeric_limits<float>::quiet_NaN(), 2.0f};
  expect_error([&] { favor::check_finite(bad, 3, "values"); }, "values", "check_finite");
  EXPECT_NO_THROW(favor::check_finite(bad, 1, "values"));
}

// favor_attention checks the values of q, k and v after the engine has run (tensor.cpp): a bad
// value must still give exactly the error of a check beforehand -- the first bad input in the
// order q, k, v, at its first bad index -- for every kernel, bidirectional and causal, grouped
// heads, masked keys (a masked key's v row too: its zero features times NaN is NaN), and values
// at the first, a middle and the last index.
TEST(Errors, FavorNamesTheFirstNonFiniteInputAsACheckBeforehandWould) {
  const Index Hq = 4, Hk = 2, L = 9, S = 11, d = 8, dv = 3;
  std::mt19937 gen(5003);
  const MatF w = ref::normal_matrix(12, d, gen);
  const std::vector<float> q0 = ref::normal_buffer(Hq * L * d, gen, 0.5), k0 = ref::normal_buffer(Hk * S * d, gen, 0.5),
                           v0 = ref::normal_buffer(Hk * S * dv, gen);
  std::vector<std::uint8_t> mask(Hk * S, 1);
  mask[3] = mask[S + S - 1] = 0;
  const auto message_of = [](const std::vector<float>& x, const char* name) {
    try {
      favor::check_finite(x.data(), static_cast<Index>(x.size()), name);
    } catch (const favor::Error& e) {
      return std::string(e.what());
    }
    return std::string("(finite)");
  };
  const float bad_values[] = {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                              -std::numeric_limits<float>::infinity()};
  for (Kernel kernel : {Kernel::positive, Kernel::hyperbolic, Kernel::relu, Kernel::oprf, Kernel::trigonometric,
                        Kernel::sderf, Kernel::aderf}) {
    const favor::FeatureMap map(kernel, w);  // (OPRF, FAVOR#: parameters from each call's q and k)
    for (bool causal : {false, true})
      for (bool masked : {false, true})
        for (int which = 0; which < 3; ++which)
          for (float bad : bad_values) {
            std::vector<float> q = q0, k = k0, v = v0, out(Hq * L * dv);
            std::vector<float>& x = which == 0 ? q : which == 1 ? k : v;
            const std::vector<float>& original = which == 0 ? q0 : which == 1 ? k0 : v0;
            const char* name = which == 0 ? "q" : which == 1 ? "k" : "v";
            const Index row_length = which == 0 ? d : which == 1 ? d : dv;
            // first, middle, last, and (k, v) the first entry of a masked key's row
            std::vector<Index> at = {0, static_cast<Index>(x.size()) / 2, static_cast<Index>(x.size()) - 1};
            if (which > 0) at.push_back(3 * row_length);
            for (Index i : at) {
              x[static_cast<std::size_t>(i)] = bad;
              if (which == 2) q[5] = (i % 2) ? bad : q[5];  // now and then q too: q is named first
              const std::string want = q[5] != q0[5] ? message_of(q, "q") : message_of(x, name);
              favor::FavorOptions o;
              o.causal = causal;
              try {
                favor::favor_attention(map, {q.data(), {Hq, L, d}}, {k.data(), {Hk, S, d}}, {v.data(), {Hk, S, dv}},
                                       {out.data(), {Hq, L, dv}}, o,
                                       masked ? favor::ConstMaskView{mask.data(), {Hk, S}} : favor::ConstMaskView{});
                ADD_FAILURE() << "no error for " << name << "[" << i << "] = " << bad;
              } catch (const favor::Error& e) {
                EXPECT_EQ(std::string(e.what()), want)
                    << favor::to_string(kernel) << " causal " << causal << " masked " << masked;
              }
              x[static_cast<std::size_t>(i)] = original[static_cast<std::size_t>(i)];
              q[5] = q0[5];
            }
          }
  }
}

TEST(Errors, ScaleMustBePositiveAndFinite) {
  const Inputs in = inputs(10, 10, 8);
  const favor::FeatureMap map(Kernel::positive, in.w);
  for (double s : {0.0, -1.0, std::numeric_limits<double>::quiet_NaN(),
                   std::numeric_limits<double>::infinity()}) {
    favor::FavorOptions opt;
    opt.scale = s;
    expect_error([&] { favor::exact_attention(in.q, in.k, in.v, opt); }, "scale",
                 "exact_attention");
    expect_error([&] { favor::attention_matrix(in.q, in.k, opt); }, "scale", "attention_matrix");
    expect_error([&] { favor::favor_attention(map, in.q, in.k, in.v, opt); }, "scale",
                 "favor_attention");
    expect_error([&] { favor::favor_attention_matrix(map, in.q, in.k, opt); }, "scale",
                 "favor_attention_matrix");
    expect_error([&] { favor::resolve_scale(opt, 8); }, "scale", "resolve_scale");
  }
}

TEST(Errors, UnknownKernelAndSamplingStrings) {
  for (const char* bad : {"", "Positive", "softmax", "positive ", "orf"})
    expect_error([&] { favor::parse_kernel(bad); }, "kernel", bad);
  expect_error([&] { favor::parse_kernel("gauss", "options.kernel"); }, "options.kernel",
               "custom argument");
  for (const char* bad : {"", "IID", "orthogonal_fixed", "ortho", "gaussian", "Simplex", "sorf", "structured "})
    expect_error([&] { favor::parse_sampling(bad); }, "sampling", bad);
  expect_error([&] { favor::parse_sampling("x", "mode"); }, "mode", "custom argument");
  // Every documented name parses.
  EXPECT_EQ(favor::parse_kernel("positive"), Kernel::positive);
  EXPECT_EQ(favor::parse_kernel("hyperbolic"), Kernel::hyperbolic);
  EXPECT_EQ(favor::parse_kernel("trigonometric"), Kernel::trigonometric);
  EXPECT_EQ(favor::parse_kernel("relu"), Kernel::relu);
  EXPECT_EQ(favor::parse_kernel("oprf"), Kernel::oprf);
  EXPECT_EQ(favor::parse_kernel("sderf"), Kernel::sderf);
  EXPECT_EQ(favor::parse_kernel("aderf"), Kernel::aderf);
  EXPECT_EQ(favor::parse_sampling("iid"), Sampling::iid);
  EXPECT_EQ(favor::parse_sampling("orthogonal"), Sampling::orthogonal);
  EXPECT_EQ(favor::parse_sampling("orthogonal-fixed"), Sampling::orthogonal_fixed);
  EXPECT_EQ(favor::parse_sampling("simplex"), Sampling::simplex);
  EXPECT_EQ(favor::parse_sampling("structured"), Sampling::structured);
}

TEST(Errors, FeatureMapOptionsNonPositiveSizes) {
  for (Index bad : {0, -3}) {
    favor::FeatureMapOptions o;
    o.dim = 8;
    o.features = bad;
    expect_error([&] { favor::FeatureMap m(o); }, "features", "features <= 0");
    o.dim = bad;
    o.features = 8;
    expect_error([&] { favor::FeatureMap m(o); }, "dim", "dim <= 0");
    expect_error([&] { favor::sample_projection(8, bad, Sampling::iid, 0); }, "dim",
                 "sample_projection dim");
    expect_error([&] { favor::sample_projection(bad, 8, Sampling::orthogonal, 0); }, "features",
                 "sample_projection features");
  }
}

// epsilon (added to relu features) must be finite and >= 0, from either constructor: the JS API
// checks it too, so only these rows reach the core's own check.
TEST(Errors, FeatureMapEpsilonNegativeOrNotFinite) {
  std::mt19937 gen(5001);
  const MatF w = ref::normal_matrix(8, 4, gen);
  for (double bad : {-1e-3, -std::numeric_limits<double>::infinity(), std::numeric_limits<double>::infinity(),
                     std::numeric_limits<double>::quiet_NaN()}) {
    favor::FeatureMapOptions o;
    o.dim = 4, o.features = 8, o.kernel = Kernel::relu, o.epsilon = bad;
    expect_error([&] { favor::FeatureMap m(o); }, "epsilon", "options epsilon");
    expect_error([&] { favor::FeatureMap m(Kernel::relu, w, bad); }, "epsilon", "projection epsilon");
  }
  favor::FeatureMapOptions o;
  o.dim = 4, o.features = 8, o.kernel = Kernel::relu, o.epsilon = 0.0;
  EXPECT_EQ(favor::FeatureMap(o).epsilon(), 0.0);
}

TEST(Errors, ProjectionWithZeroRows) {
  expect_error([] { favor::FeatureMap m(Kernel::positive, MatF(0, 8)); }, "projection",
               "zero rows");
  expect_error([] { favor::FeatureMap m(Kernel::oprf, MatF(4, 0)); }, "projection",
               "zero columns");
}

}  // namespace
