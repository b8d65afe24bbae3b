// The row inspector's "Â over 16 draws" (demo/src/draws.js, and modelDraws in
// demo/src/model-view.js): the range and mean of each entry over draws of the approximation, the
// first draw the Â shown, and what the page says of a row from them.
import assert from 'node:assert/strict';
import { before, test } from 'node:test';

import { loadFavor } from 'favor-attention';

import { loadModel } from '../../model/node.js';
import { DRAWS, Spread, rowAmongDraws, spreadOfDraws } from '../../demo/src/draws.js';
import { computeModel, modelDraws } from '../../demo/src/model-view.js';
import { rowKL } from '../../demo/src/row-kl.js';
import { DEFAULTS } from '../../demo/src/settings.js';
import { rng } from './helpers.mjs';

let favor;
before(async () => { favor = await loadFavor({ threads: 1 }); });

test('Spread: each entry\'s smallest, largest and mean over the arrays added', () => {
  const g = rng(3), n = 50, arrays = Array.from({ length: 7 }, () => Float32Array.from({ length: n }, () => g.normal()));
  const s = new Spread(n);
  for (const a of arrays) s.add(a);
  const { lo, hi, mean, draws } = s.result();
  assert.equal(draws, 7);
  for (let x = 0; x < n; x++) {
    const v = arrays.map((a) => a[x]);
    assert.equal(lo[x], Math.min(...v));
    assert.equal(hi[x], Math.max(...v));
    // float64 sums, stored in float32
    assert.ok(Math.abs(mean[x] - v.reduce((p, q) => p + q, 0) / 7) <= 1e-6 * (1 + Math.abs(mean[x])), `${x}`);
  }
});

test('rowAmongDraws: keys inside the range counted, KL to the mean as the inspector measures it', () => {
  const L = 4, A = Float32Array.from([1, 0, 0, 0, 0.5, 0.5, 0, 0, 0.2, 0.3, 0.5, 0, 0.1, 0.2, 0.3, 0.4]);
  const lo = A.map((a, x) => (x % 2 ? a - 0.05 : a + 0.01)), hi = A.map((a) => a + 0.1), mean = A.map((a) => a + 0.02);
  const r = rowAmongDraws(A, { lo, hi, mean }, L, 3, 4);
  assert.equal(r.inside, 2, 'odd keys have lo below A, even ones lo above it');
  assert.equal(r.kl, rowKL(A, mean, 12, 4).kl);
});

test('rowAmongDraws: a key whose every draw is its exact weight (lo = A = hi) is inside the range', () => {
  // the first row of causal attention: one key of weight 1, which every draw gets exactly
  const A = Float32Array.from([1, 0, 0, 0]), same = { lo: A, hi: A, mean: A };
  assert.deepEqual(rowAmongDraws(A, same, 4, 0, 1), { inside: 1, kl: 0 });
  assert.equal(rowAmongDraws(A, same, 4, 0, 4).inside, 4);
});

test('rowKL: Â entries that are 0, negative, NaN or infinite count as 1e-12 and are counted; a window without exact weight reads 0', () => {
  const A = Float32Array.from([0.5, 0.25, 0.25, 0]), Ahat = Float32Array.from([Infinity, NaN, -0.1, 0.3]);
  const r = rowKL(A, Ahat, 0, 4);
  assert.equal(r.nonPositive, 3);
  const b = [1e-12, 1e-12, 1e-12, Math.fround(0.3)], sb = b.reduce((x, y) => x + y, 0);
  const expected = [0.5, 0.25, 0.25].reduce((acc, a, j) => acc + a * Math.log(a / (b[j] / sb)), 0);
  assert.ok(Number.isFinite(r.kl) && Math.abs(r.kl - expected) <= 1e-12 * expected, `${r.kl} against ${expected}`);
  assert.deepEqual(rowKL(Float32Array.from([0, 0, 1]), Float32Array.from([0.2, 0.3, 0.5]), 0, 2), { kl: 0, nonPositive: 0 });
});

// Synthetic Q and K at the page's default input scale, FAVOR+ drawn as the compute worker draws it.
function synthetic(L, d, scale) {
  const g = rng(11), t = (n) => ({ data: Float32Array.from({ length: n * d }, () => g.normal() * scale), dims: [n, d] });
  return { Q: t(L), K: t(L) };
}

test('rowKL: each row as the library\'s compare() measures its meanRowKL; zero where Â = A, a window\'s keys renormalized', () => {
  const L = 64, d = 16, { Q, K } = synthetic(L, d, 0.5);
  const map = favor.createFeatureMap({ dim: d, features: 32, seed: 2 });
  const A = favor.attentionMatrix(Q, K), Ahat = favor.favorAttentionMatrix(Q, K, { featureMap: map });
  map.dispose();
  let total = 0;
  for (let i = 0; i < L; i++) total += rowKL(A.data, Ahat.data, i * L, L).kl;
  const { meanRowKL } = favor.compare(A, Ahat);
  assert.ok(meanRowKL > 1e-3, `${meanRowKL}`);
  // the same float64 formula summed in the same order: equal but for the last bits of the mean
  assert.ok(Math.abs(total / L - meanRowKL) <= 1e-12 * meanRowKL, `${total / L} against ${meanRowKL}`);
  // A float32 row sums to 1 within rounding, not exactly; its KL against itself is still 0.
  let sums = 0;
  for (let i = 0; i < L; i++) {
    assert.equal(rowKL(A.data, A.data, i * L, L).kl, 0, `row ${i}`);
    let s = 0;
    for (let j = 0; j < L; j++) s += A.data[i * L + j];
    if (s !== 1) sums++;
  }
  assert.ok(sums > 0, 'some float32 row does not sum to exactly 1');
  // Over keys 16..63 of a row: the KL of the two rows renormalized over those keys.
  const p = Array.from(A.data.subarray(16, 64)), b = Array.from(Ahat.data.subarray(16, 64));
  const sp = p.reduce((x, y) => x + y, 0), sb = b.reduce((x, y) => x + y, 0);
  const expected = p.reduce((acc, a, j) => acc + (a / sp) * Math.log((a / sp) / (b[j] / sb)), 0);
  assert.ok(Math.abs(rowKL(A.data, Ahat.data, 16, 48).kl - expected) <= 1e-12 * expected);
});

