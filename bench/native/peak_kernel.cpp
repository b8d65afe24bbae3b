// The ceiling for float32 kernels built from 128-bit multiply-adds: 12 independent
// x = x * b + c chains held in registers, no memory traffic. Built with separate multiplies and
// adds (-ffp-contract=off) into the native SSE driver (command `peak`) and, by bench/run.sh, into
// a standalone wasm module; and with -mrelaxed-simd into a second wasm module whose chains are
// f32x4.relaxed_madd (fused where the CPU has FMA), the ceiling of the relaxed-SIMD build. One
// source. Returns a value that depends on every chain so that none can be dropped.
// peak_kernel_8: the same loop with 8 chains, the accumulators of the GEMM's 2- and 4-row tiles
// (the one engines that spill 12 accumulators run): with a multiply-add latency of 4 cycles and 2
// units, 8 chains are just enough to keep both busy, so this is the most such a tile can reach.
typedef float Float4 __attribute__((vector_size(16)));

// b and c read once through volatile: as constants folded into the loop, the V8 of Node 24 and 26
// rebuilds each v128.const at every use (see src/favor/kernels/vector_math.hpp), and the loop measured
// that (17.7 GFLOP/s in Node 26) instead of the multiply-adds.
static const float kB = 0.999999f, kC = 1e-7f;

template <int Chains>
static float chains(int iterations) {
  const float bs = *static_cast<const volatile float*>(&kB), cs = *static_cast<const volatile float*>(&kC);
  const Float4 b = {bs, bs, bs, bs};
  const Float4 c = {cs, cs, cs, cs};
  Float4 x[Chains];
  for (int j = 0; j < Chains; ++j) x[j] = Float4{1.0f, 1.1f, 1.2f, 1.3f} + static_cast<float>(j) * 0.01f;
  for (int i = 0; i < iterations; ++i) {
#pragma GCC unroll 12
    for (int j = 0; j < Chains; ++j) {
#if defined(__wasm_relaxed_simd__)
      x[j] = __builtin_wasm_fma_f32x4(x[j], b, c);  // rewritten to relaxed_madd: x * b + c
#else
      x[j] = x[j] * b + c;
#endif
    }
  }
  Float4 sum = x[0];
  for (int j = 1; j < Chains; ++j) sum += x[j];
  return sum[0] + sum[1] + sum[2] + sum[3];
}

extern "C" float peak_kernel(int iterations) { return chains<12>(iterations); }
extern "C" float peak_kernel_8(int iterations) { return chains<8>(iterations); }

// Floating-point operations per iteration (chains × 4 lanes × multiply and add, fused or not).
extern "C" int peak_kernel_flops_per_iteration() { return 96; }
extern "C" int peak_kernel_8_flops_per_iteration() { return 64; }
