// The page's studies, in their own worker with their own favor instance: the page stays
// responsive, and Cancel simply terminates this worker (the page keeps the partial results).
import { loadFavor } from '../../web/browser.js';
import { makeInputs } from './inputs.js';
import { samplePairs, theoryConstants, unnormalizedMSE, codebookKernelMSE } from './estimators.js';
import { loadModel, readable } from './model-view.js';
import { heartbeat } from './load-watch.js';
import { CODEBOOK_MODES } from './modes.js';
import { sweepLengths } from './study-timing.js';

const favorReady = loadFavor();
heartbeat(favorReady);

// Error vs m: every m and series { kernel, sampling } over `seeds` feature seeds, all error
// measures; for the codebook kernels (sampling 'k-means') every m < L over `seeds` k-means seeds.
// The heads a study runs over: one synthetic input, or (model mode) every head of a trained
// model on the page's text, whose errors are pooled (mean and spread over heads and seeds).
async function studyInputs(favor, p) {
  if (p.pattern !== 'model') {
    const { L, d, pattern, scale, dataSeed } = p;
    const { q, k, v } = makeInputs({ L, d, pattern, scale, dataSeed });
    return { L, d, causal: p.causal, heads: [{ q, k, v }] };
  }
  const model = await loadModel(favor, p.model);
  const text = readable(model, p.text);
  const { qk } = model.forward(model.encode(text), { method: 'exact' }, { capture: true });
  const L = text.length, d = model.config.width / model.heads, heads = [];
  const part = (t, h) => t.data.slice(h * L * d, (h + 1) * L * d);
  qk.forEach(({ q, k, v }, layer) => {
    for (let h = 0; h < model.heads; h++) {
      if (Array.isArray(p.heads) && (p.heads[0] !== layer || p.heads[1] !== h)) continue;
      heads.push({ q: part(q, h), k: part(k, h), v: part(v, h) });
    }
  });
  return { L, d, causal: true, heads };
}

async function errorStudy(p) {
  const favor = await favorReady;
  const { series, ms, seeds, baseSeed, temperature } = p;
  const { L, d, causal, heads } = await studyInputs(favor, p);
  const inputs = heads.map(({ q, k, v }) => {
    const Q = { data: q, dims: [L, d] }, K = { data: k, dims: [L, d] }, V = { data: v, dims: [L, d] };
    return { Q, K, V, A: favor.attentionMatrix(Q, K, { causal }), out: favor.exactAttention(Q, K, V, { causal }),
      sample: samplePairs(q, k, L, L, d, { causal }) };
  });
  // The Lemma 2 curve belongs to one input's pairs: drawn for a synthetic input only.
  const { sample } = inputs[0];
  postMessage({ type: 'start', theory: heads.length === 1 ? theoryConstants(sample) : null, pairs: sample.pairs.length * inputs.length,
    queryRows: sample.rows.length, keyRows: sample.cols.length, heads: inputs.length, L, d });

  const cost = (m, kernel) => inputs.length * ((kernel === 'hyperbolic' || kernel === 'trigonometric' ? 2 : 1) * m * (L * L + 2 * L * d) + 64);
  const codebookCost = (m) => inputs.length * (m * (L * L + 2 * L * d + 12 * L * d) + 64);  // k-means: ~25 Lloyd steps of L·m·d
  const runs = (m, kernel) => (CODEBOOK_MODES[kernel] ? (m < L ? seeds * codebookCost(m) : 0) : seeds * cost(m, kernel));
  let total = 0, done = 0;
  for (const m of ms) for (const { kernel } of series) total += runs(m, kernel);
  const t0 = performance.now();
  for (const m of ms) {
    for (const { kernel, sampling } of series) {
      const assignment = CODEBOOK_MODES[kernel];
      if (assignment) {
        if (m >= L) continue;  // k-means has at most L codewords, and at m = L every key is one: exact
        const values = { mse: [], relFrobenius: [], maxAbs: [], meanRowKL: [], outputRelError: [], kernelMSE: [] };
        const options = { assignment, causal, ...(assignment === 'soft' ? { temperature } : {}) };
        for (let s = 0; s < seeds; s++) {
          for (const { Q, K, V, A, out, sample: pairs } of inputs) {
            const codebook = favor.kmeans(K, { clusters: m, seed: baseSeed + s });
            const Ahat = favor.codebookAttentionMatrix(Q, K, { ...options, codebook });
            const e = favor.compare(A, Ahat);
            const outHat = favor.codebookAttention(Q, K, V, { ...options, codebook });
            values.mse.push(e.mse);
            values.relFrobenius.push(e.relFrobenius);
            values.maxAbs.push(e.maxAbs);
            values.meanRowKL.push(e.meanRowKL);
            values.outputRelError.push(favor.outputRelativeError(out, outHat));
            values.kernelMSE.push(codebookKernelMSE(codebook.data, m, assignment, temperature, pairs));
          }
          done += codebookCost(m);
        }
        postMessage({ type: 'point', kernel, sampling: 'k-means', m, values });
        postMessage({ type: 'progress', fraction: done / total, label: `m = ${m}, ${kernel}` });
        await new Promise((r) => setTimeout(r, 0));
        continue;
      }
      const values = { mse: [], relFrobenius: [], maxAbs: [], meanRowKL: [], outputRelError: [], kernelMSE: [] };
      // oprf, sderf and aderf maps fit their parameters to each call's q and k (each head's)
      const map = favor.createFeatureMap({ dim: d, features: m, kernel, sampling, seed: baseSeed });
      try {
        for (let s = 0; s < seeds; s++) {
          if (s > 0) map.redraw(baseSeed + s);
          const W = map.projection.data;
          for (const { Q, K, V, A, out, sample: pairs } of inputs) {
            const Ahat = favor.favorAttentionMatrix(Q, K, { featureMap: map, causal });
            const e = favor.compare(A, Ahat);
            const outHat = favor.favorAttention(Q, K, V, { featureMap: map, causal });
            values.mse.push(e.mse);
            values.relFrobenius.push(e.relFrobenius);
            values.maxAbs.push(e.maxAbs);
            values.meanRowKL.push(e.meanRowKL);
            values.outputRelError.push(favor.outputRelativeError(out, outHat));
            const km = unnormalizedMSE(kernel, W, m, pairs);
            if (km !== null) values.kernelMSE.push(km);
          }
          done += cost(m, kernel);
        }
      } finally {
        map.dispose();
      }
      postMessage({ type: 'point', kernel, sampling, m, values });
      postMessage({ type: 'progress', fraction: done / total, label: `m = ${m}, ${kernel}, ${sampling}` });
      await new Promise((r) => setTimeout(r, 0));
    }
  }
  postMessage({ type: 'done', elapsed: performance.now() - t0 });
}

