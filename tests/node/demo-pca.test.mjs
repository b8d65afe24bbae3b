// The codebook modes' 2-D view of the keys (demo/src/pca.js): the top two principal axes and
// their variances (the page prints "PC1 (x % of variance)"), the projection, and each key's
// nearest codeword, against a float64 Jacobi eigensolver and brute-force distances written here.
import assert from 'node:assert/strict';
import { before, test } from 'node:test';

import { loadFavor } from 'favor-attention';

import { distanceRows, nearestCodewords, principalAxes, project } from '../../demo/src/pca.js';
import { rng } from './helpers.mjs';

let favor;
before(async () => { favor = await loadFavor({ threads: 1 }); });

// Eigenvalues and unit eigenvectors (columns) of a symmetric d x d matrix by cyclic Jacobi rotations.
function jacobiEigen(a, d) {
  const m = Float64Array.from(a), vec = new Float64Array(d * d);
  for (let i = 0; i < d; i++) vec[i * d + i] = 1;
  for (let sweep = 0; sweep < 100; sweep++) {
    let off = 0;
    for (let p = 0; p < d; p++) for (let q = p + 1; q < d; q++) off += m[p * d + q] ** 2;
    if (off < 1e-30) break;
    for (let p = 0; p < d; p++) {
      for (let q = p + 1; q < d; q++) {
        const apq = m[p * d + q];
        if (apq === 0) continue;
        const theta = (m[q * d + q] - m[p * d + p]) / (2 * apq);
        const t = Math.sign(theta || 1) / (Math.abs(theta) + Math.sqrt(theta * theta + 1));
        const c = 1 / Math.sqrt(t * t + 1), s = t * c;
        for (let k = 0; k < d; k++) {  // columns p, q
          const kp = m[k * d + p], kq = m[k * d + q];
          m[k * d + p] = c * kp - s * kq;
          m[k * d + q] = s * kp + c * kq;
        }
        for (let k = 0; k < d; k++) {  // rows p, q
          const pk = m[p * d + k], qk = m[q * d + k];
          m[p * d + k] = c * pk - s * qk;
          m[q * d + k] = s * pk + c * qk;
        }
        for (let k = 0; k < d; k++) {
          const kp = vec[k * d + p], kq = vec[k * d + q];
          vec[k * d + p] = c * kp - s * kq;
          vec[k * d + q] = s * kp + c * kq;
        }
      }
    }
  }
  return Array.from({ length: d }, (_, j) => ({ value: m[j * d + j], vector: Float64Array.from({ length: d }, (_, k) => vec[k * d + j]) }))
    .sort((x, y) => y.value - x.value);
}

// n points in d dimensions with standard deviations `sigmas` along a random rotation, shifted.
function cloud(g, n, d, sigmas) {
  // A random orthonormal basis (Gram-Schmidt on normal vectors).
  const basis = [];
  while (basis.length < d) {
    const v = Float64Array.from({ length: d }, () => g.normal());
    for (const u of basis) { const p = u.reduce((s, x, t) => s + x * v[t], 0); for (let t = 0; t < d; t++) v[t] -= p * u[t]; }
    const norm = Math.hypot(...v);
    basis.push(v.map((x) => x / norm));
  }
  const shift = Float64Array.from({ length: d }, () => 3 * g.normal());
  const x = new Float32Array(n * d);
  for (let i = 0; i < n; i++) {
    const z = sigmas.map((s) => s * g.normal());
    for (let t = 0; t < d; t++) x[i * d + t] = shift[t] + z.reduce((s, zj, j) => s + zj * basis[j][t], 0);
  }
  return x;
}

// The population covariance (divided by n) of the rows of x, in float64.
function covariance(x, n, d) {
  const mean = new Float64Array(d), cov = new Float64Array(d * d);
  for (let i = 0; i < n; i++) for (let t = 0; t < d; t++) mean[t] += x[i * d + t] / n;
  for (let i = 0; i < n; i++) {
    for (let a = 0; a < d; a++) for (let b = 0; b < d; b++) cov[a * d + b] += (x[i * d + a] - mean[a]) * (x[i * d + b] - mean[b]) / n;
  }
  return { mean, cov };
}

