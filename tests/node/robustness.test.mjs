// Robustness: memory stays flat over 10,000 mixed calls; out of memory inside wasm is
// a RangeError and the instance keeps working; numerical extremes (norms up to 1e3, identical,
// one-hot and subnormal rows, L = 1, S = 1, m = 1, d = 1) give finite, correct outputs against a
// float64 log-domain reference, or a documented RangeError; the trigonometric kernel never gives
// NaN. Heap figures are reported as test diagnostics.
import assert from 'node:assert/strict';
import { before, test } from 'node:test';

import { loadFavor } from 'favor-attention';

import { assertBelow, normalTensor, rng } from './helpers.mjs';
import * as ref from './reference.mjs';

let favor;
before(async () => {
  favor = await loadFavor();
});

const KERNELS = ['positive', 'hyperbolic', 'trigonometric', 'relu', 'oprf', 'sderf', 'aderf'];
const fill = (dims, f) => {
  const n = dims.reduce((a, b) => a * b, 1);
  return { data: Float32Array.from({ length: n }, (_, i) => f(i)), dims: [...dims] };
};
const allFinite = (a) => a.every(Number.isFinite);

// A small correctness check in the same instance (as in misuse.test.mjs).
const cq = normalTensor([2, 5, 8], 901), ck = normalTensor([2, 7, 8], 902), cv = normalTensor([2, 7, 3], 903);
const cExpected = ref.exactAttention(cq, ck, cv);
function assertWorks(instance, what) {
  assertBelow(ref.maxRelError(instance.exactAttention(cq, ck, cv).data, cExpected.data), 1e-5, `exactAttention after ${what}`);
  const map = instance.createFeatureMap({ dim: 8, features: 8, seed: 1 });
  const expected = ref.favorAttention('positive', map.projection, cq, ck, cv);
  assertBelow(ref.maxRelError(instance.favorAttention(cq, ck, cv, { featureMap: map }).data, expected.data), 1e-4, `favorAttention after ${what}`);
  map.dispose();
}

// ---------------------------------------------------------------------------------------------
// Memory

// One of twelve kinds of call, each moving ~50 KB through the heap (a leaked input or output
// per call would grow the heap by hundreds of MB over 10,000 calls).
function mixedCall(instance, i, maps) {
  const L = 32, d = 16, dv = 8;
  const g = rng(i);
  const t = (dims) => fill(dims, () => g.normal());
  const q = t([2, L, d]), k = t([2, L, d]), v = t([2, L, dv]);
  const causal = i % 2 === 0;
  const map = maps[i % KERNELS.length];  // the head-dim 16 maps
  switch (i % 12) {
    case 0: return instance.exactAttention(q, k, v, { causal, ...(i % 3 === 0 && { out: new Float32Array(2 * L * dv) }) });
    case 1: return instance.attentionMatrix(q, k, { causal, scale: 0.1 });
    case 2: return instance.favorAttention(q, k, v, { featureMap: map, causal, chunk: 1 + (i % 40) });
    case 3: return instance.favorAttentionMatrix(q, k, { featureMap: map, causal });
    case 4: {  // a feature map made and disposed within the call
      const kernel = KERNELS[i % KERNELS.length];
      const fit = (kernel === 'sderf' || kernel === 'aderf') && i % 3 === 0 ? { fit: { q, k } } : {};
      const own = instance.createFeatureMap({ dim: d, features: 64, kernel, seed: i, ...fit });
      try {
        return instance.favorAttention(q, k, v, { featureMap: own });
      } finally {
        own.dispose();
      }
    }
    case 5: return instance.codebookAttention(q, k, v, { codebook: t([6, d]), assignment: ['hard', 'soft', 'gaussian'][i % 3], causal });
    case 6: return instance.codebookAttentionMatrix(q, k, { codebook: t([2, 6, d]), assignment: ['hard', 'soft', 'gaussian'][i % 3] });
    case 7: return instance.kmeans(k, { clusters: 4, iterations: 3, seed: i });
    case 8: return instance.codebookFromFeatureMap(map, { scale: 0.5 });
    case 9: return [instance.compare(instance.attentionMatrix(q, k), instance.favorAttentionMatrix(q, k, { featureMap: map })),
      instance.outputRelativeError(instance.exactAttention(q, k, v), instance.favorAttention(q, k, v, { featureMap: map }))];
    case 10: {  // errors raised inside wasm, after the inputs were copied in
      q.data[i % q.data.length] = NaN;
      assert.throws(() => instance.exactAttention(q, k, v), RangeError);
      assert.throws(() => instance.favorAttention(q, k, v, { featureMap: map }), RangeError);
      return assert.throws(() => instance.codebookAttention(q, k, v, { codebook: t([3, d]), temperature: -1 }), RangeError);
    }
    default: {  // errors raised in JS, and out of memory inside wasm (std::bad_alloc in the core)
      assert.throws(() => instance.favorAttention(q, k, v, { featureMap: map, chunk: 0 }), RangeError);
      assert.throws(() => instance.attentionMatrix(q, k, { out: new Float32Array(i % 50) }), RangeError);  // raised inside wasm
      if (i % 120 === 11) {
        const big = fill([40000, 1], () => 0.5);
        assert.throws(() => instance.favorAttention(big, big, big, { featureMap: maps[maps.length - 1], causal: true, chunk: 40000 }), RangeError);
      }
      return assert.throws(() => instance.kmeans(k, { clusters: L + 1 }), RangeError);
    }
  }
}

