// favorAttention and favorAttentionMatrix against the float64 estimator D^-1 Q'(K'^T V) for a
// known W: explicit projections (a W "exported from PyTorch"), every kernel, causal and not,
// chunk 1/7/128/1000, cross attention, scale, leading dims (OPRF's A, B, D per head), and the
// accuracy sanity check that more features approximate softmax better.
//
// Tolerance: 1e-4 of the largest reference entry. The float32 pipeline rounds w.x (d terms),
// the exponents (|w.x| + |x|^2/2 <~ 10) and exp, ~1e-6 relative per feature; measured errors
// are <= 1.1e-6 for every kernel here, so 1e-4 is a ~100x margin, while a wrong prefactor,
// mask, shift, scale or OPRF coefficient moves outputs by >= 1e-2. Trigonometric inputs have a
// small norm (std 0.3) so that the denominator stays near exp(q.k) ~ 1, far from 0, where a
// float32 relative error cannot be amplified.
import assert from 'node:assert/strict';
import { before, test } from 'node:test';

import { loadFavor } from 'favor-attention';

import { assertBelow, normalTensor, uniformTensor } from './helpers.mjs';
import * as ref from './reference.mjs';

const KERNELS = ['positive', 'hyperbolic', 'trigonometric', 'relu', 'oprf'];
const CHUNKS = [1, 7, 128, 1000];
const TOL = 1e-4;

let favor;
before(async () => {
  favor = await loadFavor();
});

const stdFor = (kernel) => (kernel === 'trigonometric' ? 0.3 : 1);

// One problem per kernel: L = S = 150 crosses the default chunk (128) and chunk 7 boundaries.
function problem(kernel, seed, { L = 150, S = L, d = 8, dv = 5, lead = [] } = {}) {
  const std = stdFor(kernel);
  return {
    q: normalTensor([...lead, L, d], seed, std),
    k: normalTensor([...lead, S, d], seed + 1, std),
    v: normalTensor([...lead, S, dv], seed + 2),
  };
}

function checkMap(map, kernel, w, { q, k, v }, label, { chunks = CHUNKS, scale, epsilon } = {}) {
  for (const causal of q.dims.at(-2) === k.dims.at(-2) ? [false, true] : [false]) {
    const options = { causal, ...(scale === undefined ? {} : { scale }) };
    const expected = ref.favorAttention(kernel, w, q, k, v, { ...options, epsilon });
    for (const chunk of chunks) {
      const out = favor.favorAttention(q, k, v, { featureMap: map, chunk, ...options });
      assert.deepEqual(out.dims, [...q.dims.slice(0, -1), v.dims.at(-1)]);
      assertBelow(ref.maxRelError(out.data, expected.data), TOL, `${label} favorAttention causal=${causal} chunk=${chunk}`);
    }
    const a = favor.favorAttentionMatrix(q, k, { featureMap: map, ...options });
    assert.deepEqual(a.dims, [...q.dims.slice(0, -1), k.dims.at(-2)]);
    assertBelow(ref.maxRelError(a.data, ref.favorAttentionMatrix(kernel, w, q, k, { ...options, epsilon }).data), TOL, `${label} favorAttentionMatrix causal=${causal}`);
  }
}

test('sampled W: every kernel, causal and not, chunk 1, 7, 128, 1000 and default equal the float64 estimator', () => {
  for (const kernel of KERNELS) {
    const map = favor.createFeatureMap({ dim: 8, features: 16, kernel, seed: 5 });
    checkMap(map, kernel, map.projection, problem(kernel, 100), kernel, { chunks: [...CHUNKS, undefined] });
    map.dispose();
  }
});

// An explicit W, as a user would export it from a trained PyTorch/JAX Performer.
// Regression (fixed): createFeatureMap({ projection }) always threw
// "TypeError: Cannot read properties of undefined (reading 'error')" (web/heap.js `call` reads
// result.error, but the binding initProjection returns undefined on success), so these tests failed.
test('explicit projection: every kernel, causal and not, chunk 1, 7, 128, 1000 equal the float64 formula for that W', () => {
  const d = 8, m = 24;
  const w = normalTensor([m, d], 900);
  for (const kernel of KERNELS) {
    const map = favor.createFeatureMap({ projection: w, kernel });
    assert.equal(map.dim, d);
    assert.equal(map.features, m);
    assert.deepEqual(map.projection.dims, [m, d]);
    assert.deepEqual(map.projection.data, w.data, 'the projection getter returns W exactly');
    checkMap(map, kernel, w, problem(kernel, 200), `explicit ${kernel}`);
  }
});

