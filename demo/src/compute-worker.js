// The page's interactive computation, off the main thread so sliders never stall: exact and
// approximate matrices (random features or a codebook), outputs and error measures for one
// setting, each call timed; for the codebook modes also the PCA view's data; and the model mode's
// generations (side by side, and the long-text view's, block by block and cancellable).
import { loadFavor } from '../../web/browser.js';
import { makeInputs } from './inputs.js';
import { principalAxes, project, nearestCodewords } from './pca.js';
import { LONG_MODEL } from './long-model.js';
import { HEATMAP_WINDOW, codebookOptions, computeModel, cropWindow, generate, generateBlock, loadManifest, loadModel, modelDraws, startLongGeneration } from './model-view.js';
import { spreadOfDraws } from './draws.js';
import { countInvalid } from './invalid-entries.js';
import { heartbeat } from './load-watch.js';
import { CODEBOOK_MODES } from './modes.js';

let favor = null;
const ready = loadFavor().then(
  (f) => { favor = f; postMessage({ type: 'ready', info: { ...f.info } }); },
  (e) => postMessage({ type: 'fatal', message: `loading the WebAssembly module failed: ${e?.message ?? e}` }),
);
heartbeat(ready);

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
    inputCache.scaled = { scale, q, k, v, pca: null };
    timings.inputs = performance.now() - t0;
  } else {
    timings.inputs = 0;
  }
  const { q, k, v } = inputCache.scaled;
  const Q = { data: q, dims: [L, d] }, K = { data: k, dims: [L, d] }, V = { data: v, dims: [L, d] };
  const assignment = CODEBOOK_MODES[kernel];
  if (assignment) return computeCodebook(p, assignment, Q, K, V, timings);

  const featureMap = cachedMap(d, m, kernel, sampling, seed, timings);
  const [A, tA] = timed(() => favor.attentionMatrix(Q, K, { causal }));
  const [Ahat, tAhat] = timed(() => favor.favorAttentionMatrix(Q, K, { featureMap, causal }));
  const [out, tOut] = timed(() => favor.exactAttention(Q, K, V, { causal }));
  const [outHat, tOutHat] = timed(() => favor.favorAttention(Q, K, V, { featureMap, causal }));
  const [errors, tCompare] = timed(() => ({
    ...favor.compare(A, Ahat),
    outputRelError: favor.outputRelativeError(out, outHat),
  }));
  Object.assign(timings, { exactMatrix: tA, approxMatrix: tAhat, exactOutput: tOut, favorOutput: tOutHat, errors: tCompare });
  const spread = p.spread ? timedSpread(timings, () => spreadOfDraws((t) => (t === 0 ? Ahat.data : withMap(
    favor.createFeatureMap({ dim: d, features: m, kernel, sampling, seed: seed + t }),
    (map) => favor.favorAttentionMatrix(Q, K, { featureMap: map, causal }).data)))) : null;
  return { A: A.data, Ahat: Ahat.data, errors, timings, ...countInvalid(Ahat.data, L, causal), numFeatures: featureMap.numFeatures, spread };
}

// A feature map used once, then freed.
function withMap(map, fn) {
  try {
    return fn(map);
  } finally {
    map.dispose();
  }
}

// The row inspector's spread of Â over draws (draws.js), timed.
function timedSpread(timings, fn) {
  const [spread, ms] = timed(fn);
  timings.spread = ms;
  return spread;
}

function cachedMap(d, m, kernel, sampling, seed, timings) {
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
  return mapCache.map;
}

let codebookCache = { key: '', codebook: null };

