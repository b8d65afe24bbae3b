// The vector exp and row reductions against the C library, in double.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include <favor/kernels/vector_math.hpp>

namespace {

// Every exponential in the library is of a value minus a maximum over it: exp_shifted and
// exp_minus take x - shift <= 0 (the domain of vec::exp_nonpositive).
TEST(VectorMath, ExpWithinThreeUlpOverTheNonPositiveRange) {
  std::mt19937 g(1);
  std::uniform_real_distribution<float> u(-87.0f, 0.0f);
  std::vector<float> x(100000);
  for (float& v : x) v = u(g);
  x[0] = 0.0f, x[1] = -87.0f, x[2] = -1e-8f, x[3] = -0.3465736f, x[4] = -0.3465737f;  // |r| = ln2/2
  std::vector<float> y = x;
  favor::vec::exp_shifted(y.data(), static_cast<favor::Index>(y.size()), 0.0f);
  double worst = 0.0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double ref = std::exp(static_cast<double>(x[i]));
    // one float ulp at ref: 2^(exponent - 23)
    const double ulp = std::ldexp(1.0, std::ilogb(ref) - 23);
    worst = std::max(worst, std::abs(y[i] - ref) / ulp);
  }
  // 1.14 ulp measured over the range natively (0.88 with fused multiply-adds; the polynomial's own
  // error is 0.06 ulp, the rest float rounding); a polynomial of one degree less is 1.8 ulp off
  // before any rounding
  EXPECT_LE(worst, 1.5);
}

TEST(VectorMath, ExpEdgesUnderflowInfinityAndNaN) {
  const float inf = std::numeric_limits<float>::infinity();
  float x[8] = {-inf, -1000.0f, -87.5f, -1e30f, 0.0f, -87.0f, std::numeric_limits<float>::quiet_NaN(), -0.0f};
  favor::vec::exp_shifted(x, 8, 0.0f);
  EXPECT_EQ(x[0], 0.0f);
  EXPECT_EQ(x[1], 0.0f);
  EXPECT_EQ(x[2], 0.0f);
  EXPECT_EQ(x[3], 0.0f);
  EXPECT_EQ(x[4], 1.0f);
  EXPECT_GT(x[5], 0.0f);
  EXPECT_TRUE(std::isnan(x[6]));
  EXPECT_EQ(x[7], 1.0f);
}

TEST(VectorMath, ShiftedExpSumAndTailsMatchScalarForEveryLength) {
  std::mt19937 g(2);
  std::normal_distribution<float> n(0.0f, 3.0f);
  for (favor::Index len = 1; len <= 13; ++len) {
    std::vector<float> x(static_cast<std::size_t>(len));
    for (float& v : x) v = n(g);
    const float top = favor::vec::max(x.data(), len);
    EXPECT_EQ(top, *std::max_element(x.begin(), x.end())) << len;
    std::vector<float> y = x;
    const double sum = favor::vec::exp_shifted(y.data(), len, top);
    double ref_sum = 0.0;
    for (favor::Index i = 0; i < len; ++i) {
      // the kernel rounds x - top to float first, then takes exp of that
      const double ref = std::exp(static_cast<double>(x[i] - top));
      EXPECT_NEAR(y[i], ref, 4e-7 * ref) << len << " " << i;
      ref_sum += ref;
    }
    EXPECT_NEAR(sum, ref_sum, 1e-6 * ref_sum) << len;
  }
}