test('explicit projection: m < d, m = 1, non-Gaussian W, with explicit scale', () => {
  for (const [m, d, w] of [[3, 10, normalTensor([3, 10], 901)], [1, 4, normalTensor([1, 4], 902)], [6, 5, uniformTensor([6, 5], 903, -2, 2)]]) {
    for (const kernel of KERNELS) {
      const map = favor.createFeatureMap({ projection: w, kernel, dim: d, features: m });
      checkMap(map, kernel, w, problem(kernel, 210, { L: 30, d }), `explicit ${kernel} m=${m} d=${d}`, { chunks: [7], scale: 0.2 });
    }
  }
});

test('explicit projection: the map reports the options, relu epsilon is used, the input array is copied', () => {
  const w = normalTensor([5, 4], 904);
  const map = favor.createFeatureMap({ projection: w, kernel: 'relu', sampling: 'iid', epsilon: 0.25 });
  assert.equal(map.kernel, 'relu');
  assert.equal(map.sampling, 'iid');
  assert.equal(map.epsilon, 0.25);
  assert.equal(map.numFeatures, 5);
  const saved = w.data.slice();
  w.data.fill(0); // the map must have copied W
  const p = problem('relu', 220, { L: 20, d: 4 });
  const expected = ref.favorAttention('relu', { data: saved, dims: [5, 4] }, p.q, p.k, p.v, { epsilon: 0.25 });
  assertBelow(ref.maxRelError(favor.favorAttention(p.q, p.k, p.v, { featureMap: map }).data, expected.data), TOL, 'relu explicit epsilon');
  // redraw() on an explicit map samples a new W with the map's sampling mode
  map.redraw(31);
  assert.deepEqual(map.projection.data, favor.createFeatureMap({ dim: 4, features: 5, sampling: 'iid', seed: 31 }).projection.data);
});

test('cross attention (L != S, dv != d) with explicit scale, every kernel', () => {
  for (const kernel of KERNELS) {
    const map = favor.createFeatureMap({ dim: 6, features: 20, kernel, sampling: 'iid', seed: 6 });
    const w = map.projection;
    for (const [L, S, dv] of [[13, 70, 2], [90, 9, 11], [1, 5, 1]]) {
      checkMap(map, kernel, w, problem(kernel, 300 + L, { L, S, d: 6, dv }), `${kernel} cross L=${L} S=${S}`, { chunks: [7, 128] });
      checkMap(map, kernel, w, problem(kernel, 310 + L, { L, S, d: 6, dv }), `${kernel} cross scale 0.3`, { chunks: [128], scale: 0.3 });
    }
  }
});

test('scale: x~ = x sqrt(scale) on both sides (explicit scale differs from the default)', () => {
  for (const kernel of KERNELS) {
    const map = favor.createFeatureMap({ dim: 8, features: 16, kernel, seed: 7 });
    const p = problem(kernel, 400, { L: 40 });
    checkMap(map, kernel, map.projection, p, `${kernel} scale 0.9`, { chunks: [7], scale: 0.9 });
    const a = favor.favorAttention(p.q, p.k, p.v, { featureMap: map, scale: 0.9 });
    const b = favor.favorAttention(p.q, p.k, p.v, { featureMap: map });
    assert.ok(ref.maxRelError(a.data, b.data) > 1e-3, `${kernel}: scale has an effect`);
  }
});

test('leading dims [H, L, d] and [B, H, L, d]: each head on its own (OPRF coefficients per head)', () => {
  for (const kernel of KERNELS) {
    const map = favor.createFeatureMap({ dim: 4, features: 12, kernel, seed: 8 });
    const w = map.projection;
    const p3 = problem(kernel, 500, { lead: [3], L: 20, d: 4, dv: 3 });
    // make the heads' input scales differ so that OPRF's rho (hence A, B, D) differs per head
    for (let h = 0; h < 3; h++) for (let i = h * 80; i < (h + 1) * 80; i++) p3.q.data[i] *= 0.5 + 0.5 * h;
    checkMap(map, kernel, w, p3, `${kernel} [3, L, d]`, { chunks: [7] });
    checkMap(map, kernel, w, problem(kernel, 510, { lead: [2, 2], L: 9, S: 9, d: 4, dv: 2 }), `${kernel} [2, 2, L, d]`, { chunks: [4, 128] });
    checkMap(map, kernel, w, problem(kernel, 520, { lead: [2, 3], L: 5, S: 11, d: 4, dv: 2 }), `${kernel} [2, 3, L, d] cross`, { chunks: [128] });
  }
});

