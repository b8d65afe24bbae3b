// libFuzzer target over the C++ core's entry points, for the robustness checks.
//
// The input bytes choose an entry point, shapes (small: L, S, d, dv, m, c up to 64; leading
// dims up to 3), options (causal, scale including bad values, chunk, window, temperature, epsilon,
// kernel, sampling, assignment, seeds) and float values (small, scaled by 10^-45..10^38, raw
// bits, specials: NaN, +-inf, subnormals, FLT_MAX; identical rows, one-hot rows).
//
// Allowed outcomes: success, favor::Error, or std::bad_alloc / std::length_error when the
// request was deliberately huge. Anything else aborts (a crash for libFuzzer), as does any
// ASan/UBSan report. On success it checks invariants:
//   - invalid arguments (tensor API, which validates) never succeed;
//   - valid "tame" inputs (|values| <= 1e4, scale in [1e-6, 1e6]) never throw;
//   - outputs are finite (trigonometric and signed linear features: never NaN, may be +-inf);
//   - matrices of positive-valued methods have rows summing to 1 (zeros above the diagonal
//     when causal); outputs match a float64 reference when inputs are moderate;
//   - k-means objectives never increase; compare() never returns NaN for finite inputs;
//   - matmul with b packed once (PackedMatrix) has matmul's outcome and bits.
//
// The shared parts (decoding, tracing, the checked call, the invariants) are fuzz.hpp, the
// float64 references reference.hpp, and each entry point has a file of its own.
//
// Build and run: scripts/test-sanitize.sh (CMake option FAVOR_FUZZ, clang, build/asan/fuzz_core;
// FUZZ_SECONDS sets the time). The build uses a 32-bit Eigen::Index, like wasm32, so that size
// arithmetic that would overflow in the WebAssembly build overflows here too (UBSan).
// Reproduce a crash: build/asan/fuzz_core <file>; FUZZ_TRACE=1 prints the decoded call.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstddef>
#include <cstdint>

#include "fuzz.hpp"

// Huge Eigen (malloc) requests return null, so Eigen throws std::bad_alloc as it does in wasm,
// instead of ASan or libFuzzer treating a lazily mapped multi-GB allocation as a crash.
extern "C" const char* __asan_default_options() {
  return "allocator_may_return_null=1:max_allocation_size_mb=1024:detect_leaks=1";
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace fuzz;
  FuzzedDataProvider provider(data, size);
  g_trace.clear();
  Decoder in{provider};
  const int entry = in.pick(13);
  switch (entry) {
    case 12: fuzz_matmul(in); break;
    case 0: case 1: case 2: case 3: case 4: case 5: fuzz_tensor_attention(in, entry); break;
    case 6: case 7: fuzz_one_head(in); break;
    case 8: fuzz_feature_map(in); break;
    case 9: fuzz_codebook_tools(in); break;
    case 11: fuzz_state_and_groups(in); break;
    default: fuzz_metrics(in); break;
  }
  return 0;
}
