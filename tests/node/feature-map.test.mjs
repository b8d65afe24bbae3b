// createFeatureMap and the FeatureMap object: every kernel x sampling, the getters, the
// projection getter (a copy, dims [m, d]), redraw, seeds, the sampling modes' structure,
// dispose() and [Symbol.dispose].
import assert from 'node:assert/strict';
import { before, test } from 'node:test';

import { loadFavor } from 'favor-attention';

import { assertBelow, assertBitIdentical, assertThrowsNamed, normalTensor } from './helpers.mjs';
import * as ref from './reference.mjs';

const KERNELS = ['positive', 'hyperbolic', 'trigonometric', 'relu', 'oprf'];
const SAMPLINGS = ['iid', 'orthogonal', 'orthogonal-fixed', 'simplex', 'structured'];

let favor;
before(async () => {
  favor = await loadFavor();
});

function rows(w) {
  return ref.projectionRows(w);
}
function dot(a, b) {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i] * b[i];
  return s;
}

test('every kernel x sampling: getters, projection dims, and outputs equal the float64 formula for the map\'s W', () => {
  // Inputs: d = 8, L = S = 40. Trigonometric gets small-norm inputs (std 0.3) so that its
  // denominator sum_j phi(q).phi(k_j) stays near exp(q.k) ~ 1, far from 0.
  // Tolerance 1e-4 of the largest reference entry: the float32 features carry ~1e-6 relative
  // error (exponents |w.x| <~ 10 rounded to 6e-8 relative each), measured <= 1.1e-6 across
  // kernels, so 1e-4 is a ~100x margin and still fails on any formula error (>= 1e-2).
  const d = 8, m = 12, L = 40;
  for (const kernel of KERNELS) {
    const std = kernel === 'trigonometric' ? 0.3 : 0.8;
    const q = normalTensor([L, d], 1, std), k = normalTensor([L, d], 2, std), v = normalTensor([L, 3], 3);
    for (const sampling of SAMPLINGS) {
      const label = `${kernel}/${sampling}`;
      const map = favor.createFeatureMap({ dim: d, features: m, kernel, sampling, seed: 11 });
      assert.equal(map.dim, d, label);
      assert.equal(map.features, m, label);
      assert.equal(map.numFeatures, kernel === 'hyperbolic' || kernel === 'trigonometric' ? 2 * m : m, label);
      assert.equal(map.kernel, kernel, label);
      assert.equal(map.sampling, sampling, label);
      assert.equal(map.epsilon, 1e-3, label);
      assert.equal(map.disposed, false, label);
      const w = map.projection;
      assert.deepEqual(w.dims, [m, d], label);
      assert.ok(w.data instanceof Float32Array && w.data.length === m * d, label);
      assert.ok(w.data.every(Number.isFinite), label);
      for (const causal of [false, true]) {
        const out = favor.favorAttention(q, k, v, { featureMap: map, causal });
        assert.deepEqual(out.dims, [L, 3]);
        assertBelow(ref.maxRelError(out.data, ref.favorAttention(kernel, w, q, k, v, { causal }).data), 1e-4, `${label} favorAttention causal=${causal}`);
        const a = favor.favorAttentionMatrix(q, k, { featureMap: map, causal });
        assert.deepEqual(a.dims, [L, L]);
        assertBelow(ref.maxRelError(a.data, ref.favorAttentionMatrix(kernel, w, q, k, { causal }).data), 1e-4, `${label} favorAttentionMatrix causal=${causal}`);
      }
      map.dispose();
    }
  }
});

test('defaults: kernel positive, sampling orthogonal, seed 0, epsilon 1e-3', () => {
  const a = favor.createFeatureMap({ dim: 6, features: 9 });
  const b = favor.createFeatureMap({ dim: 6, features: 9, kernel: 'positive', sampling: 'orthogonal', seed: 0, epsilon: 1e-3 });
  assert.equal(a.kernel, 'positive');
  assert.equal(a.sampling, 'orthogonal');
  assert.equal(a.epsilon, 1e-3);
  assertBitIdentical(a.projection.data, b.projection.data, 'default seed is 0');
});

