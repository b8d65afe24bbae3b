// Runs in an empty folder where only the packed tarball is installed, with a PATH holding
// only node and npm. Checks the package against a float64 JS reference and prints a JSON
// summary (tests/package/install.test.mjs asserts on it).
import { readFile } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';

import { loadFavor, version } from 'favor-attention';

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
const next = generator(7);
const tensor = (dims, offset = 0) => ({
  data: Float32Array.from({ length: dims.reduce((a, b) => a * b, 1) }, () => next() + offset),
  dims,
});

// Reference: one head, float64. scores(i, j) -> weight; out = normalized weights times v.
function weightedSum(L, S, dv, weight, v, causal) {
  const out = new Float64Array(L * dv);
  for (let i = 0; i < L; i++) {
    let total = 0;
    const w = [];
    for (let j = 0; j < S; j++) {
      w.push(causal && j > i ? 0 : weight(i, j));
      total += w[j];
    }
    for (let j = 0; j < S; j++) {
      for (let c = 0; c < dv; c++) out[i * dv + c] += (w[j] / total) * v[j * dv + c];
    }
  }
  return out;
}

function dot(a, ai, b, bi, d) {
  let s = 0;
  for (let c = 0; c < d; c++) s += a[ai * d + c] * b[bi * d + c];
  return s;
}

// softmax(scale q k^T) v per head over leading dims.
function exactReference(q, k, v, { causal = false, scale } = {}) {
  const [L, d] = q.dims.slice(-2);
  const [S, dv] = v.dims.slice(-2);
  const heads = q.data.length / (L * d);
  const s = scale ?? 1 / Math.sqrt(d);
  const out = new Float64Array(heads * L * dv);
  for (let h = 0; h < heads; h++) {
    const qh = q.data.subarray(h * L * d, (h + 1) * L * d);
    const kh = k.data.subarray(h * S * d, (h + 1) * S * d);
    const vh = v.data.subarray(h * S * dv, (h + 1) * S * dv);
    const scores = (i, j) => s * dot(qh, i, kh, j, d);
    // subtract each row's max for stability
    const max = Array.from({ length: L }, (_, i) => Math.max(...Array.from({ length: S }, (_, j) => scores(i, j))));
    out.set(weightedSum(L, S, dv, (i, j) => Math.exp(scores(i, j) - max[i]), vh, causal), h * L * dv);
  }
  return out;
}

// FAVOR+ for an explicit W [m, d]: phi(x) = exp(W x~ - |x~|^2 / 2) / sqrt(m), x~ = x sqrt(scale).
function favorPositiveReference(q, k, v, w, { causal = false } = {}) {
  const [L, d] = q.dims;
  const [S, dv] = v.dims;
  const m = w.dims[0];
  const r = Math.sqrt(1 / Math.sqrt(d));
  const phi = (x, i) => {
    const xs = Array.from({ length: d }, (_, c) => x[i * d + c] * r);
    const norm = xs.reduce((a, b) => a + b * b, 0) / 2;
    return Array.from({ length: m }, (_, f) => Math.exp(xs.reduce((a, b, c) => a + b * w.data[f * d + c], 0) - norm) / Math.sqrt(m));
  };
  const qf = Array.from({ length: L }, (_, i) => phi(q.data, i));
  const kf = Array.from({ length: S }, (_, j) => phi(k.data, j));
  return weightedSum(L, S, dv, (i, j) => qf[i].reduce((a, b, f) => a + b * kf[j][f], 0), v.data, causal);
}

function maxRelDiff(actual, expected) {
  let worst = 0;
  for (let i = 0; i < expected.length; i++) {
    const diff = Math.abs(actual[i] - expected[i]) / Math.max(1, Math.abs(expected[i]));
    worst = Math.max(worst, Number.isNaN(diff) ? Infinity : diff);
  }
  return worst;
}

const favor = await loadFavor();
const scalar = await loadFavor({ simd: false });
const summary = { version, info: favor.info, scalarInfo: scalar.info, cores: availableParallelism(), checks: {} };
// Each check records a number (a max relative difference or an error measure) or the error
// it threw, so that one failure does not hide the others.
const check = async (name, compute) => {
  try {
    summary.checks[name] = await compute();
  } catch (error) {
    summary.checks[name] = String(error?.stack ?? error);
  }
};