const dot = (u, v) => u.reduce((s, x, t) => s + x * v[t], 0);

test('principalAxes: the top two eigenpairs of the keys\' covariance, its trace, and a sign that does not flip', () => {
  for (const [seed, n, d, sigmas] of [[1, 500, 6, [3, 1.5, 1, 0.6, 0.4, 0.2]], [2, 200, 2, [2, 0.5]], [3, 1000, 16, Array.from({ length: 16 }, (_, j) => 4 / (j + 1))]]) {
    const x = cloud(rng(seed), n, d, sigmas);
    const { mean, cov } = covariance(x, n, d);
    const eig = jacobiEigen(cov, d);
    const pca = principalAxes(x, n, d);
    for (let t = 0; t < d; t++) assert.ok(Math.abs(pca.mean[t] - mean[t]) <= 1e-12 * (1 + Math.abs(mean[t])), `mean ${t}`);
    const trace = Array.from({ length: d }, (_, t) => cov[t * d + t]).reduce((a, b) => a + b);
    assert.ok(Math.abs(pca.total - trace) <= 1e-12 * trace, `total ${pca.total} against ${trace}`);
    for (let k = 0; k < 2; k++) {
      const axis = pca.axes[k], want = eig[k];
      // Power iteration stops once a step moves the axis by < 1e-6; the eigenvalue's error is
      // second order in that (a Rayleigh-like quotient).
      assert.ok(Math.abs(pca.variances[k] - want.value) <= 1e-9 * want.value, `seed ${seed}: λ${k + 1} ${pca.variances[k]} against ${want.value}`);
      assert.ok(Math.abs(Math.hypot(...axis) - 1) <= 1e-12, 'unit length');
      assert.ok(1 - Math.abs(dot(axis, want.vector)) <= 1e-9, `seed ${seed}: axis ${k + 1} against the eigenvector: cos ${dot(axis, want.vector)}`);
      let big = 0;
      for (let t = 0; t < d; t++) if (Math.abs(axis[t]) > Math.abs(axis[big])) big = t;
      assert.ok(axis[big] > 0, 'the largest component is positive');
    }
    assert.ok(Math.abs(dot(pca.axes[0], pca.axes[1])) <= 1e-9, 'the axes are orthogonal');
  }
});

test('principalAxes: one dimension, and keys with no variance', () => {
  const g = rng(4), n = 50;
  const x = Float32Array.from({ length: n }, () => 2 + g.normal());
  const { cov } = covariance(x, n, 1);
  const pca = principalAxes(x, n, 1);
  assert.deepEqual([...pca.axes[0]], [1]);
  assert.deepEqual([...pca.axes[1]], [0]);
  assert.ok(Math.abs(pca.variances[0] - cov[0]) <= 1e-12 * cov[0]);
  assert.equal(pca.variances[1], 0);

  const same = new Float32Array(20 * 3).map((_, i) => [0.5, -1, 2][i % 3]);
  const flat = principalAxes(same, 20, 3);
  assert.deepEqual(flat.variances, [0, 0]);
  assert.equal(flat.total, 0);
  assert.deepEqual([...flat.mean].map((v) => Math.fround(v)), [0.5, -1, 2]);
});

test('project: each row times the factor, less factor · mean, on the two axes', () => {
  const g = rng(5), n = 40, d = 5;
  const x = cloud(g, n, d, [2, 1, 0.5, 0.3, 0.1]);
  const pca = principalAxes(x, n, d);
  for (const factor of [1, 0.25]) {
    const p = project(x, n, d, pca, factor);
    assert.equal(p.length, 2 * n);
    for (let i = 0; i < n; i++) {
      for (let k = 0; k < 2; k++) {
        let want = 0;
        for (let t = 0; t < d; t++) want += factor * (x[i * d + t] - pca.mean[t]) * pca.axes[k][t];
        assert.ok(Math.abs(p[2 * i + k] - want) <= 1e-6 * (1 + Math.abs(want)), `row ${i} axis ${k}`);
      }
    }
  }
});

