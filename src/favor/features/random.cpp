#include "favor/features/random.hpp"

#include <cmath>

namespace favor {

std::array<std::uint32_t, 4> philox4x32(std::array<std::uint32_t, 4> c,
                                        std::array<std::uint32_t, 2> k) {
  constexpr std::uint64_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
  constexpr std::uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k[0] += kW0;
      k[1] += kW1;
    }
    const std::uint64_t p0 = kM0 * c[0];
    const std::uint64_t p1 = kM1 * c[2];
    c = {static_cast<std::uint32_t>(p1 >> 32) ^ c[1] ^ k[0], static_cast<std::uint32_t>(p1),
         static_cast<std::uint32_t>(p0 >> 32) ^ c[3] ^ k[1], static_cast<std::uint32_t>(p0)};
  }
  return c;
}

double portable_log(double x) {
  // x = f * 2^e with f in [sqrt(1/2), sqrt(2)); log f = 2 atanh(s), s = (f - 1)/(f + 1), |s| < 0.172.
  int e = 0;
  double f = std::frexp(x, &e);  // exact bit manipulation on every platform
  if (f < 0.70710678118654752440) {
    f *= 2.0;
    e -= 1;
  }
  const double s = (f - 1.0) / (f + 1.0);
  const double s2 = s * s;
  // Odd series 1 + s^2/3 + s^4/5 + ...: s^26 < 1e-20, well below double rounding.
  double series = 1.0 / 25.0;
  for (int k = 11; k >= 0; --k) series = 1.0 / (2 * k + 1) + s2 * series;
  constexpr double kLn2Hi = 6.93147180369123816490e-01;  // upper bits of ln 2, exact * small ints
  constexpr double kLn2Lo = 1.90821492927058770002e-10;
  const double ed = static_cast<double>(e);
  return ed * kLn2Hi + (ed * kLn2Lo + 2.0 * s * series);
}

NormalStream::NormalStream(std::uint64_t seed, std::uint32_t stream)
    : key_{static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32)},
      stream_(stream) {}

std::uint32_t NormalStream::next_word() {
  if (used_ == 4) {
    words_ = philox4x32({static_cast<std::uint32_t>(block_), static_cast<std::uint32_t>(block_ >> 32),
                         stream_, 0x46415652u /* "FAVR" */},
                        key_);
    ++block_;
    used_ = 0;
  }
  return words_[used_++];
}

double NormalStream::uniform() {
  const std::uint32_t a = next_word() >> 5;  // 27 bits
  const std::uint32_t b = next_word() >> 6;  // 26 bits
  return (static_cast<double>(a) * 67108864.0 + static_cast<double>(b) + 0.5) *
         (1.0 / 9007199254740992.0);
}

double NormalStream::normal() {
  if (has_spare_) {
    has_spare_ = false;
    return spare_;
  }
  for (;;) {
    const double u = 2.0 * uniform() - 1.0;
    const double v = 2.0 * uniform() - 1.0;
    const double s = u * u + v * v;
    if (s >= 1.0 || s == 0.0) continue;
    const double factor = std::sqrt(-2.0 * portable_log(s) / s);
    spare_ = v * factor;
    has_spare_ = true;
    return u * factor;
  }
}

}  // namespace favor
