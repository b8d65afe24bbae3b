// The page's model mode, inside the compute worker: loads a trained model (train/models) with
// progress, runs it on the text (model/runner.js: dense layers in JS and favor.matmul, attention
// through the public API), and returns what the panels show for one setting: the selected head's
// A and Â, every head's A with its error, bits per character and next-character predictions with
// exact attention and with the approximation in every layer; generation side by side; and the
// long-text view's generation (exact cache and FAVOR+ state of long-performer, block by block).
import { CharModel, causalKeySpread, modelSizeError, verifyModelFile } from '../../model/runner.js';
import { predictedKL, rebalancedSpread } from './dense-variance.js';
import { spreadOfDraws } from './draws.js';
import { EXPORTED_W, fmtT, usesExportedW } from './modes.js';
import { distanceRows, nearestCodewords } from './pca.js';
import { rowKL } from './row-kl.js';

// Static URLs, so that a build copies the files (a URL computed at run time would not be).
const FILES = {
  manifest: new URL('../../train/models/manifest.json', import.meta.url),
  softmax: new URL('../../train/models/softmax.bin', import.meta.url),
  performer: new URL('../../train/models/performer.bin', import.meta.url),
  finetune: new URL('../../train/models/finetune.bin', import.meta.url),
  'long-softmax': new URL('../../train/models/long-softmax.bin', import.meta.url),
  'long-performer': new URL('../../train/models/long-performer.bin', import.meta.url),
};

let manifest = null;
const models = new Map();

export async function loadManifest() {
  manifest ??= await (await fetch(FILES.manifest)).json();
  return manifest;
}

// Weights with progress: onProgress(fraction, bytes).
export async function loadModel(favor, name, onProgress) {
  if (models.has(name)) return models.get(name);
  const m = await loadManifest();
  const record = m.models.find((r) => r.name === name);
  if (!record || !FILES[name]) throw new RangeError(`model: no model '${name}'`);
  const response = await fetch(FILES[name]);
  if (!response.ok) throw new Error(`model: ${FILES[name]} answered ${response.status}`);
  const total = record.bytes, bytes = new Uint8Array(total);
  let at = 0;
  const reader = response.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    if (at + value.length > total) throw modelSizeError(record, at + value.length, FILES[name]);
    bytes.set(value, at);
    at += value.length;
    onProgress?.(at / total, at);
  }
  // What arrived, checked against the manifest's size and SHA-256 (the page shows the error).
  const model = new CharModel(favor, record, await verifyModelFile(record, bytes.subarray(0, at), { file: FILES[name] }));
  models.set(name, model);
  return model;
}

// Characters of the text the model can read (outside its alphabet: dropped): the last ones, at
// most its context, so that typing at the end of a long text moves the window with it.
export function readable(model, text) {
  return [...text].filter((c) => model.index.has(c)).slice(-model.context).join('');
}

// The heatmaps, the line view and the inspector draw at most the last HEATMAP_WINDOW positions
// (a long-context model reads up to 1,024): the square block of the last W queries and keys.
// Every error (the grid's frames, the error measures, the inspector's KL) covers the whole text.
export const HEATMAP_WINDOW = 256;

// Said under the text box: what the model reads of it, and what the heatmaps show of that.
function windowNote(model, text, used, shown) {
  const known = [...text].filter((c) => model.index.has(c)).length, all = [...text].length;
  const dropped = all - known;
  const n = (x) => x.toLocaleString('en-US');
  return `${known > used ? `the model reads the last ${n(used)} of ${n(known)} characters` : `${n(used)} characters`}` +
    `${dropped ? `; ${n(dropped)} outside the book's alphabet dropped` : ''}` +
    `${shown < used ? `; the heatmaps show the last ${n(shown)}` : ''}; predictions: the character after the inspected one (by default the last)`;
}

// The W×W block of an L×L matrix that starts at row and column `offset`.
export function cropWindow(M, L, offset) {
  const W = L - offset, out = new Float32Array(W * W);
  for (let i = 0; i < W; i++) out.set(M.subarray((offset + i) * L + offset, (offset + i) * L + L), i * W);
  return out;
}

