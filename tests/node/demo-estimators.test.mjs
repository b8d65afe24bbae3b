// The page's float64 recomputation of the unnormalized kernel (demo/src/estimators.js), which its
// error-vs-m study plots as the kernel MSE, against what the library computes: every pair's
// estimate, normalized per row, must be the library's approximate matrix for the same W, also for
// the kernels whose parameters come from the call's q and k (OPRF, FAVOR#'s sderf and aderf).
import assert from 'node:assert/strict';
import { before, test } from 'node:test';

import { loadFavor } from 'favor-attention';

import { samplePairs, symmetricEigen, unnormalizedEstimates } from '../../demo/src/estimators.js';
import { assertBelow, rng } from './helpers.mjs';

let favor;
before(async () => { favor = await loadFavor(); });

// An anisotropic, uncentred head (coordinate t has spread 0.75^t), queries and keys unlike each
// other, so that FAVOR#'s transforms are far from OPRF's.
function head(L, d, seed, offset) {
  const g = rng(seed);
  return Float32Array.from({ length: L * d }, (_, i) => 1.6 * (g.normal() * 0.75 ** (i % d) + offset * ((i % d) % 3 === 0)));
}

test('the eigendecomposition: V diag(λ) Vᵀ rebuilds the matrix, V orthonormal', () => {
  const d = 7, g = rng(5);
  const b = Float64Array.from({ length: d * d }, () => g.normal());
  const a = Float64Array.from({ length: d * d }, (_, x) => { const i = Math.floor(x / d), j = x % d; let s = 0; for (let t = 0; t < d; t++) s += b[i * d + t] * b[j * d + t]; return s; });
  const { values, vectors } = symmetricEigen(a, d);
  let worst = 0, ortho = 0;
  for (let i = 0; i < d; i++) {
    for (let j = 0; j < d; j++) {
      let s = 0, o = 0;
      for (let k = 0; k < d; k++) { s += vectors[i * d + k] * values[k] * vectors[j * d + k]; o += vectors[k * d + i] * vectors[k * d + j]; }
      worst = Math.max(worst, Math.abs(s - a[i * d + j]));
      ortho = Math.max(ortho, Math.abs(o - (i === j ? 1 : 0)));
    }
  }
  assertBelow(worst, 1e-10, 'reconstruction');
  assertBelow(ortho, 1e-12, 'orthonormal eigenvectors');
});

test('the study\'s unnormalized estimates, row-normalized, are the library\'s Â (positive, oprf, sderf, aderf)', () => {
  const L = 40, d = 8, m = 16;
  const q = head(L, d, 1, 0.4), k = head(L, d, 2, -0.2);
  const Q = { data: q, dims: [L, d] }, K = { data: k, dims: [L, d] };
  for (const causal of [false, true]) {
    // every row and column sampled (L ≤ maxRows): a whole row of estimates per query
    const sample = samplePairs(q, k, L, L, d, { causal });
    assert.equal(sample.pairs.length, causal ? (L * (L + 1)) / 2 : L * L);
    for (const kernel of ['positive', 'oprf', 'sderf', 'aderf']) {
      const map = favor.createFeatureMap({ dim: d, features: m, kernel, seed: 3 });
      const est = unnormalizedEstimates(kernel, map.projection.data, m, sample);
      const Ahat = favor.favorAttentionMatrix(Q, K, { featureMap: map, causal }).data;
      const rowSum = new Float64Array(L);
      sample.pairs.forEach((p, n) => { rowSum[p.a] += est[n]; });
      let worst = 0;
      sample.pairs.forEach((p, n) => {
        const want = Ahat[p.a * L + p.b];
        worst = Math.max(worst, Math.abs(est[n] / rowSum[p.a] - want) / Math.max(want, 1e-3));
      });
      assertBelow(worst, 2e-4, `${kernel}${causal ? ', causal' : ''}: JS float64 vs the library's float32`);
      map.dispose();
    }
  }
});

test('the FAVOR# estimates differ from OPRF\'s on an anisotropic head (the parameters are not OPRF\'s)', () => {
  const L = 32, d = 8, m = 8;
  const q = head(L, d, 7, 0.4), k = head(L, d, 8, -0.2);
  const sample = samplePairs(q, k, L, L, d, { causal: false });
  const map = favor.createFeatureMap({ dim: d, features: m, kernel: 'oprf', seed: 1 });
  const W = map.projection.data;
  const oprf = unnormalizedEstimates('oprf', W, m, sample);
  for (const kernel of ['sderf', 'aderf']) {
    const est = unnormalizedEstimates(kernel, W, m, sample);
    let diff = 0;
    est.forEach((x, n) => { diff = Math.max(diff, Math.abs(x - oprf[n]) / oprf[n]); });
    assert.ok(diff > 1e-2, `${kernel}: largest relative difference from OPRF ${diff}`);
  }
  map.dispose();
});