test('10,000 mixed calls: the wasm heap does not grow after the first 100 and every byte is freed', async (t) => {
  const instance = await loadFavor();
  const start = instance.memory();
  const maps = KERNELS.map((kernel, i) => instance.createFeatureMap({ dim: 16, features: 32, kernel, seed: i }));
  maps.push(instance.createFeatureMap({ dim: 1, features: 4 }));  // for the out-of-memory call
  for (let i = 0; i < 100; i++) mixedCall(instance, i, maps);
  const after100 = instance.memory();
  for (let i = 100; i < 10000; i++) mixedCall(instance, i, maps);
  const after10000 = instance.memory();
  t.diagnostic(`heap bytes: start ${start.heapBytes}, after 100 calls ${after100.heapBytes}, after 10,000 ${after10000.heapBytes}`);
  t.diagnostic(`bytes in use: start ${start.usedBytes}, after 100 calls ${after100.usedBytes}, after 10,000 ${after10000.usedBytes}`);
  assert.ok(after10000.heapBytes <= after100.heapBytes, `heap grew from ${after100.heapBytes} to ${after10000.heapBytes}`);
  assert.equal(after10000.usedBytes, after100.usedBytes, 'bytes in use after 10,000 calls differ from after 100');
  for (const map of maps) map.dispose();
  assert.equal(instance.memory().usedBytes, start.usedBytes, 'disposing every feature map frees every byte');
  assertWorks(instance, '10,000 mixed calls');
});

// ---------------------------------------------------------------------------------------------
// Out of memory inside wasm

test('out of memory inside wasm is a RangeError, not an abort, and the instance keeps working', async (t) => {
  const instance = await loadFavor();
  const start = instance.memory();
  const big = fill([40000, 1], (i) => Math.sin(i));
  const map = instance.createFeatureMap({ dim: 1, features: 4 });
  const cases = [
    // causal blocks of chunk x chunk floats: 40000^2 * 4 bytes = 6.4 GB, allocated inside the core
    ['favorAttention, a 40000 x 40000 causal block', () => instance.favorAttention(big, big, big, { featureMap: map, causal: true, chunk: 40000 })],
    ['codebookAttention, a 40000 x 40000 causal block', () => instance.codebookAttention(big, big, big, { codebook: fill([3, 1], (i) => i), causal: true, chunk: 40000 })],
    // W (m x d floats) and orthogonal sampling's blocks (min(m, d) x d doubles): m * d overflows 32-bit sizes
    ['createFeatureMap, an orthogonal 46341 x 46341 projection', () => instance.createFeatureMap({ dim: 46341, features: 46341 })],
    ['createFeatureMap, an orthogonal 65536 x 65536 projection', () => instance.createFeatureMap({ dim: 65536, features: 65536, sampling: 'orthogonal-fixed' })],
    // outputs beyond one allocation (2 GiB) or the 4 GiB heap
    ['attentionMatrix, a [40000, 40000] output', () => instance.attentionMatrix(big, big)],
    ['randomCodebook, a [2^24, 2^20] output', () => instance.randomCodebook({ clusters: 2 ** 24, dim: 2 ** 20 })],
  ];
  for (const [label, call] of cases) {
    assert.throws(call, (e) => e instanceof RangeError && /memory|allocation|GiB/.test(e.message), label);
    assertWorks(instance, label);
  }
  map.dispose();
  const end = instance.memory();
  t.diagnostic(`heap bytes before ${start.heapBytes}, after ${end.heapBytes}; bytes in use before ${start.usedBytes}, after ${end.usedBytes}`);
  assert.equal(end.usedBytes, start.usedBytes, 'nothing stays allocated after the failed requests');
});