test('numFeatures is 2m for hyperbolic and trigonometric, m otherwise', () => {
  for (const [kernel, factor] of [['positive', 1], ['hyperbolic', 2], ['trigonometric', 2], ['relu', 1], ['oprf', 1]]) {
    for (const m of [1, 7, 64]) {
      const map = favor.createFeatureMap({ dim: 5, features: m, kernel });
      assert.equal(map.features, m);
      assert.equal(map.numFeatures, factor * m, `${kernel} m=${m}`);
      map.dispose();
    }
  }
});

test('relu epsilon is stored and used: phi = relu(Wx) + epsilon', () => {
  const d = 6, m = 10;
  const q = normalTensor([15, d], 21), k = normalTensor([15, d], 22), v = normalTensor([15, 4], 23);
  for (const epsilon of [0.5, 1e-3, 0]) {
    const map = favor.createFeatureMap({ dim: d, features: m, kernel: 'relu', epsilon, seed: 4 });
    assert.equal(map.epsilon, epsilon);
    const w = map.projection;
    // epsilon = 0 can leave a row with no positive feature only if every w.q <= 0: with m = 10
    // random directions that has probability 2^-10 per row; seed 4 has none (checked by the
    // reference producing finite values).
    const expected = ref.favorAttention('relu', w, q, k, v, { epsilon });
    assert.ok(expected.data.every(Number.isFinite));
    assertBelow(ref.maxRelError(favor.favorAttention(q, k, v, { featureMap: map }).data, expected.data), 1e-4, `relu epsilon ${epsilon}`);
  }
  // a different epsilon really changes the result
  const w1 = favor.createFeatureMap({ dim: d, features: m, kernel: 'relu', epsilon: 0.5, seed: 4 });
  const w2 = favor.createFeatureMap({ dim: d, features: m, kernel: 'relu', epsilon: 5, seed: 4 });
  const o1 = favor.favorAttention(q, k, v, { featureMap: w1 });
  const o2 = favor.favorAttention(q, k, v, { featureMap: w2 });
  assert.ok(ref.maxRelError(o1.data, o2.data) > 1e-3);
});

test('projection getter returns a fresh copy: mutating it changes neither the map nor its outputs', () => {
  const map = favor.createFeatureMap({ dim: 4, features: 6, seed: 8 });
  const q = normalTensor([10, 4], 31), k = normalTensor([10, 4], 32), v = normalTensor([10, 2], 33);
  const before = favor.favorAttention(q, k, v, { featureMap: map });
  const w = map.projection;
  const saved = w.data.slice();
  assert.notEqual(map.projection.data, w.data, 'each get is a new array');
  w.data.fill(0);
  w.dims[0] = 1;
  assertBitIdentical(map.projection.data, saved, 'projection after mutating a copy');
  assert.deepEqual(map.projection.dims, [6, 4]);
  assert.deepEqual(favor.favorAttention(q, k, v, { featureMap: map }).data, before.data);
  // the copy stays valid after further calls into wasm
  const w2 = map.projection;
  for (let i = 0; i < 20; i++) favor.favorAttention(q, k, v, { featureMap: favor.createFeatureMap({ dim: 4, features: 64, seed: i }) });
  assertBitIdentical(w2.data, saved, 'copy after later calls');
});

test('same seed twice gives bit-identical W; different seeds give different W', () => {
  for (const sampling of SAMPLINGS) {
    for (const seed of [0, 1, 12345, 2 ** 32, 2 ** 53 - 1]) {
      const a = favor.createFeatureMap({ dim: 16, features: 40, sampling, seed });
      const b = favor.createFeatureMap({ dim: 16, features: 40, sampling, seed, kernel: 'hyperbolic' });
      assertBitIdentical(a.projection.data, b.projection.data, `${sampling} seed ${seed}`);
    }
    const base = favor.createFeatureMap({ dim: 16, features: 40, sampling, seed: 42 }).projection.data;
    // neighbouring seeds and a seed differing only above bit 32 (a generator dropping high bits would collide)
    for (const other of [41, 43, 42 + 2 ** 32]) {
      const w = favor.createFeatureMap({ dim: 16, features: 40, sampling, seed: other }).projection.data;
      assert.ok(ref.maxRelError(w, base) > 1e-2, `${sampling}: seed 42 vs ${other} should differ`);
    }
  }
});