test('large inputs (extreme dynamic range): stabilized float32 matches float64, causal and not', () => {
  // Inputs with std 6 and 10 at d = 8: |x~|^2 up to ~300, so phi spans e^-150..e^+150 (far
  // outside float32) while float64 still holds every feature plainly. Exponents that large
  // carry an absolute float32 rounding error of ~300 * 6e-8 ~ 2e-5, i.e. a relative error of
  // that size on the weights (measured <= 7.5e-6); 2e-4 keeps a 10x margin. Trigonometric is
  // excluded (its estimate is meaningless at this scale).
  for (const std of [6, 10]) {
    for (const kernel of ['positive', 'hyperbolic', 'relu', 'oprf']) {
      const map = favor.createFeatureMap({ dim: 8, features: 16, kernel, seed: 5 });
      const q = normalTensor([60, 8], 1, std), k = normalTensor([60, 8], 2, std), v = normalTensor([60, 3], 3);
      for (const causal of [false, true]) {
        const expected = ref.favorAttention(kernel, map.projection, q, k, v, { causal });
        assert.ok(expected.data.every(Number.isFinite), 'the float64 reference is finite');
        for (const chunk of [7, 128]) {
          assertBelow(ref.maxRelError(favor.favorAttention(q, k, v, { featureMap: map, causal, chunk }).data, expected.data), 2e-4, `${kernel} std ${std} causal=${causal} chunk=${chunk}`);
        }
        const a = favor.favorAttentionMatrix(q, k, { featureMap: map, causal });
        assertBelow(ref.maxRelError(a.data, ref.favorAttentionMatrix(kernel, map.projection, q, k, { causal }).data), 2e-4, `${kernel} std ${std} matrix causal=${causal}`);
      }
      map.dispose();
    }
  }
});

test('favorAttentionMatrix: rows sum to 1, masked entries are exactly 0 when causal', () => {
  for (const kernel of KERNELS) {
    const map = favor.createFeatureMap({ dim: 8, features: 32, kernel, seed: 9 });
    const { q, k } = problem(kernel, 600, { L: 33 });
    for (const causal of [false, true]) {
      const a = favor.favorAttentionMatrix(q, k, { featureMap: map, causal });
      for (let i = 0; i < 33; i++) {
        let sum = 0;
        for (let j = 0; j < 33; j++) {
          sum += a.data[i * 33 + j];
          if (causal && j > i) assert.equal(a.data[i * 33 + j], 0, `${kernel} mask (${i}, ${j})`);
        }
        assert.ok(Math.abs(sum - 1) < 1e-5, `${kernel} causal=${causal} row ${i} sums to ${sum}`);
      }
    }
  }
});

test('accuracy sanity: positive/orthogonal at input scale 0.5, relFrobenius at m = 1024 is far below m = 8', () => {
  // d = 16, L = S = 64, inputs N(0, 0.5^2). The estimator's MSE falls like 1/m, so the relative
  // error should drop by ~sqrt(128) ~ 11x from m = 8 to m = 1024; require a factor 3 on the
  // mean over 4 seeds (deterministic seeds, so no flakiness), plus an absolute bound that
  // m = 1024 is a good approximation.
  const q = normalTensor([64, 16], 700, 0.5), k = normalTensor([64, 16], 701, 0.5);
  const exact = favor.attentionMatrix(q, k);
  const meanError = (m) => {
    let sum = 0;
    for (const seed of [1, 2, 3, 4]) {
      const map = favor.createFeatureMap({ dim: 16, features: m, kernel: 'positive', sampling: 'orthogonal', seed });
      sum += favor.compare(exact, favor.favorAttentionMatrix(q, k, { featureMap: map })).relFrobenius;
      map.dispose();
    }
    return sum / 4;
  };
  const small = meanError(8), large = meanError(1024);
  assert.ok(large * 3 < small, `relFrobenius m=1024 ${large} vs m=8 ${small}`);
  assert.ok(large < 0.1, `m = 1024 should approximate well, relFrobenius ${large}`);
});