// ---------------------------------------------------------------------------------------------
// Numerical extremes, against a float64 log-domain reference

// Rows of one head as Float64Array rows, scaled by `root`.
function rows(tensor, h, root = 1) {
  return ref.headRows(tensor, h).map((r) => r.map((x) => x * Math.fround(root)));
}
const logSumExp = (xs) => {
  const top = Math.max(...xs);
  if (top === -Infinity) return -Infinity;
  let s = 0;
  for (const x of xs) s += Math.exp(x - top);
  return top + Math.log(s);
};
const dot = (a, b) => a.reduce((s, x, i) => s + x * b[i], 0);
const sqNorm = (a) => dot(a, a);

// Attention from per-feature log weights: A_ij = softmax_j(logsumexp_r(lq_ir + lk_jr)), masked
// when causal; returns the matrix (v undefined) or A v, as flat arrays.
function logDomainAttention(lq, lk, v, causal) {
  const out = [];
  for (let i = 0; i < lq.length; i++) {
    const visible = causal ? i + 1 : lk.length;
    const logw = [];
    for (let j = 0; j < visible; j++) logw.push(logSumExp(lq[i].map((x, r) => x + lk[j][r])));
    const top = Math.max(...logw);
    const w = logw.map((x) => Math.exp(x - top));
    const total = w.reduce((a, b) => a + b, 0);
    if (!v) {
      for (let j = 0; j < lk.length; j++) out.push(j < visible ? w[j] / total : 0);
    } else {
      for (let c = 0; c < v[0].length; c++) out.push(w.reduce((s, wj, j) => s + wj * v[j][c], 0) / total);
    }
  }
  return out;
}

// Log features of a positive-valued kernel (docs/design.md §4) for scaled rows.
function logFeatures(kernel, w, xs, { epsilon, oprf }) {
  const m = w.length;
  return xs.map((x) => {
    const half = sqNorm(x) / 2;
    const out = [];
    for (let r = 0; r < m; r++) {
      const t = dot(w[r], x);
      if (kernel === 'positive') out.push(t - half - Math.log(m) / 2);
      else if (kernel === 'hyperbolic') out.push(t - half - Math.log(2 * m) / 2);
      else if (kernel === 'oprf') out.push(Math.log(oprf.D) + oprf.a * sqNorm(w[r]) + oprf.b * t - half - Math.log(m) / 2);
      else if (kernel === 'relu') out.push(Math.log(Math.max(t, 0) + epsilon));
    }
    if (kernel === 'hyperbolic') for (let r = 0; r < m; r++) out.push(-dot(w[r], x) - half - Math.log(2 * m) / 2);
    return out;
  });
}

// oprf's D = (1 - 4A)^(d/4) can overflow in double at large norms; keep it as a log.
function oprfLog(xs, ys) {
  const c = ref.oprfCoefficients(ref.oprfRho(xs, ys), xs[0].length);
  const logD = (xs[0].length / 4) * Math.log(1 - 4 * c.a);
  return { a: c.a, b: c.b, D: Math.exp(logD) || Number.MIN_VALUE, logD };
}

function referenceFor(method, { q, k, v, causal, scale, map, codebook, assignment = 'hard', temperature = 1 }) {
  const { heads, cols: d } = ref.shape(q);
  const s = scale ?? 1 / Math.sqrt(d);
  const out = [];
  for (let h = 0; h < heads; h++) {
    const vh = v ? ref.headRows(v, h) : undefined;
    let lq, lk;
    if (method === 'exact') {
      const qs = ref.headRows(q, h), ks = ref.headRows(k, h);
      lq = qs.map((x) => ks.map((y) => s * dot(x, y)));
      lk = ks.map((_, j) => ks.map((__, r) => (r === j ? 0 : -Infinity)));
    } else if (method === 'favor') {
      const root = Math.sqrt(s);
      const qs = rows(q, h, root), ks = rows(k, h, root);
      const w = ref.projectionRows(map.projection);
      const opts = { epsilon: map.epsilon };
      if (map.kernel === 'oprf') {
        const o = oprfLog(qs, ks);
        opts.oprf = { a: o.a, b: o.b, D: 1 };  // log D is a constant: it cancels in A
      }
      lq = logFeatures(map.kernel, w, qs, opts);
      lk = logFeatures(map.kernel, w, ks, opts);
    } else {  // codebook
      const root = Math.sqrt(s);
      const qs = rows(q, h, root), ks = rows(k, h, root);
      const cs = rows(codebook, codebook.dims.length > 2 ? h : 0, root);
      lq = qs.map((x) => cs.map((c) => dot(x, c)));
      lk = ks.map((y) => {
        const e = cs.map((c) => dot(y, c) - sqNorm(c) / 2);
        if (assignment === 'gaussian') return e.map((x) => x - sqNorm(y) / 2);
        if (assignment === 'soft') {
          const z = logSumExp(e.map((x) => x / temperature));
          return e.map((x) => x / temperature - z);
        }
        const best = e.indexOf(Math.max(...e));
        return e.map((_, r) => (r === best ? 0 : -Infinity));
      });
    }
    out.push(...logDomainAttention(lq, lk, vh, causal));
  }
  return Float64Array.from(out);
}