// Codebook attention: a k-means codebook of the (scaled) keys with hard or soft assignment, or
// the codebook W/√scale of an orthogonal-fixed positive feature map with Gaussian
// responsibilities, which is FAVOR+ itself (checked live against favorAttentionMatrix).
function computeCodebook(p, assignment, Q, K, V, timings) {
  const { L, d, m, causal, scale, pattern, seed, dataSeed, temperature } = p;
  let codebook, featureMap = null;
  const clusters = assignment === 'gaussian' ? m : Math.min(m, L);
  if (assignment === 'gaussian') {
    featureMap = cachedMap(d, m, 'positive', 'orthogonal-fixed', seed, timings);
    const key = JSON.stringify(['fm', d, m, seed]);
    if (codebookCache.key !== key) {
      const [c, ms] = timed(() => favor.codebookFromFeatureMap(featureMap));
      codebookCache = { key, codebook: c };
      timings.featureMap += ms;
      timings.mapCached = false;
    }
  } else {
    const key = JSON.stringify(['kmeans', L, d, pattern, dataSeed, scale, clusters, seed]);
    timings.mapCached = codebookCache.key === key;
    if (!timings.mapCached) {
      const [c, ms] = timed(() => favor.kmeans(K, { clusters, seed }));
      codebookCache = { key, codebook: c };
      timings.featureMap = ms;
    } else {
      timings.featureMap = 0;
    }
  }
  codebook = codebookCache.codebook;
  const options = { codebook, assignment, causal, ...(assignment === 'soft' ? { temperature } : {}) };
  const [A, tA] = timed(() => favor.attentionMatrix(Q, K, { causal }));
  const [Ahat, tAhat] = timed(() => favor.codebookAttentionMatrix(Q, K, options));
  const [out, tOut] = timed(() => favor.exactAttention(Q, K, V, { causal }));
  const [outHat, tOutHat] = timed(() => favor.codebookAttention(Q, K, V, options));
  const [errors, tCompare] = timed(() => ({
    ...favor.compare(A, Ahat),
    outputRelError: favor.outputRelativeError(out, outHat),
  }));
  Object.assign(timings, { exactMatrix: tA, approxMatrix: tAhat, exactOutput: tOut, favorOutput: tOutHat, errors: tCompare });

  // Performer as soft VQ: the same matrix and output from FAVOR+ with this W.
  let identity = null;
  if (featureMap) {
    const t1 = performance.now();
    const Afavor = favor.favorAttentionMatrix(Q, K, { featureMap, causal }).data;
    const outFavor = favor.favorAttention(Q, K, V, { featureMap, causal }).data;
    let matrix = 0, output = 0;
    const a = Ahat.data;
    for (let x = 0; x < a.length; x++) { const e = Math.abs(a[x] - Afavor[x]); if (!(e <= matrix)) matrix = e; }
    for (let x = 0; x < outFavor.length; x++) { const e = Math.abs(outHat.data[x] - outFavor[x]); if (!(e <= output)) output = e; }
    identity = { matrix, output };
    timings.identity = performance.now() - t1;
  }

  // The 2-D view: PCA of the keys (cached with the scaled inputs), keys and codewords on it,
  // each key's nearest codeword.
  const t2 = performance.now();
  const cached = inputCache.scaled;
  cached.pca ??= principalAxes(K.data, L, d);
  const pca = cached.pca;
  const { assign, counts } = nearestCodewords(K.data, L, codebook.data, clusters, d, favor);
  let used = 0;
  for (const c of counts) if (c) used++;
  const view = {
    keys: project(K.data, L, d, pca), codewords: project(codebook.data, clusters, d, pca), assign, counts, used,
    explained: pca.total > 0 ? pca.variances.map((x) => x / pca.total) : [0, 0],
  };
  timings.pca = performance.now() - t2;
  const spread = p.spread ? timedSpread(timings, () => spreadOfDraws((t) => {
    if (t === 0) return Ahat.data;
    const book = assignment === 'gaussian'
      ? withMap(favor.createFeatureMap({ dim: d, features: m, kernel: 'positive', sampling: 'orthogonal-fixed', seed: seed + t }), (map) => favor.codebookFromFeatureMap(map))
      : favor.kmeans(K, { clusters, seed: seed + t });
    return favor.codebookAttentionMatrix(Q, K, { ...options, codebook: book }).data;
  })) : null;
  return {
    A: A.data, Ahat: Ahat.data, errors, timings, ...countInvalid(Ahat.data, L, causal),
    numFeatures: clusters, codebook: { clusters, capped: clusters < m, assignment, identity, view }, spread,
  };
}

// Model mode: the selected head's real q and k (and v) instead of a synthetic pattern.
function computeModelResult(model, p) {
  const timings = {};
  const r = computeModel(favor, model, p, timings);
  const { Q, K, V, L, spec } = r;
  const t0 = performance.now();
  const out = favor.exactAttention(Q, K, V, { causal: true });
  const outHat = spec.method === 'favor'
    ? favor.favorAttention(Q, K, V, { featureMap: spec.featureMaps[p.layer], causal: true })
    : favor.codebookAttention(Q, K, V, codebookOptions(favor, spec, K, L));
  const A = { data: r.A, dims: [L, L] }, Ahat = { data: r.Ahat, dims: [L, L] };
  const errors = { ...favor.compare(A, Ahat), outputRelError: favor.outputRelativeError(out, outHat) };
  timings.headOutput = performance.now() - t0;
  // The errors above cover the whole text; the heatmaps get the last HEATMAP_WINDOW positions.
  const W = Math.min(L, HEATMAP_WINDOW), drawn = W < L ? [cropWindow(r.A, L, L - W), cropWindow(r.Ahat, L, L - W)] : [r.A, r.Ahat];
  // the exported W is one draw: no spread ({ single: true })
  const spread = p.spread ? timedSpread(timings, () => modelDraws(favor, model, p, r) ?? { single: true }) : null;
  return {
    A: drawn[0], Ahat: drawn[1], errors, timings, ...countInvalid(drawn[1], W, true, true), spread,
    numFeatures: spec.method === 'favor' ? spec.featureMaps[p.layer].numFeatures : spec.clusters,
    params: { ...p, L: W, d: r.d, causal: true },
    model: { ...r.extras, models: manifestSummary },
  };
}

