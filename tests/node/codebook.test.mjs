// Codebook attention (Transformer-VQ) through the wasm package, against a float64 JS reference
// of docs/design.md §7 and its identities: hard VQ is exact when every key is a codeword, and
// FAVOR+ with an orthogonal-fixed W is gaussian codebook attention.
import assert from 'node:assert/strict';
import { before, test } from 'node:test';

import { loadFavor } from 'favor-attention';

import { assertBelow, assertBitIdentical, assertThrowsNamed, normalTensor, rng } from './helpers.mjs';
import * as ref from './reference.mjs';

let favor;
before(async () => {
  favor = await loadFavor();
});

function matmul(a, v) {
  const [L, S] = a.dims, dv = v.dims[1];
  const out = new Float64Array(L * dv);
  for (let i = 0; i < L; i++) for (let j = 0; j < S; j++) for (let t = 0; t < dv; t++) out[i * dv + t] += a.data[i * S + j] * v.data[j * dv + t];
  return { data: out, dims: [L, dv] };
}

test('codebookAttentionMatrix equals the float64 definition for every assignment, causal and not', () => {
  const q = normalTensor([30, 8], 1, 0.7), k = normalTensor([30, 8], 2, 0.7), codebook = normalTensor([10, 8], 3, 0.7);
  for (const assignment of ['hard', 'soft', 'gaussian']) {
    for (const causal of [false, true]) {
      const got = favor.codebookAttentionMatrix(q, k, { codebook, assignment, temperature: 0.5, causal });
      // float32 GEMMs of length <= 10 and float32 exps: ~1e-6; 1e-5 leaves margin.
      assertBelow(ref.relFrobenius(got, ref.codebookMatrix(codebook, q, k, { assignment, temperature: 0.5, causal })), 1e-5, `${assignment} causal=${causal}`);
    }
  }
});

test('hard VQ equals exact attention when every key is a codeword', () => {
  const codebook = normalTensor([6, 16], 4);
  const g = rng(5);
  const k = { data: new Float32Array(80 * 16), dims: [80, 16] };
  for (let j = 0; j < 80; j++) {
    const pick = Math.floor(g.uniform() * 6);
    k.data.set(codebook.data.subarray(pick * 16, (pick + 1) * 16), j * 16);
  }
  const q = normalTensor([80, 16], 6), v = normalTensor([80, 4], 7);
  for (const causal of [false, true]) {
    const got = favor.codebookAttention(q, k, v, { codebook, causal, chunk: 32 });
    assertBelow(ref.relFrobenius(got, ref.exactAttention(q, k, v, { causal })), 1e-5, `causal=${causal}`);
  }
});

test("'gaussian' with codebookFromFeatureMap(orthogonal-fixed map) equals FAVOR+ positive within 1e-5", () => {
  const d = 16;
  const q = normalTensor([64, d], 8, 0.6), k = normalTensor([64, d], 9, 0.6), v = normalTensor([64, 4], 10);
  const featureMap = favor.createFeatureMap({ dim: d, features: 40, kernel: 'positive', sampling: 'orthogonal-fixed', seed: 5 });
  const codebook = favor.codebookFromFeatureMap(featureMap);
  assert.deepEqual(codebook.dims, [40, d]);
  for (const causal of [false, true]) {
    assertBelow(ref.relFrobenius(favor.codebookAttention(q, k, v, { codebook, assignment: 'gaussian', causal }),
      favor.favorAttention(q, k, v, { featureMap, causal })), 1e-5, `output causal=${causal}`);
    assertBelow(ref.relFrobenius(favor.codebookAttentionMatrix(q, k, { codebook, assignment: 'gaussian', causal }),
      favor.favorAttentionMatrix(q, k, { featureMap, causal })), 1e-5, `matrix causal=${causal}`);
  }
  // with an explicit scale the codebook must be rescaled by the same scale
  const scale = 0.1;
  assertBelow(ref.relFrobenius(
    favor.codebookAttention(q, k, v, { codebook: favor.codebookFromFeatureMap(featureMap, { scale }), assignment: 'gaussian', scale }),
    favor.favorAttention(q, k, v, { featureMap, scale })), 1e-5, 'explicit scale');
  featureMap.dispose();
});

test("'soft' tends to 'hard' as the temperature goes to 0", () => {
  const q = normalTensor([40, 8], 11), k = normalTensor([40, 8], 12), v = normalTensor([40, 3], 13), codebook = normalTensor([6, 8], 14);
  const hard = favor.codebookAttention(q, k, v, { codebook });
  let previous = Infinity;
  for (const temperature of [10, 1, 0.1, 0.01, 1e-3, 1e-4, 1e-6]) {
    const gap = ref.relFrobenius(favor.codebookAttention(q, k, v, { codebook, assignment: 'soft', temperature }), hard);
    assert.ok(gap <= previous, `temperature ${temperature}: gap ${gap} grew from ${previous}`);
    previous = gap;
  }
  assertBelow(previous, 1e-5, 'soft at T = 1e-6 vs hard');
});

test('causal codebook attention equals the masked matrix form for several chunk sizes', () => {
  const q = normalTensor([50, 8], 15), k = normalTensor([50, 8], 16), v = normalTensor([50, 5], 17), codebook = normalTensor([7, 8], 18);
  for (const assignment of ['hard', 'soft', 'gaussian']) {
    const masked = matmul(favor.codebookAttentionMatrix(q, k, { codebook, assignment, causal: true }), v);
    for (const chunk of [1, 4, 16, 128]) {
      assertBelow(ref.relFrobenius(favor.codebookAttention(q, k, v, { codebook, assignment, causal: true, chunk }), masked), 1e-5, `${assignment} chunk ${chunk}`);
    }
  }
});