// For each query of the window, what its drawn block leaves out: the KL of its whole row (the
// inspector's, row-kl.js) and the weight A and Â put on keys before the window.
function windowRows(A, Ahat, L, offset) {
  const W = L - offset, kl = new Float64Array(W), before = new Float32Array(W), beforeApprox = new Float32Array(W);
  for (let r = 0; r < W; r++) {
    const i = offset + r, row = i * L;
    let a0 = 0, b0 = 0;
    for (let j = 0; j < offset; j++) a0 += A[row + j], b0 += Ahat[row + j];
    kl[r] = rowKL(A, Ahat, row, i + 1).kl, before[r] = a0, beforeApprox[r] = b0;
  }
  return { kl, before, beforeApprox };
}

let forwardCache = { key: '', value: null };
const mapCache = new Map();

// The random features the controls ask for: Performer as soft VQ is positive features with
// orthogonal-fixed rows (the codebook identity), every other kernel is itself.
const featureKind = (p) => (p.kernel === 'performer-vq' ? { kernel: 'positive', sampling: 'orthogonal-fixed' } : { kernel: p.kernel, sampling: p.sampling });

// Layer l's random feature map under the controls, from feature seed `seed`: each layer its own W.
function randomFeatureMap(favor, p, dim, layers, l, seed = p.seed) {
  return favor.createFeatureMap({ dim, features: p.m, ...featureKind(p), seed: seed * layers + l });
}

// Codebook attention's options on keys K (L of them): k-means from `seed`, the controls' assignment.
export function codebookOptions(favor, spec, K, L, seed = spec.seed) {
  return { codebook: favor.kmeans(K, { clusters: Math.min(spec.clusters, L), seed }), assignment: spec.assignment, temperature: spec.temperature, causal: true };
}

// What VQ's error follows, per head of q, k [H, L, d] and their codebooks [H, c, d]: ‖q̃‖² D / d,
// with ‖q̃‖² the queries' mean and D the mean ‖c̄ − k̃‖² from each key to what stands in for it
// (x̃ = x/d^¼). Hard VQ puts its nearest codeword in its place (D is k-means' distortion); soft VQ
// at temperature T weighs every codeword by the key's responsibility softmax(−‖k̃ − c̃‖²/(2T)),
// and c̄ is their weighted mean (its weight e^{q̃·c̄} times a factor ≥ 1 from the codewords' spread
// around c̄, which follows the error less). Either way the logarithm of a key's weight changes by
// q̃·(c̄ − k̃), whose variance ‖q̃‖² D / d is were c̄ − k̃ to point anywhere.
export function codewordMiss(favor, q, k, codebook, { temperature = 0 } = {}) {
  const [H, L, d] = k.dims, c = codebook.dims.at(-2), scale = 1 / Math.sqrt(d);
  const stand = temperature > 0 ? weightedCodewords(favor, k, codebook, scale / temperature) : null;
  const out = new Float64Array(H);
  for (let h = 0; h < H; h++) {
    const keys = k.data.subarray(h * L * d, (h + 1) * L * d), words = codebook.data.subarray(h * c * d, (h + 1) * c * d);
    const queries = q.data.subarray(h * L * d, (h + 1) * L * d);
    let distortion = 0, length = 0;
    if (stand) {
      const mean = stand.subarray(h * L * d, (h + 1) * L * d);
      for (let x = 0; x < L * d; x++) distortion += (mean[x] - keys[x]) ** 2;
    } else {
      const { assign } = nearestCodewords(keys, L, words, c, d, favor);
      for (let j = 0; j < L; j++) for (let t = 0; t < d; t++) distortion += (words[assign[j] * d + t] - keys[j * d + t]) ** 2;
    }
    for (const x of queries) length += x * x;
    out[h] = ((scale * length) / L) * ((scale * distortion) / L) / d;
  }
  return out;
}

// Every key's responsibility-weighted codeword [H, L, d] (unscaled): softmax over y of
// −s‖k − c_y‖²/2, s = scale / T, as exact attention of the keys on the codewords' distanceRows
// with the codewords as values.
function weightedCodewords(favor, k, codebook, s) {
  const [H, L, d] = k.dims, c = codebook.dims.at(-2);
  const { k1, c1 } = distanceRows(k.data, H * L, codebook.data, H * c, d);
  return favor.exactAttention({ data: k1, dims: [H, L, d + 1] }, { data: c1, dims: [H, c, d + 1] }, codebook, { scale: s }).data;
}