// Speed: exact attention (online softmax, O(L²d)) vs FAVOR+ (O(Lmd)) across L (study-timing.js).
async function speedStudy(p) {
  const favor = await favorReady;
  const { d, m, kernel, sampling, causal, Ls, exactBudgetMs } = p;
  const featureMap = favor.createFeatureMap({ dim: d, features: m, kernel, sampling, seed: 1 });
  try {
    // Warm-up: let the engine tier the wasm up before anything is timed.
    const { q, k, v } = makeInputs({ L: 256, d, pattern: 'gaussian', scale: 0.5, dataSeed: 7 });
    const T = (x) => ({ data: x, dims: [256, d] });
    for (let i = 0; i < 30; i++) {
      favor.exactAttention(T(q), T(k), T(v), { causal });
      favor.favorAttention(T(q), T(k), T(v), { featureMap, causal });
    }
    const elapsed = await sweepLengths({
      Ls, budgetMs: exactBudgetMs,
      callsAt: (L) => {
        const { q, k, v } = makeInputs({ L, d, pattern: 'gaussian', scale: 0.5, dataSeed: 7 });
        const Q = { data: q, dims: [L, d] }, K = { data: k, dims: [L, d] }, V = { data: v, dims: [L, d] };
        return { favor: () => favor.favorAttention(Q, K, V, { featureMap, causal }), exact: () => favor.exactAttention(Q, K, V, { causal }) };
      },
      report: ({ L, favorMs, exactMs, fraction }) => {
        postMessage({ type: 'speed-point', L, favor: favorMs, exact: exactMs });
        postMessage({ type: 'progress', fraction, label: `L = ${L}` });
      },
    });
    postMessage({ type: 'done', elapsed });
  } finally {
    featureMap.dispose();
  }
}

self.onmessage = async (event) => {
  const { type, params } = event.data;
  try {
    if (type === 'error-study') await errorStudy(params);
    else if (type === 'speed-study') await speedStudy(params);
  } catch (e) {
    postMessage({ type: 'error', message: String(e?.message ?? e) });
  }
};
