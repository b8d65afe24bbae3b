#include "favor/kernels/vector_math.hpp"

namespace favor::vec {

// exp_polynomial's coefficients (fitted as described there, each a float32), the rounding constant
// 1.5 * 2^23 + 127, log2(e), ln 2 in two parts (the high part's low bits zero, so n times it is
// exact), the underflow bound, 1.
extern const float kExpConstants[exp_constant::count] = {
    1.3814615085721016e-3f, 8.368710055947304e-3f, 4.166838899254799e-2f, 1.666652113199234e-1f, 4.999999403953552e-1f,
    12583039.0f, 1.44269504088896341f, 2.12194440e-4f, -0.693359375f, -87.33654f, 1.0f};

}  // namespace favor::vec