test('redraw(seed) changes W, returns the map, and equals a fresh map with that seed', () => {
  const q = normalTensor([20, 8], 41, 0.7), k = normalTensor([20, 8], 42, 0.7), v = normalTensor([20, 3], 43);
  for (const sampling of SAMPLINGS) {
    for (const kernel of ['positive', 'trigonometric', 'oprf']) {
      const map = favor.createFeatureMap({ dim: 8, features: 20, kernel, sampling, seed: 1 });
      const before = map.projection.data;
      assert.equal(map.redraw(777), map, 'redraw returns this');
      const after = map.projection;
      assert.ok(ref.maxRelError(after.data, before) > 1e-2, `${sampling}: redraw changed W`);
      assert.deepEqual(after.dims, [20, 8]);
      const fresh = favor.createFeatureMap({ dim: 8, features: 20, kernel, sampling, seed: 777 });
      assertBitIdentical(after.data, fresh.projection.data, `${kernel}/${sampling}: redraw(777) == fresh seed 777`);
      assert.equal(map.sampling, sampling);
      assert.equal(map.kernel, kernel);
      // outputs now use the new W
      assert.deepEqual(favor.favorAttention(q, k, v, { featureMap: map }).data, favor.favorAttention(q, k, v, { featureMap: fresh }).data);
      // redraw back to the original seed restores W
      map.redraw(1);
      assertBitIdentical(map.projection.data, before, 'redraw(1) restores');
    }
  }
});

test('orthogonal sampling: rows within a d-block are orthogonal, norms are chi_d (not fixed)', () => {
  const d = 16, m = 40; // blocks of 16, 16 and a partial block of 8
  const w = rows(favor.createFeatureMap({ dim: d, features: m, sampling: 'orthogonal', seed: 5 }).projection);
  const norms = w.map((r) => Math.sqrt(dot(r, r)));
  for (let r = 0; r < m; r++) {
    for (let s = r + 1; s < m; s++) {
      const cos = dot(w[r], w[s]) / (norms[r] * norms[s]);
      if (Math.floor(r / d) === Math.floor(s / d)) {
        // float32 rounding of orthonormal rows times a norm: |cos| ~ sqrt(d) * 6e-8 ~ 3e-7
        assert.ok(Math.abs(cos) < 1e-5, `rows ${r}, ${s} of one block: cos ${cos}`);
      }
    }
  }
  // rows of different blocks are independent: some pair is clearly not orthogonal
  let maxCross = 0;
  for (let r = 0; r < d; r++) for (let s = d; s < 2 * d; s++) maxCross = Math.max(maxCross, Math.abs(dot(w[r], w[s]) / (norms[r] * norms[s])));
  assert.ok(maxCross > 0.1, 'rows of different blocks should not all be orthogonal');
  // norms vary (chi_d), unlike orthogonal-fixed
  const spread = Math.max(...norms) - Math.min(...norms);
  assert.ok(spread > 0.5, `norm spread ${spread}`);
});

test('orthogonal sampling: squared row norms average d (rows marginally N(0, I_d))', () => {
  // |w|^2 ~ chi^2_d: mean d, variance 2d. Over m = 512 rows the mean has standard error
  // sqrt(2d/512) = 0.25 for d = 16; 5 standard errors = 1.25. Deterministic seed, so no flakiness.
  const d = 16, m = 512;
  const w = rows(favor.createFeatureMap({ dim: d, features: m, sampling: 'orthogonal', seed: 9 }).projection);
  const mean = w.reduce((s, r) => s + dot(r, r), 0) / m;
  assert.ok(Math.abs(mean - d) < 1.25, `mean squared norm ${mean}`);
});