// The fused row passes of the feature shifts against plain loops, for every length 0..13 (so
// every tail length), with masked entries and exact comparisons: adds, maxima and the blend are
// exact operations, and exp_minus must equal exp_shifted of the same difference bit for bit.
TEST(VectorMath, FusedRowPassesMatchPlainLoopsExactly) {
  std::mt19937 g(5);
  std::normal_distribution<float> n(0.0f, 3.0f);
  const float lowest = std::numeric_limits<float>::lowest();
  for (favor::Index len = 0; len <= 21; ++len) {  // past two rounds of add_masked_max's two maxima
    SCOPED_TRACE(len);
    std::vector<float> x(len), add(len), value(len), top(len);
    for (favor::Index i = 0; i < len; ++i) {
      x[i] = n(g), add[i] = n(g), top[i] = n(g);
      value[i] = i % 3 == 1 ? 0.0f : 1.0f + n(g) * n(g);
    }
    // add_masked_max, with and without values
    for (bool masked : {false, true}) {
      std::vector<float> y = x;
      const float got = favor::vec::add_masked_max(y.data(), add.data(), masked ? value.data() : nullptr, len);
      float want = lowest;
      for (favor::Index i = 0; i < len; ++i) {
        const float e = masked && value[i] == 0.0f ? lowest : x[i] + add[i];
        EXPECT_EQ(y[i], e) << i;
        want = std::max(want, e);
      }
      EXPECT_EQ(got, want);
    }
    // add_and_max_into
    std::vector<float> y = x, t = top;
    favor::vec::add_and_max_into(y.data(), 1.25f, t.data(), len);
    for (favor::Index i = 0; i < len; ++i) {
      EXPECT_EQ(y[i], x[i] + 1.25f);
      EXPECT_EQ(t[i], std::max(top[i], x[i] + 1.25f));
    }
    // exp_minus == exp_shifted of the same differences (shifts at or above the values)
    std::vector<float> a = x, b(len), shift(len);
    for (favor::Index i = 0; i < len; ++i) shift[i] = std::max(x[i], add[i]), b[i] = x[i] - shift[i];
    favor::vec::exp_minus(a.data(), shift.data(), len);
    favor::vec::exp_shifted(b.data(), len, 0.0f);
    for (favor::Index i = 0; i < len; ++i) EXPECT_EQ(a[i], b[i]) << i;
  }
}

// all_finite finds one NaN or infinity at any position, including the scalar tail.
TEST(VectorMath, AllFiniteFindsEveryPosition) {
  const float bad[] = {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                       -std::numeric_limits<float>::infinity()};
  for (favor::Index len = 1; len <= 11; ++len) {
    std::vector<float> x(len, 3.0e38f);
    EXPECT_TRUE(favor::vec::all_finite(x.data(), len));
    for (favor::Index at = 0; at < len; ++at)
      for (float b : bad) {
        std::vector<float> y = x;
        y[at] = b;
        EXPECT_FALSE(favor::vec::all_finite(y.data(), len)) << len << " " << at << " " << b;
      }
  }
  EXPECT_TRUE(favor::vec::all_finite(nullptr, 0));
}

// max_abs is the largest magnitude for every length (so the tail goes through its loops too: up
// to two rounds of its four running maxima and more), with the maximum at any position, of either
// sign; 0 for no values and for -0.
TEST(VectorMath, MaxAbsFindsEveryPositionAndSign) {
  for (favor::Index len = 1; len <= 37; ++len)
    for (favor::Index at = 0; at < len; ++at)
      for (float top : {-7.5f, 7.5f, 1e-40f, -3.0e38f}) {
        std::vector<float> x(len);
        for (favor::Index i = 0; i < len; ++i) x[i] = (i % 2 ? -1.0f : 1.0f) * std::fabs(top) * 0.5f;
        x[at] = top;
        EXPECT_EQ(favor::vec::max_abs(x.data(), len), std::fabs(top)) << len << " " << at;
      }
  const float zeros[] = {-0.0f, 0.0f, -0.0f, -0.0f, -0.0f};
  EXPECT_EQ(favor::vec::max_abs(zeros, 5), 0.0f);
  EXPECT_FALSE(std::signbit(favor::vec::max_abs(zeros, 5)));
  EXPECT_EQ(favor::vec::max_abs(nullptr, 0), 0.0f);
}