// Exact attention: cross (L != S, dv != d), causal, batched, explicit scale.
const q = tensor([5, 4]);
const k = tensor([7, 4]);
const v = tensor([7, 3], 1);
await check('exact cross', () => maxRelDiff(favor.exactAttention(q, k, v).data, exactReference(q, k, v)));
await check('exact cross scalar', () => maxRelDiff(scalar.exactAttention(q, k, v).data, exactReference(q, k, v)));
const qs = tensor([6, 4]);
const ks = tensor([6, 4]);
const vs = tensor([6, 4], 1);
await check('exact causal scale 0.7', () => maxRelDiff(
  favor.exactAttention(qs, ks, vs, { causal: true, scale: 0.7 }).data,
  exactReference(qs, ks, vs, { causal: true, scale: 0.7 })));
const qb = tensor([2, 3, 5, 4]);
const kb = tensor([2, 3, 5, 4]);
const vb = tensor([2, 3, 5, 2], 1);
await check('exact batched [2,3,5,*]', () => {
  const batched = favor.exactAttention(qb, kb, vb);
  if (batched.dims.join() !== '2,3,5,2') throw new Error(`dims [${batched.dims}]`);
  return maxRelDiff(batched.data, exactReference(qb, kb, vb));
});
await check('attention matrix rows sum to 1', () => {
  const matrix = favor.attentionMatrix(q, k);
  if (matrix.dims.join() !== '5,7') throw new Error(`dims [${matrix.dims}]`);
  return Math.max(...Array.from({ length: 5 }, (_, i) =>
    Math.abs(matrix.data.subarray(i * 7, i * 7 + 7).reduce((a, b) => a + b, 0) - 1)));
});

// FAVOR+ with an explicit projection is exactly the estimator for that W.
const w = tensor([8, 4]);
await check('favor+ explicit W', () => {
  const explicit = favor.createFeatureMap({ projection: w, kernel: 'positive' });
  try {
    return maxRelDiff(favor.favorAttention(qs, ks, vs, { featureMap: explicit }).data, favorPositiveReference(qs, ks, vs, w));
  } finally {
    explicit.dispose();
  }
});
await check('favor+ explicit W causal', () => {
  const explicit = favor.createFeatureMap({ projection: w, kernel: 'positive' });
  try {
    return maxRelDiff(favor.favorAttention(qs, ks, vs, { featureMap: explicit, causal: true, chunk: 4 }).data,
      favorPositiveReference(qs, ks, vs, w, { causal: true }));
  } finally {
    explicit.dispose();
  }
});

// FAVOR+ with m = 2048 random features is close to exact attention; SIMD and scalar agree.
const qn = tensor([16, 8]);
const kn = tensor([16, 8]);
const vn = tensor([16, 8], 1);
const favorOut = (instance) => {
  const map = instance.createFeatureMap({ dim: 8, features: 2048, kernel: 'positive', seed: 1 });
  try {
    return instance.favorAttention(qn, kn, vn, { featureMap: map });
  } finally {
    map.dispose();
  }
};
await check('favor+ m=2048 relative error', () => favor.outputRelativeError(favor.exactAttention(qn, kn, vn), favorOut(favor)));
await check('favor+ simd vs scalar', () => maxRelDiff(favorOut(scalar).data, favorOut(favor).data));

// The Node loader's options, with the installed files.
const wasmPath = fileURLToPath(import.meta.resolve('favor-attention/dist/favor-simd.wasm'));
const reference = favor.exactAttention(q, k, v).data;
for (const [name, options] of Object.entries({
  'wasmUrl path': () => ({ simd: true, wasmUrl: wasmPath }),
  'wasmUrl URL': () => ({ simd: true, wasmUrl: new URL(import.meta.resolve('favor-attention/dist/favor-simd.wasm')) }),
  'locateFile': () => ({ locateFile: (file) => new URL(import.meta.resolve(`favor-attention/dist/${file}`)) }),
  'wasmBinary': async () => ({ simd: true, wasmBinary: await readFile(wasmPath) }),
})) {
  await check(`load with ${name}`, async () => {
    const other = await loadFavor(await options());
    return maxRelDiff(other.exactAttention(q, k, v).data, reference);
  });
}

// Exports map: the package.json and dist/* are exported, internals are not.
summary.packageJsonExported = (await import('favor-attention/package.json', { with: { type: 'json' } })).default.version;
try {
  await import('favor-attention/web/api.js');
  summary.internalsExported = true;
} catch (error) {
  summary.internalsExported = error.code;
}
process.stdout.write(JSON.stringify(summary));
