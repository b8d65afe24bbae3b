// The page's interactive computation, off the main thread so sliders never stall: exact and
// approximate matrices, outputs and error measures for one setting, each call timed.
import { loadFavor } from '../../web/browser.js';
import { makeInputs } from './inputs.js';

let favor = null;
const ready = loadFavor().then(
  (f) => { favor = f; postMessage({ type: 'ready', info: { ...f.info } }); },
  (e) => postMessage({ type: 'fatal', message: `loading the WebAssembly module failed: ${e?.message ?? e}` }),
);

let inputCache = { key: '', value: null };
let mapCache = { key: '', map: null };

function timed(fn) {
  const t0 = performance.now();
  const value = fn();
  return [value, performance.now() - t0];
}

function compute(p) {
  const { L, d, m, kernel, sampling, causal, scale, pattern, seed, dataSeed } = p;
  const timings = {};
  // Inputs are cached unscaled (the input scale only multiplies Q and K).
  const inputKey = JSON.stringify([L, d, pattern, dataSeed]);
  const t0 = performance.now();
  if (inputCache.key !== inputKey) {
    inputCache = { key: inputKey, value: makeInputs({ L, d, pattern, scale: 1, dataSeed }), scaled: null };
  }
  if (inputCache.scaled?.scale !== scale) {
    const { q: q1, k: k1, v } = inputCache.value;
    const q = new Float32Array(q1.length), k = new Float32Array(k1.length);
    for (let i = 0; i < q.length; i++) { q[i] = q1[i] * scale; k[i] = k1[i] * scale; }
    inputCache.scaled = { scale, q, k, v };
    timings.inputs = performance.now() - t0;
  } else {
    timings.inputs = 0;
  }
  const { q, k, v } = inputCache.scaled;
  const Q = { data: q, dims: [L, d] }, K = { data: k, dims: [L, d] }, V = { data: v, dims: [L, d] };

  const mapKey = JSON.stringify([d, m, kernel, sampling, seed]);
  timings.mapCached = mapCache.key === mapKey;
  if (!timings.mapCached) {
    mapCache.map?.dispose();
    mapCache = { key: '', map: null };
    const [map, ms] = timed(() => favor.createFeatureMap({ dim: d, features: m, kernel, sampling, seed }));
    mapCache = { key: mapKey, map };
    timings.featureMap = ms;
  } else {
    timings.featureMap = 0;
  }
  const featureMap = mapCache.map;

  const [A, tA] = timed(() => favor.attentionMatrix(Q, K, { causal }));
  const [Ahat, tAhat] = timed(() => favor.favorAttentionMatrix(Q, K, { featureMap, causal }));
  const [out, tOut] = timed(() => favor.exactAttention(Q, K, V, { causal }));
  const [outHat, tOutHat] = timed(() => favor.favorAttention(Q, K, V, { featureMap, causal }));
  const [errors, tCompare] = timed(() => ({
    ...favor.compare(A, Ahat),
    outputRelError: favor.outputRelativeError(out, outHat),
  }));
  Object.assign(timings, { exactMatrix: tA, approxMatrix: tAhat, exactOutput: tOut, favorOutput: tOutHat, errors: tCompare });

  // Entries of Â that cannot be drawn as probabilities (trigonometric features give them).
  let nonPositive = 0, nonFinite = 0;
  const a = Ahat.data;
  for (let i = 0; i < L; i++) {
    const jmax = causal ? i : L - 1;
    for (let j = 0; j <= jmax; j++) {
      const x = a[i * L + j];
      if (!Number.isFinite(x)) nonFinite++;
      else if (x <= 0) nonPositive++;
    }
  }
  return { A: A.data, Ahat: a, errors, timings, nonPositive, nonFinite, numFeatures: featureMap.numFeatures };
}

self.onmessage = async (event) => {
  const { id, params } = event.data;
  await ready;
  if (!favor) return;
  const t0 = performance.now();
  try {
    const result = compute(params);
    result.timings.worker = performance.now() - t0;
    postMessage({ type: 'result', id, params, ...result }, [result.A.buffer, result.Ahat.buffer]);
  } catch (e) {
    postMessage({ type: 'error', id, message: String(e?.message ?? e) });
  }
};