// The approximation of the controls, for every layer.
function approximation(favor, model, p) {
  const layers = model.layers, hd = model.config.width / model.heads;
  if (p.kernel === 'vq' || p.kernel === 'soft-vq') {
    return { spec: { method: 'codebook', clusters: p.m, assignment: p.kernel === 'vq' ? 'hard' : 'soft', temperature: p.temperature, seed: p.seed },
      label: `${p.kernel === 'vq' ? 'hard' : 'soft'} VQ, k-means m = ${p.m} per head` };
  }
  const trained = usesExportedW(p, model.projections.length > 0);
  const { kernel, sampling } = featureKind(p);
  const key = JSON.stringify([model.record.name, trained, kernel, sampling, p.m, p.seed]);
  if (!mapCache.has(key)) {
    for (const maps of mapCache.values()) maps.forEach((f) => f.dispose());
    mapCache.clear();
    mapCache.set(key, trained ? model.exportedFeatureMaps() : Array.from({ length: layers }, (_, l) => randomFeatureMap(favor, p, hd, layers, l)));
  }
  return { spec: { method: 'favor', featureMaps: mapCache.get(key) },
    label: trained ? `FAVOR+ with the exported W (the last training draw; ${EXPORTED_W.kernel}, m = ${EXPORTED_W.m})`
      : p.kernel === 'performer-vq' ? `Performer as soft VQ, C = W·∜d, ${sampling}, m = ${p.m}` : `${kernel}, ${sampling}, m = ${p.m}` };
}

// The selected head's Â under DRAWS draws of the approximation (draws.js): the feature seed shown
// and the next ones, made as approximation() makes them, so that draw 0 is the Â shown. r is
// computeModel's result; null where there is one draw only (the exported W).
export function modelDraws(favor, model, p, r) {
  if (usesExportedW(p, model.projections.length > 0)) return null;
  const { Q, K, L, d, offset, spec } = r;
  const approxOf = (t) => {
    if (t === 0) return r.Ahat;
    if (spec.method === 'codebook') return favor.codebookAttentionMatrix(Q, K, codebookOptions(favor, spec, K, L, spec.seed + t)).data;
    const map = randomFeatureMap(favor, p, d, model.layers, p.layer, p.seed + t);
    try {
      return favor.favorAttentionMatrix(Q, K, { featureMap: map, causal: true }).data;
    } finally {
      map.dispose();
    }
  };
  return spreadOfDraws(approxOf, (a) => (offset > 0 ? cropWindow(a, L, offset) : a));
}

function bits(model, logits, ids) {
  const V = model.vocab.length;
  let total = 0;
  for (let i = 0; i + 1 < ids.length; i++) {
    const row = logits.data.subarray(i * V, (i + 1) * V);
    let top = -Infinity;
    for (const x of row) top = Math.max(top, x);
    let sum = 0;
    for (const x of row) sum += Math.exp(x - top);
    total += (top + Math.log(sum) - row[ids[i + 1]]) / Math.LN2;
  }
  return ids.length > 1 ? total / (ids.length - 1) : NaN;
}

