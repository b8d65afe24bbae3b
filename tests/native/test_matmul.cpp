// matmul (the dense layers around attention) and PackedMatrix (b checked and packed once): a
// float64 product, and the packed product equal to matmul with b itself bit for bit, for b [k, m]
// and b [m, k] (transpose_b), with and without bias, over shapes past every tile and strip edge.
// Bad b is rejected when packing; a packed b of the wrong k when multiplying.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include <favor/error.hpp>
#include <favor/matmul.hpp>

namespace {

using favor::Index;

std::vector<float> random_floats(std::size_t n, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(n);
  for (float& f : x) f = normal(rng);
  return x;
}

TEST(Matmul, PackedEqualsUnpackedBitForBitAndTheFloat64Product) {
  for (const bool transpose : {false, true})
    for (const Index rows : {1, 5, 64, 131})
      for (const Index k : {1, 7, 64})
        for (const Index m : {1, 9, 33}) {
          const auto a = random_floats(static_cast<std::size_t>(rows * k), 1);
          const auto b = random_floats(static_cast<std::size_t>(k * m), 2);
          const auto bias = random_floats(static_cast<std::size_t>(m), 3);
          const std::vector<Index> a_dims{rows, k}, b_dims = transpose ? std::vector<Index>{m, k} : std::vector<Index>{k, m};
          const favor::ConstTensorView av{a.data(), a_dims}, bv{b.data(), b_dims}, biasv{bias.data(), {m}};
          favor::MatmulOptions o;
          o.transpose_b = transpose;
          const favor::PackedMatrix packed(bv, o);
          for (const favor::ConstTensorView* with_bias : {static_cast<const favor::ConstTensorView*>(nullptr), &biasv}) {
            std::vector<float> plain(static_cast<std::size_t>(rows * m)), fast(plain.size());
            favor::matmul(av, bv, with_bias, favor::TensorView{plain.data(), {rows, m}}, o);
            favor::matmul(av, packed, with_bias, favor::TensorView{fast.data(), {rows, m}});
            ASSERT_EQ(0, std::memcmp(plain.data(), fast.data(), 4 * plain.size()))
                << "rows " << rows << " k " << k << " m " << m << " transpose " << transpose;
            for (Index i = 0; i < rows; ++i)
              for (Index j = 0; j < m; ++j) {
                double sum = with_bias ? bias[j] : 0.0;
                for (Index t = 0; t < k; ++t) sum += double(a[i * k + t]) * double(transpose ? b[j * k + t] : b[t * m + j]);
                // k float32 roundings of terms of size ~sqrt(k): relative 1e-6 of the sum of |terms| bounds it.
                double scale = 1.0;
                for (Index t = 0; t < k; ++t) scale += std::abs(double(a[i * k + t]) * double(transpose ? b[j * k + t] : b[t * m + j]));
                ASSERT_NEAR(plain[i * m + j], sum, 1e-6 * scale);
              }
          }
          EXPECT_GE(packed.bytes(), 4u * static_cast<std::size_t>(k * m));
          EXPECT_EQ(packed.dims(), b_dims);
        }
}

TEST(Matmul, PackingRejectsBadMatricesAndTheProductRejectsAWrongK) {
  const std::vector<float> b(12, 0.5f);
  std::vector<float> nan = b;
  nan[5] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_THROW(favor::PackedMatrix(favor::ConstTensorView{nan.data(), {3, 4}}), favor::Error);
  EXPECT_THROW(favor::PackedMatrix(favor::ConstTensorView{b.data(), {1, 3, 4}}), favor::Error);
  const favor::PackedMatrix packed(favor::ConstTensorView{b.data(), {3, 4}});
  const std::vector<float> a(8, 1.0f);
  std::vector<float> out(8);
  EXPECT_THROW(favor::matmul(favor::ConstTensorView{a.data(), {2, 4}}, packed, nullptr, favor::TensorView{out.data(), {2, 4}}),
               favor::Error);  // k = 4 against b's 3
  std::vector<float> out3(8);
  favor::matmul(favor::ConstTensorView{a.data(), {2, 3}}, packed, nullptr, favor::TensorView{out3.data(), {2, 4}});
  for (float x : out3) EXPECT_EQ(x, 1.5f);  // 3 x 0.5
}

}  // namespace