test('the exact softmax is approached by every softmax estimator with many features', () => {
  // m = 4096 at small input scale (0.3): relative output error well under 0.1 for the
  // unbiased kernels; relu estimates a different kernel and is excluded.
  const q = normalTensor([32, 8], 710, 0.3), k = normalTensor([32, 8], 711, 0.3), v = normalTensor([32, 4], 712);
  const exact = favor.exactAttention(q, k, v);
  for (const kernel of ['positive', 'hyperbolic', 'trigonometric', 'oprf']) {
    const map = favor.createFeatureMap({ dim: 8, features: 4096, kernel, seed: 1 });
    const err = favor.outputRelativeError(exact, favor.favorAttention(q, k, v, { featureMap: map }));
    assert.ok(err < 0.1, `${kernel}: output relative error ${err}`);
    map.dispose();
  }
});

// Regression (fixed): the causal scan allocates a chunk x chunk block even when
// L < chunk, so a documented chunk (<= 2^20) on a tiny input runs out of memory (chunk^2 * 4
// bytes: 4 TiB for 2^20), and chunk = 20000 permanently grows the wasm heap by 1.6 GB.
test('causal favorAttention with a large chunk (<= 2^20, documented as valid) on a small input', () => {
  const map = favor.createFeatureMap({ dim: 4, features: 8, seed: 1 });
  const p = problem('positive', 800, { L: 8, d: 4 });
  const expected = ref.favorAttention('positive', map.projection, p.q, p.k, p.v, { causal: true });
  for (const chunk of [40000, 2 ** 20]) {
    const out = favor.favorAttention(p.q, p.k, p.v, { featureMap: map, causal: true, chunk });
    assertBelow(ref.maxRelError(out.data, expected.data), TOL, `chunk ${chunk}`);
  }
});

// Regression (fixed): the dims check of favorAttention (and exactAttention) computes
// the element count of the L x S matrix, which overflows wasm32's 32-bit Index for L = S >= 46341,
// so linear-time attention on long sequences is rejected with
// "RangeError: favorAttention: output: dims [50000, 50000] hold more elements than can be
// addressed", although its output is only L x dv and no L x S matrix is ever formed.
test('favorAttention on a long sequence (L = S = 50000) is linear-time and correct', () => {
  const n = 50000, d = 4, dv = 2;
  const map = favor.createFeatureMap({ dim: d, features: 16, seed: 2 });
  const w = ref.projectionRows(map.projection);
  const q = normalTensor([n, d], 1000, 0.5), k = normalTensor([n, d], 1001, 0.5), v = normalTensor([n, dv], 1002);
  // float64 linear-time reference for a few rows: phi(K) once, then sums over the visible keys
  const root = Math.sqrt(1 / Math.sqrt(d));
  const rowsOf = (t, cols) => Array.from({ length: t.dims[0] }, (_, i) => Float64Array.from(t.data.subarray(i * cols, (i + 1) * cols), (x) => x * root));
  const kf = ref.phi('positive', w, rowsOf(k, d));
  const qRows = rowsOf(q, d);
  const expectedRow = (i, causal) => {
    const qf = ref.phi('positive', w, [qRows[i]])[0];
    const num = new Float64Array(dv);
    let den = 0;
    for (let j = 0; j < (causal ? i + 1 : n); j++) {
      let s = 0;
      for (let r = 0; r < qf.length; r++) s += qf[r] * kf[j][r];
      den += s;
      for (let c = 0; c < dv; c++) num[c] += s * v.data[j * dv + c];
    }
    return num.map((x) => x / den);
  };
  for (const causal of [false, true]) {
    const out = favor.favorAttention(q, k, v, { featureMap: map, causal });
    assert.deepEqual(out.dims, [n, dv]);
    for (const i of [0, 1, 777, n - 1]) {
      assertBelow(ref.maxRelError(out.data.subarray(i * dv, (i + 1) * dv), expectedRow(i, causal)), TOL, `causal=${causal} row ${i}`);
    }
  }
});