// One setting: { Q, K, V, L, chars, extras } for the selected layer and head, plus everything
// the model panels draw. timings gets the parts.
export function computeModel(favor, model, p, timings) {
  const text = readable(model, p.text);
  if (text.length < 2) throw Object.assign(new RangeError('type at least 2 characters the model knows (letters, digits, punctuation of the book)'), { field: 'text' });
  const ids = model.encode(text), L = ids.length, H = model.heads, hd = model.config.width / H;
  let t = performance.now();
  const fkey = JSON.stringify([model.record.name, text]);
  timings.forwardCached = forwardCache.key === fkey;
  if (!timings.forwardCached) {
    const exact = model.forward(ids, { method: 'exact' }, { capture: true });
    forwardCache = { key: fkey, value: exact };
  }
  const exact = forwardCache.value;
  timings.inputs = performance.now() - t;
  t = performance.now();
  const { spec, label: named } = approximation(favor, model, p);
  let label = named;
  // k-means with as many codewords as keys gives each key its own: hard VQ is exact, and no test
  // of VQ; soft responsibilities still weigh every codeword, so soft VQ is not.
  if (spec.method === 'codebook' && spec.clusters >= L) {
    label += spec.assignment === 'hard' ? ` (m ≥ L = ${L}: every key is its own codeword, so Â = A: trivially exact)`
      : ` (m ≥ L = ${L}: every key is its own codeword, yet its responsibilities at T = ${fmtT(spec.temperature)} also weigh the other keys' codewords)`;
  }
  const approx = model.forward(ids, spec);
  timings.approxModel = performance.now() - t;

  // Every head: A, and Â under the approximation of its layer, and their error.
  t = performance.now();
  const overview = [];
  for (let layer = 0; layer < model.layers; layer++) {
    const { q, k } = exact.qk[layer];
    const spread = causalKeySpread(k);
    // a rotary model's keys before their rotation by position (what they hold, not where they are)
    const unrotated = model.rotary ? causalKeySpread(model.rotary.unrotate({ data: Float32Array.from(k.data), dims: k.dims }, 0)) : null;
    const A = favor.attentionMatrix(q, k, { causal: true });
    const book = spec.method === 'codebook' ? codebookOptions(favor, spec, k, L) : null;
    const Ahat = book ? favor.codebookAttentionMatrix(q, k, book) : favor.favorAttentionMatrix(q, k, { featureMap: spec.featureMaps[layer], causal: true });
    // hard VQ with fewer codewords than keys (with as many, Â = A), soft VQ with any
    const residual = book?.assignment === 'soft' ? codewordMiss(favor, q, k, book.codebook, { temperature: book.temperature })
      : book?.assignment === 'hard' && book.codebook.dims.at(-2) < L ? codewordMiss(favor, q, k, book.codebook) : null;
    // SDERF: what its variance predicts; ADERF: its rebalanced keys' spread (dense-variance.js)
    const predicted = p.kernel === 'sderf' && L > 1 ? predictedKL(q, k, { kernel: 'sderf', features: p.m }) : null;
    const rebalanced = p.kernel === 'aderf' ? rebalancedSpread(q, k) : null;
    for (let h = 0; h < H; h++) {
      const a = { data: A.data.slice(h * L * L, (h + 1) * L * L), dims: [L, L] };
      const b = { data: Ahat.data.slice(h * L * L, (h + 1) * L * L), dims: [L, L] };
      overview.push({ layer, head: h, A: a.data, Ahat: b.data, errors: favor.compare(a, b), spread: spread[h], unrotated: unrotated?.[h], residual: residual?.[h], predicted: predicted?.[h], rebalanced: rebalanced?.[h] });
    }
  }
  timings.overview = performance.now() - t;
  const pick = overview[p.layer * H + p.head];
  const shown = Math.min(L, HEATMAP_WINDOW), offset = L - shown;
  const headTensor = (x) => ({ data: x.data.slice(p.head * L * hd, (p.head + 1) * L * hd), dims: [L, hd] });
  const { q, k, v } = exact.qk[p.layer];
  return {
    Q: headTensor(q), K: headTensor(k), V: headTensor(v), L, d: hd, A: pick.A, Ahat: pick.Ahat, text,
    spec, label, offset,
    extras: {
      // chars: the drawn window's characters; shown: { offset, size, total } of the whole text
      chars: text.slice(offset), label, heads: H, layers: model.layers, window: windowNote(model, p.text, L, shown),
      shown: { offset, size: shown, total: L },
      ...(offset > 0 && { rows: windowRows(pick.A, pick.Ahat, L, offset) }),
      overview: overview.map((o) => ({ layer: o.layer, head: o.head, small: thumbnail(o.A, L), errors: o.errors, spread: o.spread, unrotated: o.unrotated, residual: o.residual, predicted: o.predicted, rebalanced: o.rebalanced })),
      bpc: { exact: bits(model, exact.logits, ids), approx: bits(model, approx.logits, ids) },
      // every drawn row's five likeliest next characters, so that inspecting another row is a redraw
      top: {
        exact: Array.from({ length: shown }, (_, i) => top5(model, exact.logits, offset + i)),
        approx: Array.from({ length: shown }, (_, i) => top5(model, approx.logits, offset + i)),
      },
    },
  };
}