let manifestSummary = null;

// The model of p.model, loaded once; its loading reported in 'progress' messages (`purpose`: what
// it is loaded for, 'long' for the long-text view, whose progress is not the panels').
async function modelFor(p, purpose = 'panels') {
  const m = await loadManifest();
  if (!manifestSummary) {
    manifestSummary = m.models.map(({ name, title, attention, heldOutBpc, architecture }) =>
      ({ name, title, attention, heldOutBpc, context: architecture.context, rotary: Boolean(architecture.rotary) }));
    const { layers, heads } = m.models[0].architecture;
    postMessage({ type: 'manifest', models: manifestSummary, layers, heads });
  }
  const total = m.models.find((r) => r.name === p.model)?.bytes ?? 0;
  let last = 0;
  return loadModel(favor, p.model, (fraction, bytes) => {
    if (fraction - last >= 0.05 || fraction === 1) {
      last = fraction;
      postMessage({ type: 'progress', fraction, bytes, total, model: p.model, purpose });
    }
  });
}

// The long-text view: LONG_MODEL continues the text by n characters with its exact cache and its
// FAVOR+ state, interleaved: `block` characters of one, then of the other, one 'long-block'
// message per pair. Between pairs the worker takes its other messages (a cancel, the panels'
// computations), so each block's rate is timed around its own next() calls only.
let longRun = null;  // { id, cancelled }
const nextTask = () => new Promise((resolve) => {
  const channel = new MessageChannel();
  channel.port1.onmessage = () => { channel.port1.close(); resolve(); };
  channel.port2.postMessage(null);
});

async function longGenerate(id, p) {
  if (longRun) longRun.cancelled = true;
  const run = { id, cancelled: false };
  longRun = run;
  let gen = null, done = 0;
  try {
    const model = await modelFor({ ...p, model: LONG_MODEL }, 'long');
    if (run.cancelled) return postMessage({ type: 'long-done', id, done, cancelled: true });
    gen = startLongGeneration(model, p);
    postMessage({ type: 'long-start', id, model: LONG_MODEL, n: p.n, block: p.block, window: p.window || 0, label: gen.label, prefillMs: gen.prefillMs,
      prompt: gen.prompt.slice(-60), promptLength: gen.prompt.length, context: model.context, length: gen.exact.length,
      stateBytes: { exact: gen.exact.stateBytes, favor: gen.favor.stateBytes } });
    while (done < p.n && !run.cancelled) {
      const k = Math.min(p.block, p.n - done);
      const exact = generateBlock(gen.exact, k), approx = generateBlock(gen.favor, k);
      done += k;
      postMessage({ type: 'long-block', id, done, exact, favor: approx });
      await nextTask();
    }
    postMessage({ type: 'long-done', id, done, cancelled: run.cancelled });
  } catch (e) {
    postMessage({ type: 'long-done', id, done, cancelled: false, error: String(e?.message ?? e) });
  } finally {
    gen?.dispose();
    if (longRun === run) longRun = null;
  }
}

self.onmessage = async (event) => {
  const { id, params, kind } = event.data;
  if (kind === 'long-cancel') {
    if (longRun?.id === id) longRun.cancelled = true;
    return;
  }
  await ready;
  if (!favor) return;
  if (kind === 'long-generate') {
    longGenerate(id, params);
    return;
  }
  if (kind === 'generate') {
    try {
      const model = await modelFor(params);
      postMessage({ type: 'generated', id, key: event.data.key, ...generate(favor, model, params, event.data.n) });
    } catch (e) {
      postMessage({ type: 'generated', id, key: event.data.key, error: String(e?.message ?? e) });
    }
    return;
  }
  const t0 = performance.now();
  try {
    const result = params.pattern === 'model' ? computeModelResult(await modelFor(params), params) : compute(params);
    result.timings.worker = performance.now() - t0;
    const spread = result.spread?.lo ? [result.spread.lo.buffer, result.spread.hi.buffer, result.spread.mean.buffer] : [];
    postMessage({ type: 'result', id, params, ...result }, [result.A.buffer, result.Ahat.buffer, ...spread]);
  } catch (e) {
    postMessage({ type: 'error', id, message: String(e?.message ?? e), field: e?.field });
  }
};