// Squared distances from each key to each codeword in float64, and each key's nearest and the gap
// to its second nearest.
function bruteNearest(keys, n, codebook, c, d) {
  return Array.from({ length: n }, (_, i) => {
    const dist = Array.from({ length: c }, (_, y) => {
      let s = 0;
      for (let t = 0; t < d; t++) s += (keys[i * d + t] - codebook[y * d + t]) ** 2;
      return s;
    });
    const order = [...dist.keys()].sort((a, b) => dist[a] - dist[b]);
    return { best: order[0], gap: dist[order[1]] - dist[order[0]], scale: dist[order[0]] };
  });
}

test('nearestCodewords: each key\'s nearest codeword and the counts, in JS and (large cases) through attentionMatrix', () => {
  const g = rng(6);
  for (const [n, c, d] of [[300, 7, 4], [4096, 32, 8], [2048, 64, 16]]) {
    const keys = Float32Array.from({ length: n * d }, () => g.normal());
    const codebook = Float32Array.from({ length: c * d }, () => 0.8 * g.normal());
    const want = bruteNearest(keys, n, codebook, c, d);
    const js = nearestCodewords(keys, n, codebook, c, d);
    const viaWasm = nearestCodewords(keys, n, codebook, c, d, favor);
    assert.equal(js.assign.length, n);
    for (const { assign, counts } of [js, viaWasm]) {
      const tally = new Uint32Array(c);
      for (const y of assign) tally[y]++;
      assert.deepEqual([...counts], [...tally], 'counts are the assignment\'s');
      assert.equal(counts.reduce((a, b) => a + b, 0), n);
    }
    let decided = 0;
    for (let i = 0; i < n; i++) {
      // float64 in JS (ties within rounding are either's); float32 weights in wasm: e^{-Δ/2}
      // between the two nearest must be resolvable, so keys within 1e-3 of a tie are skipped.
      if (want[i].gap > 1e-9 * (1 + want[i].scale)) assert.equal(js.assign[i], want[i].best, `JS, key ${i}`);
      if (want[i].gap > 1e-3 * (1 + want[i].scale)) {
        assert.equal(viaWasm.assign[i], want[i].best, `wasm (${n}·${c}·${d}), key ${i}`);
        decided++;
      }
    }
    assert.ok(decided >= 0.95 * n, `most keys are far from a tie (${decided} of ${n})`);
  }
});

test('distanceRows: [k, 1]·[c, −‖c‖²/2] = (‖k‖² − ‖k − c‖²)/2', () => {
  const g = rng(7), n = 9, c = 5, d = 3;
  const keys = Float32Array.from({ length: n * d }, () => g.normal()), codebook = Float32Array.from({ length: c * d }, () => g.normal());
  const { k1, c1 } = distanceRows(keys, n, codebook, c, d);
  assert.equal(k1.length, n * (d + 1));
  assert.equal(c1.length, c * (d + 1));
  for (let i = 0; i < n; i++) {
    for (let y = 0; y < c; y++) {
      let product = 0, kk = 0, dist = 0;
      for (let t = 0; t <= d; t++) product += k1[i * (d + 1) + t] * c1[y * (d + 1) + t];
      for (let t = 0; t < d; t++) { kk += keys[i * d + t] ** 2; dist += (keys[i * d + t] - codebook[y * d + t]) ** 2; }
      const want = (kk - dist) / 2;
      assert.ok(Math.abs(product - want) <= 1e-6 * (1 + kk + dist), `key ${i}, codeword ${y}`);
    }
  }
});