// Inputs of the extreme cases: [label, q, k, v] (k and v have S rows; causal cases need L = S).
function extremeInputs() {
  const L = 6, S = 6, d = 4, dv = 3;
  const unitRows = (dims, seed, norm) => {
    const t = normalTensor(dims, seed);
    const cols = dims[dims.length - 1];
    for (let r = 0; r < t.data.length / cols; r++) {
      const row = t.data.subarray(r * cols, (r + 1) * cols);
      const n = Math.sqrt(row.reduce((a, x) => a + x * x, 0));
      for (let c = 0; c < cols; c++) row[c] = (row[c] / n) * norm;
    }
    return t;
  };
  // row r is hot at column (3r + seed) mod d
  const oneHot = (dims, seed, value) => {
    const cols = dims[dims.length - 1];
    return fill(dims, (i) => (i % cols === (3 * Math.floor(i / cols) + seed) % cols ? value : 0));
  };
  const v = normalTensor([L, dv], 77);
  return [
    ['norms 1e3', unitRows([L, d], 1, 1e3), unitRows([S, d], 2, 1e3), v],
    ['norms 1e3 (q) and 1e-3 (k)', unitRows([L, d], 3, 1e3), unitRows([S, d], 4, 1e-3), v],
    ['identical rows', fill([L, d], (i) => [0.3, -1.2, 2.0, 0.7][i % d]), fill([S, d], (i) => [1.1, 0.4, -0.5, 0.2][i % d]), v],
    ['identical rows of norm 1e3', fill([L, d], (i) => [500, -500, 500, -500][i % d]), fill([S, d], (i) => [-500, 500, 500, 500][i % d]), v],
    ['one-hot rows', oneHot([L, d], 5, 1), oneHot([S, d], 6, 1), v],
    ['one-hot rows of height 1e3', oneHot([L, d], 7, 1e3), oneHot([S, d], 8, -1e3), v],
    ['subnormal values', fill([L, d], (i) => (i % 3 - 1) * 1e-40), fill([S, d], (i) => (i % 5 - 2) * 3e-41), v],
    ['zeros', fill([L, d], () => 0), fill([S, d], () => 0), v],
    ['mixed scales 1e-30 .. 1e3', fill([L, d], (i) => [1e-30, 1e3, -7, 1e-20][i % d]), fill([S, d], (i) => [1e3, -1e-30, 3, 1e2][(i + 1) % d]), v],
    ['v of magnitude 1e30 and 1e-30', unitRows([L, d], 9, 2), unitRows([S, d], 10, 2), fill([S, dv], (i) => (i % 2 ? 1e30 : -1e-30) * (1 + i / 7))],
  ];
}

// Tolerance relative to max |v| (or 1 for matrices). Float32 rounding of scores/exponents of size
// X costs ~X * 6e-8 relative in the weights: at norms 1e3 (scores up to 2.5e5) the softmax is
// one-hot and both sides pick the same key.
const TOLERANCE = 2e-3;

function check(label, got, expected, scaleOf) {
  assert.equal(got.length, expected.length, `${label}: length`);
  assert.ok(allFinite(got), `${label}: non-finite output`);
  let worst = 0;
  for (let i = 0; i < got.length; i++) worst = Math.max(worst, Math.abs(got[i] - expected[i]));
  assert.ok(worst <= TOLERANCE * scaleOf, `${label}: max abs error ${worst} > ${TOLERANCE} * ${scaleOf}`);
}

