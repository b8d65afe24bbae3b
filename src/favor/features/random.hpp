// A counter-based generator and a normal transform that give bit-identical streams on every
// platform (native, wasm, any libm): only +, -, *, / and sqrt are used, in double precision,
// and the library is compiled with -ffp-contract=off so no FMA changes the rounding.
#pragma once

#include <array>
#include <cstdint>

namespace favor {

// Philox4x32-10 (Salmon et al., 2011).
std::array<std::uint32_t, 4> philox4x32(std::array<std::uint32_t, 4> counter,
                                        std::array<std::uint32_t, 2> key);

// Natural logarithm of a positive, finite double from basic arithmetic only.
double portable_log(double x);

// A sequential stream of standard normals: (seed, stream) selects an independent sequence.
class NormalStream {
 public:
  NormalStream(std::uint64_t seed, std::uint32_t stream);

  // Uniform in the open interval (0, 1) with 53 random bits.
  double uniform();
  // Standard normal (Marsaglia's polar method).
  double normal();

 private:
  std::uint32_t next_word();

  std::array<std::uint32_t, 2> key_;
  std::uint32_t stream_;
  std::uint64_t block_ = 0;
  std::array<std::uint32_t, 4> words_{};
  int used_ = 4;
  bool has_spare_ = false;
  double spare_ = 0.0;
};

}  // namespace favor