test('codebooks per head ([H, c, d]) and shared ([c, d])', () => {
  const q = normalTensor([2, 20, 4], 19), k = normalTensor([2, 20, 4], 20), v = normalTensor([2, 20, 3], 21);
  const perHead = normalTensor([2, 5, 4], 22);
  const out = favor.codebookAttention(q, k, v, { codebook: perHead, assignment: 'soft' });
  for (let h = 0; h < 2; h++) {
    const slice = (t, rows, cols) => ({ data: t.data.slice(h * rows * cols, (h + 1) * rows * cols), dims: [rows, cols] });
    const single = favor.codebookAttention(slice(q, 20, 4), slice(k, 20, 4), slice(v, 20, 3), { codebook: slice(perHead, 5, 4), assignment: 'soft' });
    assertBitIdentical(out.data.subarray(h * 60, (h + 1) * 60), single.data, `head ${h}`);
  }
  const shared = favor.codebookAttention(q, k, v, { codebook: normalTensor([5, 4], 23) });
  assert.deepEqual(shared.dims, [2, 20, 3]);
});

test('kmeans: deterministic in the seed, per head, and a better codebook than a random one', () => {
  // clustered keys: 4 centers, small spread
  const centers = normalTensor([4, 6], 24, 3);
  const noise = normalTensor([200, 6], 25, 0.1);
  const k = { data: noise.data.map((x, i) => x + centers.data[(Math.floor(i / 6) % 4) * 6 + (i % 6)]), dims: [200, 6] };
  const a = favor.kmeans(k, { clusters: 4, seed: 1 }), b = favor.kmeans(k, { clusters: 4, seed: 1 }), c = favor.kmeans(k, { clusters: 4, seed: 2 });
  assert.deepEqual(a.dims, [4, 6]);
  assertBitIdentical(a.data, b.data, 'same seed');
  const objective = (cb) => {
    let total = 0;
    for (let j = 0; j < 200; j++) {
      let best = Infinity;
      for (let y = 0; y < cb.dims[0]; y++) {
        let d2 = 0;
        for (let t = 0; t < 6; t++) d2 += (k.data[j * 6 + t] - cb.data[y * 6 + t]) ** 2;
        best = Math.min(best, d2);
      }
      total += best;
    }
    return total;
  };
  // 200 points with per-coordinate sd 0.1 around the true centers: objective ~ 200 * 6 * 0.01 = 12
  assert.ok(objective(a) < 20, `k-means objective ${objective(a)}`);
  assert.ok(objective(c) < 20, `k-means objective (seed 2) ${objective(c)}`);
  assert.ok(objective(favor.randomCodebook({ clusters: 4, dim: 6, seed: 1, sigma: 3 })) > 10 * objective(a));
  const perHead = favor.kmeans(normalTensor([3, 50, 4], 26), { clusters: 5, iterations: 10, seed: 3 });
  assert.deepEqual(perHead.dims, [3, 5, 4]);
});

test('randomCodebook is deterministic and has the requested scale', () => {
  const a = favor.randomCodebook({ clusters: 200, dim: 10, seed: 4, sigma: 2 });
  assertBitIdentical(a.data, favor.randomCodebook({ clusters: 200, dim: 10, seed: 4, sigma: 2 }).data, 'same seed');
  const variance = a.data.reduce((s, x) => s + x * x, 0) / a.data.length;
  // 2000 N(0, 4) entries: the sample variance has sd 4 * sqrt(2/2000) = 0.13; 5 sd margin
  assert.ok(Math.abs(variance - 4) < 0.65, `variance ${variance}`);
});

test('codebook misuse throws TypeError/RangeError naming the argument; the instance keeps working', () => {
  const q = normalTensor([6, 4], 27), v = normalTensor([6, 2], 28), codebook = normalTensor([3, 4], 29);
  const cases = [
    [() => favor.codebookAttention(q, q, v, {}), TypeError, /codebook/],
    [() => favor.codebookAttention(q, q, v, { codebook: normalTensor([3, 5], 1) }), RangeError, /codebook/],
    [() => favor.codebookAttention(q, q, v, { codebook, assignment: 'vq' }), RangeError, /assignment/],
    [() => favor.codebookAttention(q, q, v, { codebook, assignment: 'soft', temperature: 0 }), RangeError, /temperature/],
    [() => favor.codebookAttention(q, q, v, { codebook, temperature: NaN }), RangeError, /temperature/],
    [() => favor.codebookAttention(q, q, v, { codebook: { data: [1, 2], dims: [1, 2] } }), TypeError, /codebook\.data/],
    [() => favor.codebookAttentionMatrix(q, normalTensor([5, 4], 2), { codebook, causal: true }), RangeError, /causal/],
    [() => favor.codebookAttention(q, q, v, { codebook: { data: new Float32Array([NaN, 0, 0, 0]), dims: [1, 4] } }), RangeError, /codebook/],
    [() => favor.kmeans(q, { clusters: 7 }), RangeError, /clusters/],
    [() => favor.kmeans(q, {}), TypeError, /clusters/],
    [() => favor.kmeans(q, { clusters: 2, iterations: -1 }), RangeError, /iterations/],
    [() => favor.randomCodebook({ clusters: 0, dim: 3 }), RangeError, /clusters/],
    [() => favor.codebookFromFeatureMap({}), TypeError, /featureMap/],
  ];
  for (const [fn, type, pattern] of cases) assertThrowsNamed(fn, type, pattern);
  assertBelow(ref.relFrobenius(favor.codebookAttentionMatrix(q, q, { codebook, assignment: 'gaussian' }),
    ref.codebookMatrix(codebook, q, q, { assignment: 'gaussian' })), 1e-5, 'after errors');
});