// axpby equals the plain expression lane by lane (two products and a sum, no FMA), in place too.
// The factors that move a state's sums to a larger shift: exp(from - to) within the vector exp's
// 3 ulp, exactly 1 at equal shifts (also -inf = -inf, an empty state, whose difference is NaN)
// and exactly 0 from -inf; every length, so the tail goes through the same code.
TEST(VectorMath, RescaleFactorsForEveryLengthAndEdge) {
  const float inf = std::numeric_limits<float>::infinity();
  std::mt19937 g(5);
  std::normal_distribution<float> n(0.0f, 10.0f);
  for (favor::Index len = 1; len <= 13; ++len) {
    std::vector<float> from(static_cast<std::size_t>(len)), to(from.size()), out(from.size(), -1.0f);
    for (favor::Index i = 0; i < len; ++i) {
      from[i] = n(g);
      to[i] = from[i] + std::abs(n(g));
      if (i % 5 == 1) to[i] = from[i];             // equal: 1
      if (i % 5 == 2) from[i] = to[i] = -inf;      // both empty: 1, not NaN
      if (i % 5 == 3) from[i] = -inf;              // empty into a finite shift: 0
    }
    favor::vec::rescale_factors(out.data(), from.data(), to.data(), len);
    for (favor::Index i = 0; i < len; ++i) {
      if (from[i] == to[i]) {
        EXPECT_EQ(out[i], 1.0f) << len << " " << i;
      } else if (from[i] == -inf) {
        EXPECT_EQ(out[i], 0.0f) << len << " " << i;
      } else {
        const double ref = std::exp(static_cast<double>(from[i] - to[i]));  // the difference rounds to float first
        const double ulp = ref > 0 ? std::ldexp(1.0, std::ilogb(ref) - 23) : 1e-45;
        EXPECT_LE(std::abs(out[i] - ref), 3 * ulp) << len << " " << i;
      }
    }
  }
}

TEST(VectorMath, AxpbyMatchesPlainLoopExactly) {
  std::mt19937 g(9);
  std::normal_distribution<float> n(0.0f, 2.0f);
  for (favor::Index len = 0; len <= 13; ++len) {
    std::vector<float> x(len), y(len), out(len);
    for (favor::Index i = 0; i < len; ++i) x[i] = n(g), y[i] = n(g);
    const float a = 0.37f, b = -1.9f;
    favor::vec::axpby(out.data(), a, x.data(), b, y.data(), len);
    for (favor::Index i = 0; i < len; ++i) EXPECT_EQ(out[i], a * x[i] + b * y[i]) << len << " " << i;
    std::vector<float> z = x;  // out aliasing x
    favor::vec::axpby(z.data(), a, z.data(), b, y.data(), len);
    EXPECT_EQ(z, out);
    favor::vec::scale_into(out.data(), a, x.data(), len);  // scale_into: the scalar product per lane
    for (favor::Index i = 0; i < len; ++i) EXPECT_EQ(out[i], a * x[i]) << len << " " << i;
  }
}

// add_into, dot and sum against plain loops in the order they document, every tail length.
TEST(VectorMath, AddIntoMultiplyDotAndSumMatchTheirOrder) {
  std::mt19937 g(10);
  std::normal_distribution<float> n(0.0f, 2.0f);
  for (favor::Index len = 0; len <= 13; ++len) {
    SCOPED_TRACE(len);
    std::vector<float> x(len), y(len), acc(len);
    for (favor::Index i = 0; i < len; ++i) x[i] = n(g), y[i] = n(g), acc[i] = n(g);
    std::vector<float> want = acc;
    for (favor::Index i = 0; i < len; ++i) want[i] += x[i];
    favor::vec::add_into(acc.data(), x.data(), len);
    EXPECT_EQ(acc, want);
    for (favor::Index i = 0; i < len; ++i) want[i] = x[i] * y[i];
    favor::vec::multiply(acc.data(), x.data(), y.data(), len);
    EXPECT_EQ(acc, want);
    for (bool with_y : {true, false}) {
      auto term = [&](favor::Index i) { return with_y ? x[i] * y[i] : x[i]; };
      float lane[4] = {0.0f, 0.0f, 0.0f, 0.0f};
      const favor::Index body = len / 4 * 4;
      for (favor::Index i = 0; i < body; ++i) lane[i % 4] += term(i);
      float expected = (lane[0] + lane[1]) + (lane[2] + lane[3]);
      for (favor::Index i = body; i < len; ++i) expected += term(i);
      EXPECT_EQ(with_y ? favor::vec::dot(x.data(), y.data(), len) : favor::vec::sum(x.data(), len), expected);
    }
  }
}