// The grid's picture of a head: the L×L matrix sampled at THUMB × THUMB (nearest neighbour), so
// that 16 small pictures cross to the page instead of 16 full matrices.
export const THUMB = 64;
function thumbnail(A, L) {
  const out = new Float32Array(THUMB * THUMB);
  for (let y = 0; y < THUMB; y++) {
    const i = Math.min(L - 1, Math.floor((y * L) / THUMB));
    for (let x = 0; x < THUMB; x++) out[y * THUMB + x] = A[i * L + Math.min(L - 1, Math.floor((x * L) / THUMB))];
  }
  return out;
}

// model.top(logits, i, 5) in one pass over the row without sorting it (it runs for every row).
function top5(model, logits, i) {
  const V = model.chars.length, row = logits.data.subarray(i * V, (i + 1) * V);
  let max = -Infinity;
  for (let v = 0; v < V; v++) if (row[v] > max) max = row[v];
  let sum = 0;
  for (let v = 0; v < V; v++) sum += Math.exp(row[v] - max);
  const best = [];
  for (let v = 0; v < V; v++) {
    if (best.length === 5 && row[v] <= row[best[4]]) continue;
    let at = best.length < 5 ? best.length : 4;
    while (at > 0 && row[best[at - 1]] < row[v]) at--;
    best.splice(at, 0, v);
    if (best.length > 5) best.pop();
  }
  return best.map((v) => ({ char: model.chars[v], p: Math.exp(row[v] - max) / sum }));
}

// Continues the text by n characters with exact attention and with the approximation, the same
// sampling seed; each with its characters per second (through causal states, one position per append).
export function generate(favor, model, p, n) {
  const text = readable(model, p.text);
  const { spec, label } = approximation(favor, model, p);
  const exact = model.generate(text, n, { method: 'exact' }, { seed: p.seed });
  const approx = model.generate(text, n, spec, { seed: p.seed });
  return { exact, approx, label, prompt: text.slice(-Math.min(40, Math.max(0, model.context - n))), promptLength: text.length };
}

// The long-text view: long-performer continues the text (its last `context` readable characters)
// with its exact key/value cache and with its FAVOR+ state (its exported W; over a sliding window
// of p.window positions when it is not 0), the same prompt and the same sampling seed.
// { prompt, exact, favor (Generations), label, prefillMs, dispose() }.
export function startLongGeneration(model, p) {
  const text = readable(model, p.text);
  const maps = model.exportedFeatureMaps();
  const runs = {}, prefillMs = {};
  const window = p.window || undefined;
  try {
    for (const [method, spec] of [['exact', { method: 'exact' }], ['favor', { method: 'favor', featureMaps: maps, ...(window && { window }) }]]) {
      const t0 = performance.now();
      runs[method] = model.startGeneration(text, spec, { seed: p.seed });
      prefillMs[method] = performance.now() - t0;
    }
  } catch (e) {
    Object.values(runs).forEach((r) => r.dispose());
    maps.forEach((f) => f.dispose());
    throw e;
  }
  const m = model.projections[0]?.dims[0];
  return {
    prompt: text, exact: runs.exact, favor: runs.favor, prefillMs,
    label: `its exported W (the last training draw), positive features, m = ${m}` +
      (window ? `, over a sliding window of ${window}: blocks of ${window / 4}, each character seeing its block up to itself and the 3 before it, ` +
        'through 4 states per layer and head, the window\'s and one per block after its oldest' : ''),
    dispose() { runs.exact.dispose(); runs.favor.dispose(); maps.forEach((f) => f.dispose()); },
  };
}

// n characters of one generation, timed around its next() calls only:
// { text, ms, charsPerSecond, stateBytes, length }.
export function generateBlock(run, n) {
  const chars = [];
  const t0 = performance.now();
  for (let t = 0; t < n; t++) chars.push(run.next().char);
  const ms = performance.now() - t0;
  return { text: chars.join(''), ms, charsPerSecond: n / (ms / 1000), stateBytes: run.stateBytes, length: run.length };
}