test('numerical extremes: exact attention and its matrix are finite and correct', () => {
  for (const [label, q, k, v] of extremeInputs()) {
    for (const causal of [false, true]) {
      const vmax = Math.max(...v.data.map(Math.abs));
      check(`exactAttention ${label} causal=${causal}`, favor.exactAttention(q, k, v, { causal }).data, referenceFor('exact', { q, k, v, causal }), vmax);
      check(`attentionMatrix ${label} causal=${causal}`, favor.attentionMatrix(q, k, { causal }).data, referenceFor('exact', { q, k, causal }), 1);
    }
  }
});

test('numerical extremes: FAVOR (positive, hyperbolic, relu, oprf) is finite and equals its float64 estimator', () => {
  for (const kernel of ['positive', 'hyperbolic', 'relu', 'oprf']) {
    for (const m of [1, 16]) {
      const map = favor.createFeatureMap({ dim: 4, features: m, kernel, seed: 11 });
      for (const [label, q, k, v] of extremeInputs()) {
        for (const causal of [false, true]) {
          const vmax = Math.max(...v.data.map(Math.abs));
          const what = `${kernel} m=${m} ${label} causal=${causal}`;
          check(`favorAttention ${what}`, favor.favorAttention(q, k, v, { featureMap: map, causal, chunk: 4 }).data, referenceFor('favor', { q, k, v, causal, map }), vmax);
          check(`favorAttentionMatrix ${what}`, favor.favorAttentionMatrix(q, k, { featureMap: map, causal }).data, referenceFor('favor', { q, k, causal, map }), 1);
        }
      }
      map.dispose();
    }
  }
});

test('numerical extremes: codebook attention (hard, soft, gaussian) is finite and correct', () => {
  const codebooks = [
    ['unit codebook', normalTensor([3, 4], 21)],
    ['codebook of norm 1e3', fill([3, 4], (i) => [600, -800, 0, 0, 0, 0, 1e3, 0, -300, 400, 500, 0][i])],
    ['one-word codebook', fill([1, 4], (i) => i - 1.5)],
  ];
  for (const assignment of ['hard', 'soft', 'gaussian']) {
    for (const [cLabel, codebook] of codebooks) {
      for (const [label, q, k, v] of extremeInputs()) {
        for (const causal of [false, true]) {
          const vmax = Math.max(...v.data.map(Math.abs));
          const what = `${assignment} ${cLabel} ${label} causal=${causal}`;
          const o = { codebook, assignment, causal, temperature: 0.5 };
          check(`codebookAttention ${what}`, favor.codebookAttention(q, k, v, { ...o, chunk: 4 }).data, referenceFor('codebook', { q, k, v, ...o }), vmax);
          check(`codebookAttentionMatrix ${what}`, favor.codebookAttentionMatrix(q, k, o).data, referenceFor('codebook', { q, k, ...o }), 1);
        }
      }
    }
  }
});

test('numerical extremes: L = 1, S = 1, m = 1, d = 1', () => {
  const one = (x) => ({ data: Float32Array.of(x), dims: [1, 1] });
  for (const [qx, kx, vx] of [[0.5, -2, 3], [1e3, -1e3, -7], [1e-40, 1e-40, 1e-40], [0, 0, 1e30]]) {
    // one key: every method returns v exactly, and the matrix is [1]
    assert.deepEqual(Array.from(favor.exactAttention(one(qx), one(kx), one(vx), { causal: true }).data), [Math.fround(vx)]);
    assert.deepEqual(Array.from(favor.attentionMatrix(one(qx), one(kx)).data), [1]);
    for (const kernel of ['positive', 'hyperbolic', 'relu', 'oprf']) {
      const map = favor.createFeatureMap({ dim: 1, features: 1, kernel, seed: 3, epsilon: 0.5 });
      assertBelow(Math.abs(favor.favorAttention(one(qx), one(kx), one(vx), { featureMap: map }).data[0] - Math.fround(vx)), 1e-6 * Math.abs(vx), `${kernel} L=S=m=d=1`);
      assert.deepEqual(Array.from(favor.favorAttentionMatrix(one(qx), one(kx), { featureMap: map, causal: true }).data), [1], kernel);
      map.dispose();
    }
    for (const assignment of ['hard', 'soft', 'gaussian']) {
      const codebook = one(1);
      assertBelow(Math.abs(favor.codebookAttention(one(qx), one(kx), one(vx), { codebook, assignment }).data[0] - Math.fround(vx)), 1e-6 * Math.abs(vx), assignment);
    }
  }
  // L = 1 against many keys, S = 1 against many queries
  const q1 = normalTensor([1, 1], 5), kMany = normalTensor([9, 1], 6), vMany = normalTensor([9, 2], 7);
  check('exactAttention L=1', favor.exactAttention(q1, kMany, vMany).data, ref.exactAttention(q1, kMany, vMany).data, 3);
  const qMany = normalTensor([9, 1], 8), k1 = normalTensor([1, 1], 9), v1 = normalTensor([1, 2], 10);
  const out = favor.exactAttention(qMany, k1, v1).data;
  for (let i = 0; i < 9; i++) assert.deepEqual([out[2 * i], out[2 * i + 1]], Array.from(v1.data), 'S = 1: every row is v');
});