test('FAVOR+ over 16 draws: draw 0 is the one shown, every draw inside the range; their mean is nearer A than one draw', () => {
  const L = 96, d = 16, m = 32, seed = 5, { Q, K } = synthetic(L, d, 0.5);
  const draw = (t) => {
    const map = favor.createFeatureMap({ dim: d, features: m, seed: seed + t });
    try { return favor.favorAttentionMatrix(Q, K, { featureMap: map }).data; } finally { map.dispose(); }
  };
  const all = Array.from({ length: DRAWS }, (_, t) => draw(t));
  const spread = spreadOfDraws((t) => all[t]);
  assert.equal(spread.draws, DRAWS);
  for (const a of all) for (let x = 0; x < a.length; x++) assert.ok(spread.lo[x] <= a[x] && a[x] <= spread.hi[x]);
  const A = favor.attentionMatrix(Q, K).data;
  let one = 0, mean = 0, inside = 0;
  for (let i = 0; i < L; i++) {
    one += rowKL(A, all[0], i * L, L).kl;
    const r = rowAmongDraws(A, spread, L, i, L);
    mean += r.kl;
    inside += r.inside;
  }
  // Averaging 16 independent draws divides an unbiased estimator's variance by 16; the KL, about
  // quadratic in the error, falls about as much. Measured (L = 96, d = 16, m = 32, s = 0.5): mean
  // row KL 0.0490 for one draw, 0.00333 for the mean of 16 (15×); asked: 4×.
  assert.ok(mean < one / 4, `mean row KL of one draw ${one / L}, of the mean ${mean / L}`);
  assert.ok(inside > 0.9 * L * L, `${inside} of ${L * L} entries of A inside the draws' range`);
});

test('the page\'s model: draw 0 is the Â shown, cropped as the heatmaps are; the exported W has no draws', async () => {
  const softmax = await loadModel(favor, 'softmax'), performer = await loadModel(favor, 'performer');
  const p = { ...DEFAULTS, pattern: 'model', model: 'softmax', spread: true, temperature: 1 };
  const r = computeModel(favor, softmax, p, {});
  const s = modelDraws(favor, softmax, p, r);
  assert.equal(s.draws, DRAWS);
  assert.equal(s.lo.length, r.L * r.L, 'the default text fills the window: nothing cropped');
  for (let x = 0; x < r.Ahat.length; x++) assert.ok(s.lo[x] <= r.Ahat[x] && r.Ahat[x] <= s.hi[x], `${x}`);
  assert.ok(s.lo.some((v, x) => v < s.hi[x]), 'the draws differ');
  // a codebook mode draws k-means from the next seeds
  const vq = { ...p, kernel: 'vq', m: 16 };
  const rv = computeModel(favor, softmax, vq, {});
  const sv = modelDraws(favor, softmax, vq, rv);
  for (let x = 0; x < rv.Ahat.length; x++) assert.ok(sv.lo[x] <= rv.Ahat[x] && rv.Ahat[x] <= sv.hi[x]);
  // the Performer with its exported W: one draw
  const pp = { ...p, model: 'performer' };
  assert.equal(modelDraws(favor, performer, pp, computeModel(favor, performer, pp, {})), null);
  assert.notEqual(modelDraws(favor, performer, { ...pp, trainedW: false }, computeModel(favor, performer, { ...pp, trainedW: false }, {})), null);
});

test('a codebook as large as the text: the label calls hard VQ exact, which it is, and not soft VQ, which it is not', async () => {
  const softmax = await loadModel(favor, 'softmax');
  const p = { ...DEFAULTS, pattern: 'model', model: 'softmax', temperature: 1 };
  const L = computeModel(favor, softmax, p, {}).L;
  const hard = computeModel(favor, softmax, { ...p, kernel: 'vq', m: L }, {});
  assert.match(hard.label, /every key is its own codeword, so Â = A: trivially exact\)$/);
  // float32 rounding only (measured: max |A − Â| 2.9e-6 over the 16 heads)
  assert.ok(hard.extras.overview.every((o) => o.errors.maxAbs < 1e-5), 'hard VQ at m = L is A');
  assert.ok(Math.abs(hard.extras.bpc.approx - hard.extras.bpc.exact) < 1e-4, `${hard.extras.bpc.approx} against ${hard.extras.bpc.exact}`);
  const soft = computeModel(favor, softmax, { ...p, kernel: 'soft-vq', m: L }, {});
  assert.doesNotMatch(soft.label, /exact/);
  assert.match(soft.label, /every key is its own codeword, yet its responsibilities at T = 1 also weigh the other keys' codewords\)$/);
  // measured at the default text: mean row KL 0.025 to 0.40 per head, 2.62 bits/char against 1.93
  assert.ok(soft.extras.overview.some((o) => o.errors.meanRowKL > 0.01), 'soft VQ at m = L is not A');
  assert.ok(soft.extras.bpc.approx > soft.extras.bpc.exact + 0.1, `${soft.extras.bpc.approx} against ${soft.extras.bpc.exact}`);
});