// Rows side by side (dot_rows, squared_norm_rows), four at a time and then one by one: each row's
// sum bit for bit the lane model of dot above, for every row count and length (the vector body
// and its tail), and nothing written past the rows.
TEST(VectorMath, RowSumsFollowTheDotOrderInEveryRow) {
  std::mt19937 g(11);
  std::normal_distribution<float> n(0.0f, 2.0f);
  const float a = 0.7f;
  for (favor::Index rows = 0; rows <= 9; ++rows)
    for (favor::Index len = 0; len <= 13; ++len) {
      SCOPED_TRACE(testing::Message() << rows << " rows, length " << len);
      const favor::Index ld = len + 3;  // rows apart by more than their length
      std::vector<float> x(static_cast<std::size_t>(rows * ld + 1)), y(static_cast<std::size_t>(len));
      for (float& e : x) e = n(g);
      for (float& e : y) e = n(g);
      for (int kind = 0; kind < 3; ++kind) {  // dot with y, sum (y null), squared norm of a x
        const auto term = [&](favor::Index i, favor::Index j) {
          const float xij = x[static_cast<std::size_t>(i * ld + j)];
          return kind == 0 ? xij * y[static_cast<std::size_t>(j)] : kind == 1 ? xij : (a * xij) * (a * xij);
        };
        std::vector<float> got(static_cast<std::size_t>(rows) + 1, -1.0f), want(got);
        for (favor::Index i = 0; i < rows; ++i) {
          float lane[4] = {0.0f, 0.0f, 0.0f, 0.0f};
          const favor::Index body = len / 4 * 4;
          for (favor::Index j = 0; j < body; ++j) lane[j % 4] += term(i, j);
          float expected = (lane[0] + lane[1]) + (lane[2] + lane[3]);
          for (favor::Index j = body; j < len; ++j) expected += term(i, j);
          want[static_cast<std::size_t>(i)] = expected;
        }
        if (kind == 2) favor::vec::squared_norm_rows(x.data(), ld, rows, a, len, got.data());
        else favor::vec::dot_rows(x.data(), ld, rows, kind == 0 ? y.data() : nullptr, len, got.data());
        EXPECT_EQ(got, want) << "kind " << kind;
      }
    }
}

// The shift kernels against the plain loops they replace (Eigen's cwiseMax, (a - b).maxCoeff()
// and ==), every tail length, with -inf (a feature nothing was summed at yet: only ever in the
// state's shift), the lowest float (a masked one) and signed zeros, whose sign max_into keeps as
// cwiseMax does.
TEST(VectorMath, ShiftMaxDifferenceAndEqualMatchPlainLoops) {
  std::mt19937 g(11);
  std::normal_distribution<float> n(0.0f, 3.0f);
  const float special[] = {-std::numeric_limits<float>::infinity(), std::numeric_limits<float>::lowest(), 0.0f, -0.0f};
  for (favor::Index len = 1; len <= 13; ++len) {
    SCOPED_TRACE(len);
    for (int trial = 0; trial < 20; ++trial) {
      std::vector<float> a(len), b(len);
      for (favor::Index i = 0; i < len; ++i) {  // a: a chunk's column max, never -inf
        a[i] = g() % 3 ? n(g) : special[1 + g() % 3];
        b[i] = g() % 3 ? n(g) : special[g() % 4];
      }
      std::vector<float> out(len);
      favor::vec::max_into(out.data(), a.data(), b.data(), len);
      float top = a[0] - b[0];
      bool same = true;
      for (favor::Index i = 0; i < len; ++i) {
        const float want = a[i] < b[i] ? b[i] : a[i];
        EXPECT_EQ(std::signbit(out[i]), std::signbit(want)) << i;
        EXPECT_EQ(out[i], want) << i;
        top = std::max(top, a[i] - b[i]);
        same = same && a[i] == b[i];
      }
      EXPECT_EQ(favor::vec::max_difference(a.data(), b.data(), len), top);
      EXPECT_EQ(favor::vec::equal(a.data(), b.data(), len), same);
      EXPECT_TRUE(favor::vec::equal(a.data(), a.data(), len));
      std::vector<float> c = a;  // equal up to one entry, at every position
      for (favor::Index i = 0; i < len; ++i) {
        c[i] = a[i] == 0.0f ? 1.0f : a[i] * 0.5f;
        EXPECT_FALSE(favor::vec::equal(a.data(), c.data(), len)) << i;
        c[i] = a[i];
      }
    }
  }
}

}  // namespace