test('orthogonal-fixed sampling: every row norm is exactly sqrt(d), rows within a block orthogonal', () => {
  for (const [d, m] of [[4, 6], [16, 40], [3, 3], [7, 1]]) {
    const w = rows(favor.createFeatureMap({ dim: d, features: m, sampling: 'orthogonal-fixed', seed: 13 }).projection);
    for (let r = 0; r < m; r++) {
      // float32 rounding of d entries: relative error of the norm <~ 1e-7
      assert.ok(Math.abs(Math.sqrt(dot(w[r], w[r])) / Math.sqrt(d) - 1) < 1e-6, `d=${d} row ${r} norm`);
      for (let s = r + 1; s < m; s++) {
        if (Math.floor(r / d) === Math.floor(s / d)) assert.ok(Math.abs(dot(w[r], w[s])) / d < 1e-5, `d=${d} rows ${r}, ${s}`);
      }
    }
  }
});

test('simplex sampling: directions of a block have pairwise cosine -1/(d-1), norms those of orthogonal', () => {
  // float32 rounding moves a row by a relative 6e-8 at most, a cosine by ~2.4e-7: 1e-6 bounds it;
  // orthogonal rows (cosine 0) miss -1/(d-1) by >= 1/15 here.
  for (const [d, m] of [[2, 5], [5, 12], [16, 40]]) {
    const w = rows(favor.createFeatureMap({ dim: d, features: m, sampling: 'simplex', seed: 21 }).projection);
    const o = rows(favor.createFeatureMap({ dim: d, features: m, sampling: 'orthogonal', seed: 21 }).projection);
    const norms = w.map((r) => Math.sqrt(dot(r, r)));
    for (let r = 0; r < m; r++) {
      // the same chi_d norm draws as orthogonal with this seed
      assert.ok(Math.abs(norms[r] / Math.sqrt(dot(o[r], o[r])) - 1) < 1e-6, `d=${d} row ${r} norm`);
      for (let s = r + 1; s < m; s++) {
        if (Math.floor(r / d) !== Math.floor(s / d)) continue;
        const cos = dot(w[r], w[s]) / (norms[r] * norms[s]);
        assert.ok(Math.abs(cos + 1 / (d - 1)) < 1e-6, `d=${d} rows ${r}, ${s}: cos ${cos}`);
      }
    }
  }
});

test('structured sampling: sqrt(d) H D1 H D2 H D3 blocks: entries k/d, rows orthogonal of norm sqrt(d)', () => {
  for (const [d, m] of [[4, 6], [16, 40], [1, 3]]) {
    const w = rows(favor.createFeatureMap({ dim: d, features: m, sampling: 'structured', seed: 13 }).projection);
    for (let r = 0; r < m; r++) {
      for (const x of w[r]) assert.equal(x * d, Math.round(x * d), `d=${d} row ${r}: entry ${x} not k/d`);
      assert.equal(dot(w[r], w[r]), d, `d=${d} row ${r} norm`);  // exact: integers over d
      for (let s = r + 1; s < m; s++) {
        if (Math.floor(r / d) === Math.floor(s / d)) assert.equal(dot(w[r], w[s]), 0, `d=${d} rows ${r}, ${s}`);
      }
    }
  }
});

// A map that sampled 'structured' projects by fast Walsh-Hadamard transforms, the same W given as
// `projection` by the product: the same estimator to float rounding. The projections differ by
// ~1e-6 relative (each rounding bounded in tests/native/test_hadamard.cpp), which moves each
// weight by as much and a normalized output row by at most twice that; 2e-5 leaves room for the
// relaxed build's fused products. After redraw the transforms follow the new W.
test('structured sampling: the fast transforms give the outputs of the same W as an explicit projection', () => {
  let seed = 700;
  for (const [L, d, m] of [[70, 64, 256], [33, 12, 30], [9, 3, 8]]) {
    for (const kernel of KERNELS) {
      for (const causal of [false, true]) {
        const scale = kernel === 'trigonometric' ? 0.3 : 0.6;
        const q = normalTensor([L, d], seed++, scale), k = normalTensor([L, d], seed++, scale), v = normalTensor([L, 5], seed++);
        const fast = favor.createFeatureMap({ dim: d, features: m, kernel, sampling: 'structured', seed: seed++ });
        for (const redraw of [false, true]) {
          if (redraw) fast.redraw(seed++);
          const dense = favor.createFeatureMap({ kernel, projection: fast.projection });
          const what = `L=${L} d=${d} m=${m} ${kernel} causal=${causal} redraw=${redraw}`;
          const a = favor.favorAttention(q, k, v, { featureMap: fast, causal }).data;
          const b = favor.favorAttention(q, k, v, { featureMap: dense, causal }).data;
          assertBelow(ref.relFrobenius(a, b), 2e-5, what);
          dense.dispose();
        }
        fast.dispose();
      }
    }
  }
});

