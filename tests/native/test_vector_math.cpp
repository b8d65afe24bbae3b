// The vector exp and row reductions against the C library, in double.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include <favor/vector_math.hpp>

namespace {

TEST(VectorMath, ExpWithinThreeUlpOverTheNormalRange) {
  std::mt19937 g(1);
  std::uniform_real_distribution<float> u(-87.0f, 88.0f);
  std::vector<float> x(100000);
  for (float& v : x) v = u(g);
  x[0] = 0.0f, x[1] = -87.0f, x[2] = 88.0f, x[3] = 1e-8f, x[4] = -1e-8f;
  std::vector<float> y = x;
  favor::vec::exp_shifted(y.data(), static_cast<favor::Index>(y.size()), 0.0f);
  double worst = 0.0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double ref = std::exp(static_cast<double>(x[i]));
    // one float ulp at ref: 2^(exponent - 23)
    const double ulp = std::ldexp(1.0, std::ilogb(ref) - 23);
    worst = std::max(worst, std::abs(y[i] - ref) / ulp);
  }
  EXPECT_LE(worst, 3.0);  // Cephes' polynomial is ~1-2 ulp; 3 bounds it with float rounding
}

TEST(VectorMath, ExpEdgesUnderflowOverflowAndInfinity) {
  const float inf = std::numeric_limits<float>::infinity();
  float x[8] = {-inf, -1000.0f, -87.5f, 89.0f, 1000.0f, inf, 0.0f, -87.0f};
  favor::vec::exp_shifted(x, 8, 0.0f);
  EXPECT_EQ(x[0], 0.0f);
  EXPECT_EQ(x[1], 0.0f);
  EXPECT_EQ(x[2], 0.0f);
  EXPECT_EQ(x[3], inf);
  EXPECT_EQ(x[4], inf);
  EXPECT_EQ(x[5], inf);
  EXPECT_EQ(x[6], 1.0f);
  EXPECT_GT(x[7], 0.0f);
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

}  // namespace
