// The scale test's body, shared by Node (bench/scale.mjs) and the browser (bench/scale-browser.mjs):
// FAVOR+ (positive, m = 256, orthogonal W, seed 42) bidirectional then causal on the same
// L × 64 inputs, through the public API `favor` (a loadFavor result). Returns a plain object:
// per run the time, whether the output is finite and the wasm heap after it. The wasm memory
// only grows, so the heap after the last run is the peak.
import { gaussian } from './inputs.mjs';

export function runScale(favor, { L, d = 64, m = 256, extra = () => ({}) }) {
  const heap = () => favor.memory().heapBytes;
  const { threads, simd, threadsReason } = favor.info;
  const result = { L, d, m, threads, simd, ...(threadsReason && { threadsReason }), heapBeforeBytes: heap(), runs: [] };
  const featureMap = favor.createFeatureMap({ dim: d, features: m, kernel: 'positive', sampling: 'orthogonal', seed: 42 });
  const t0 = performance.now();
  const q = { data: gaussian(L * d, 11, 0.5), dims: [L, d] };
  const k = { data: gaussian(L * d, 12, 0.5), dims: [L, d] };
  const v = { data: gaussian(L * d, 13, 0.5), dims: [L, d] };
  result.inputMs = performance.now() - t0;
  result.inputBytes = 3 * L * d * 4;
  for (const causal of [false, true]) {
    const run = { causal };
    try {
      const t = performance.now();
      const out = favor.favorAttention(q, k, v, { featureMap, causal });
      run.ms = performance.now() - t;
      let finite = true;
      for (let i = 0; i < out.data.length; ++i) if (!Number.isFinite(out.data[i])) { finite = false; break; }
      run.finite = finite;
      run.dims = out.dims;
    } catch (e) {
      run.error = `${e.name}: ${e.message}`;
    }
    run.heapAfterBytes = heap();
    Object.assign(run, extra());
    result.runs.push(run);
  }
  featureMap.dispose();
  result.peakHeapBytes = heap();
  return result;
}