test('iid sampling: entries look N(0, 1), rows are not orthogonal', () => {
  // 64 x 64 = 4096 entries: the sample mean has standard error 1/64, the sample variance
  // sqrt(2/4096) = 0.022; bounds at ~5 standard errors.
  const w = favor.createFeatureMap({ dim: 64, features: 64, sampling: 'iid', seed: 3 }).projection.data;
  let mean = 0;
  for (const x of w) mean += x;
  mean /= w.length;
  let variance = 0;
  for (const x of w) variance += (x - mean) ** 2;
  variance /= w.length - 1;
  assert.ok(Math.abs(mean) < 0.08, `mean ${mean}`);
  assert.ok(Math.abs(variance - 1) < 0.11, `variance ${variance}`);
  const r = rows({ data: w, dims: [64, 64] });
  let maxCos = 0;
  for (let i = 1; i < 64; i++) maxCos = Math.max(maxCos, Math.abs(dot(r[0], r[i]) / Math.sqrt(dot(r[0], r[0]) * dot(r[i], r[i]))));
  assert.ok(maxCos > 0.2, 'iid rows are not orthogonal');
});

test('dispose(): disposed becomes true; every later use throws a TypeError naming featureMap', () => {
  const map = favor.createFeatureMap({ dim: 4, features: 8 });
  const q = normalTensor([5, 4], 51), k = normalTensor([5, 4], 52), v = normalTensor([5, 2], 53);
  map.dispose();
  assert.equal(map.disposed, true);
  map.dispose(); // idempotent
  assert.equal(map.disposed, true);
  const uses = {
    dim: () => map.dim,
    features: () => map.features,
    numFeatures: () => map.numFeatures,
    kernel: () => map.kernel,
    sampling: () => map.sampling,
    epsilon: () => map.epsilon,
    projection: () => map.projection,
    redraw: () => map.redraw(1),
    favorAttention: () => favor.favorAttention(q, k, v, { featureMap: map }),
    favorAttentionMatrix: () => favor.favorAttentionMatrix(q, k, { featureMap: map }),
  };
  for (const [name, use] of Object.entries(uses)) assertThrowsNamed(use, TypeError, /featureMap/, `disposed map: ${name}`);
  // the instance is fine afterwards
  const fresh = favor.createFeatureMap({ dim: 4, features: 8 });
  assertBelow(ref.maxRelError(favor.favorAttention(q, k, v, { featureMap: fresh }).data, ref.favorAttention('positive', fresh.projection, q, k, v).data), 1e-4, 'after dispose');
});

test('[Symbol.dispose]() disposes the map (the `using` protocol)', () => {
  assert.equal(typeof Symbol.dispose, 'symbol', 'Node 20 defines Symbol.dispose');
  const map = favor.createFeatureMap({ dim: 4, features: 8 });
  assert.equal(typeof map[Symbol.dispose], 'function');
  map[Symbol.dispose]();
  assert.equal(map.disposed, true);
  assertThrowsNamed(() => map.dim, TypeError, /featureMap/, 'after Symbol.dispose');
  map[Symbol.dispose](); // idempotent
});

test('many feature maps created and disposed do not exhaust the instance', () => {
  const q = normalTensor([6, 8], 61), k = normalTensor([6, 8], 62), v = normalTensor([6, 2], 63);
  let last;
  for (let i = 0; i < 300; i++) {
    const map = favor.createFeatureMap({ dim: 8, features: 256, seed: i });
    last = favor.favorAttention(q, k, v, { featureMap: map });
    if (i === 299) assertBelow(ref.maxRelError(last.data, ref.favorAttention('positive', map.projection, q, k, v).data), 1e-4, 'map 299');
    map.dispose();
  }
});
