// The machine's ceiling for kernels made of separate 128-bit float multiplies and adds (no FMA,
// as in wasm SIMD here and the SSE4.2 build): bench/native/peak_kernel.cpp, run as wasm in this
// process and natively through the SSE driver. Best of several short runs (GFLOP/s), so that a
// load phase on the shared machine lowers it less than it would lower a median.
import { readFile } from 'node:fs/promises';

const RUNS = 7;
const ITERATIONS = 30_000_000;  // ~0.1 s per run at ~25 GFLOP/s

// chains: 12 (the ceiling) or 8 (the most a tile of 8 accumulators reaches; see peak_kernel.cpp).
export async function wasmCeiling(file, { chains = 12 } = {}) {
  const { instance } = await WebAssembly.instantiate(await readFile(file), {});
  const suffix = chains === 12 ? '' : `_${chains}`;
  const kernel = instance.exports[`peak_kernel${suffix}`], perIteration = instance.exports[`peak_kernel${suffix}_flops_per_iteration`];
  if (!kernel) throw new Error(`${file} has no peak_kernel${suffix} (rebuild it: npm run bench)`);
  kernel(1000);  // compile tiers up before timing
  let best = 0;
  for (let r = 0; r < RUNS; ++r) {
    const t0 = performance.now();
    kernel(ITERATIONS);
    const seconds = (performance.now() - t0) / 1000;
    best = Math.max(best, (ITERATIONS * perIteration()) / seconds / 1e9);
  }
  return best;
}

// proc: a NativeProcess (bench/lib/native.mjs) of a driver that answers `peak`.
export async function nativeCeiling(proc) {
  let best = 0;
  for (let r = 0; r < RUNS; ++r) {
    const [seconds, flops] = (await proc.command(`peak ${ITERATIONS}`)).split(/\s+/).map(Number);
    best = Math.max(best, flops / seconds / 1e9);
  }
  return best;
}
