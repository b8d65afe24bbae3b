// The ceiling for float32 kernels built from separate 128-bit multiplies and adds (wasm SIMD
// has no FMA in Node 20 / Emscripten 3.1.6; the SSE4.2 build has none either): 12 independent
// x = x * b + c chains held in registers, no memory traffic. Built into the native driver
// (command `peak`) and, by bench/run.sh, into a standalone wasm module, from this one source.
// Returns a value that depends on every chain so that none can be dropped.
typedef float Float4 __attribute__((vector_size(16)));

extern "C" float peak_kernel(int iterations) {
  const Float4 b = {0.999999f, 0.999999f, 0.999999f, 0.999999f};
  const Float4 c = {1e-7f, 1e-7f, 1e-7f, 1e-7f};
  Float4 x[12];
  for (int j = 0; j < 12; ++j) x[j] = Float4{1.0f, 1.1f, 1.2f, 1.3f} + static_cast<float>(j) * 0.01f;
  for (int i = 0; i < iterations; ++i) {
#pragma GCC unroll 12
    for (int j = 0; j < 12; ++j) x[j] = x[j] * b + c;
  }
  Float4 sum = x[0];
  for (int j = 1; j < 12; ++j) sum += x[j];
  return sum[0] + sum[1] + sum[2] + sum[3];
}

// Floating-point operations per iteration (12 chains × 4 lanes × multiply and add).
extern "C" int peak_kernel_flops_per_iteration() { return 96; }
