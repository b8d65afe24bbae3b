#include "vector_math.hpp"

namespace favor::vec {

// Cephes' expf: the polynomial, the rounding constant 1.5 * 2^23, log2(e), ln 2 in two parts (the
// high part's low bits zero, so n times it is exact), the underflow bound, 1.
extern const float kExpConstants[exp_constant::count] = {
    1.9875691500e-4f, 1.3981999507e-3f, 8.3334519073e-3f, 4.1665795894e-2f, 1.6666665459e-1f, 5.0000001201e-1f,
    12582912.0f,      1.44269504088896341f, 2.12194440e-4f, -0.693359375f,  -87.33654f,       1.0f};

}  // namespace favor::vec
