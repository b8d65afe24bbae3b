// The projection fixture shared with the Node tests (tests/fixtures/projection-golden.json):
// the native build must produce the same float32 bits as the wasm builds.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include <favor/favor.hpp>

#ifndef FAVOR_FIXTURES_DIR
#error "FAVOR_FIXTURES_DIR must point at tests/fixtures"
#endif

namespace {

// Checks every case of a fixture file and returns how many it holds.
int check_fixture(const std::string& name) {
  std::ifstream file(std::string(FAVOR_FIXTURES_DIR) + "/" + name);
  EXPECT_TRUE(file) << "missing fixture " << name;
  std::stringstream buffer;
  buffer << file.rdbuf();
  const std::string json = buffer.str();
  // Each case: "dim": D, "features": M, "sampling": "S", "seed": N, "bits": [ ... ]
  const std::regex case_re(
      R"re("dim":\s*(\d+),\s*"features":\s*(\d+),\s*"sampling":\s*"([a-z-]+)",\s*"seed":\s*(\d+),\s*"bits":\s*\[([^\]]*)\])re");
  int cases = 0;
  for (std::sregex_iterator it(json.begin(), json.end(), case_re), end; it != end; ++it, ++cases) {
    const auto& m = *it;
    const favor::Index dim = std::stol(m[1]), features = std::stol(m[2]);
    const favor::Matrix w = favor::sample_projection(features, dim, favor::parse_sampling(m[3]),
                                                     std::stoull(m[4]));
    const std::string bits = m[5];
    static const std::regex hex_re(R"re("([0-9a-f]{8})")re");
    std::sregex_iterator hex(bits.begin(), bits.end(), hex_re);
    for (favor::Index i = 0; i < w.size(); ++i, ++hex) {
      if (hex == std::sregex_iterator()) {
        ADD_FAILURE() << name << ": fixture too short";
        return cases;
      }
      std::uint32_t got;
      std::memcpy(&got, w.data() + i, 4);
      EXPECT_EQ(got, std::stoul((*hex)[1], nullptr, 16)) << m[3] << " seed " << m[4] << " entry " << i;
    }
  }
  return cases;
}

}  // namespace

TEST(GoldenFixture, NativeProjectionBitsEqualTheSharedFixture) {
  EXPECT_EQ(check_fixture("projection-golden.json"), 3);
}

// 'simplex' and 'structured', kept in a file of their own (the first one predates them).
TEST(GoldenFixture, NativeProjectionBitsEqualTheNewerModesFixture) {
  EXPECT_EQ(check_fixture("projection-golden-sampling.json"), 3);
}
