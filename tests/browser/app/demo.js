// The computation the browser pages and Node run on the same deterministic inputs: exact
// attention and FAVOR+ (positive kernel, m = 256, seed 1), with the SIMD choice made by the
// loader, with the scalar module forced, and through the worker API (worker: true). Plain ESM
// with no imports: it runs unchanged in Node, in a Vite app and in a page without a bundler.
export const L = 32;
export const D = 16;
export const FEATURES = 256;
export const SEED = 1;

// mulberry32: a tiny deterministic generator, values in [-1, 1) rounded to float32.
function generator(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (((t ^ (t >>> 14)) >>> 0) / 4294967296) * 2 - 1;
  };
}

export function makeInputs() {
  const next = generator(20240601);
  const tensor = (offset) => ({ data: Float32Array.from({ length: L * D }, () => next() + offset), dims: [L, D] });
  // Values in [0, 2): outputs are away from 0, so the relative error measures the approximation.
  return { q: tensor(0), k: tensor(0), v: tensor(1) };
}

// Written once for both APIs: awaiting the synchronous API's values changes nothing, and the
// worker API (loadFavor({ worker: true })) returns Promises.
async function compute(favor) {
  const { q, k, v } = makeInputs();
  const exact = await favor.exactAttention(q, k, v);
  const featureMap = await favor.createFeatureMap({ dim: D, features: FEATURES, kernel: 'positive', seed: SEED });
  try {
    const approx = await favor.favorAttention(q, k, v, { featureMap });
    const causal = await favor.favorAttention(q, k, v, { featureMap, causal: true });
    return {
      version: favor.info.version,
      simd: favor.info.simd,
      relaxedSimd: favor.info.relaxedSimd,
      threads: favor.info.threads,
      threadsReason: favor.info.threadsReason ?? null,
      tileRows: favor.info.tileRows,
      relError: await favor.outputRelativeError(exact, approx),
      dims: approx.dims,
      first: Array.from(approx.data.subarray(0, 4)),
      exact: Array.from(exact.data),
      favor: Array.from(approx.data),
      causal: Array.from(causal.data),
    };
  } finally {
    await featureMap.dispose();
  }
}

// Decode steps of a 4-head FAVOR+ state (d = 64, m = 256: its heads run in parallel where there
// are threads), then dispose() of the instance, which ends its threads (in a browser, Emscripten
// frees their thread-local memory then): bytes in use are back where they started, and the
// instance keeps working.
function decodeThenDispose(favor) {
  const next = generator(7);
  const tensor = (n) => ({ data: Float32Array.from({ length: 4 * n * 64 }, () => next() * 0.5), dims: [4, n, 64] });
  const before = favor.memory().usedBytes;
  const featureMap = favor.createFeatureMap({ dim: 64, features: 256, kernel: 'positive', seed: SEED });
  const state = favor.createCausalState({ method: 'favor', featureMap });
  const outputs = [];
  state.append(tensor(8), tensor(8), tensor(8));
  for (let i = 0; i < 8; i++) outputs.push(...state.append(tensor(1), tensor(1), tensor(1)).data);
  state.dispose();
  featureMap.dispose();
  favor.dispose();
  const { q, k, v } = makeInputs();
  return {
    decode: outputs,
    bytesBefore: before,
    bytesAfter: favor.memory().usedBytes,
    exactAfterDispose: Array.from(favor.exactAttention(q, k, v).data),
  };
}

export async function runDemo(loadFavor) {
  const instance = await loadFavor();
  const auto = { ...(await compute(instance)), ...decodeThenDispose(instance) };
  const scalar = await compute(await loadFavor({ simd: false }));
  // The same in a worker (Vite bundles it from the loader's new Worker(new URL(...))).
  const inWorker = await loadFavor({ worker: true });
  try {
    return { ...auto, scalar, worker: await compute(inWorker) };
  } finally {
    await inWorker.dispose();
  }
}