test('inputs beyond float32 range for scores or squared norms give a documented RangeError, not Inf/NaN', () => {
  const big = fill([4, 4], (i) => (i % 2 ? 3e19 : -2e19));
  const v = normalTensor([4, 2], 1);
  const map = favor.createFeatureMap({ dim: 4, features: 8, seed: 1 });
  const calls = [
    ['exactAttention', () => favor.exactAttention(big, big, v)],
    // q.k = 400, times 1e38: +Infinity (scores that overflow only to -Infinity are the exact limit, 0)
    ['attentionMatrix with scale 1e38', () => favor.attentionMatrix(fill([4, 4], () => 10), fill([4, 4], () => 10), { scale: 1e38 })],
    ['favorAttention', () => favor.favorAttention(big, big, v, { featureMap: map })],
    ['favorAttention causal', () => favor.favorAttention(big, big, v, { featureMap: map, causal: true })],
    ['favorAttentionMatrix', () => favor.favorAttentionMatrix(big, big, { featureMap: map, causal: true })],
    ['codebookAttention', () => favor.codebookAttention(big, big, v, { codebook: big })],
  ];
  for (const [label, call] of calls) {
    assert.throws(call, (e) => e instanceof RangeError && /too large|not finite/.test(e.message), label);
  }
  map.dispose();
  assertWorks(favor, 'overflowing inputs');
});

// ---------------------------------------------------------------------------------------------
// The trigonometric kernel: negative weights, never NaN

test('trigonometric features never give NaN: outputs, matrices and error measures, at every scale', (t) => {
  let calls = 0, infinite = 0;
  for (const norm of [0.1, 1, 4, 16, 100, 1e3]) {
    for (const seed of [1, 2, 3]) {
      const L = 24, d = 8;
      const q = normalTensor([2, L, d], seed, norm / Math.sqrt(d));
      const k = normalTensor([2, L, d], seed + 10, norm / Math.sqrt(d));
      const v = normalTensor([2, L, 4], seed + 20);
      for (const m of [1, 4, 64]) {
        const map = favor.createFeatureMap({ dim: d, features: m, kernel: 'trigonometric', sampling: ['iid', 'orthogonal', 'orthogonal-fixed'][seed % 3], seed });
        for (const causal of [false, true]) {
          const out = favor.favorAttention(q, k, v, { featureMap: map, causal, chunk: 5 });
          const A = favor.favorAttentionMatrix(q, k, { featureMap: map, causal });
          const exactA = favor.attentionMatrix(q, k, { causal });
          const errors = favor.compare(exactA, A);
          const rel = favor.outputRelativeError(favor.exactAttention(q, k, v, { causal }), out);
          const label = `norm ${norm} seed ${seed} m ${m} causal ${causal}`;
          assert.ok(!out.data.some(Number.isNaN), `favorAttention NaN: ${label}`);
          assert.ok(!A.data.some(Number.isNaN), `favorAttentionMatrix NaN: ${label}`);
          for (const [name, x] of Object.entries(errors)) assert.ok(!Number.isNaN(x), `compare().${name} NaN: ${label}`);
          assert.ok(!Number.isNaN(rel), `outputRelativeError NaN: ${label}`);
          infinite += out.data.filter((x) => !Number.isFinite(x)).length + A.data.filter((x) => !Number.isFinite(x)).length;
          calls++;
        }
        map.dispose();
      }
    }
  }
  assert.ok(calls >= 100);
  // +-Infinity is documented where a row's normalizer cancels to exactly 0
  t.diagnostic(`${calls} trigonometric calls, ${infinite} infinite entries, no NaN`);
});
