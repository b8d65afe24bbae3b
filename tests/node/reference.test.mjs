// Checks of the float64 reference itself (no package involved), so that the package is measured
// against something that is right on its own: hand-computed values, exact identities between
// the kernels, and Monte-Carlo unbiasedness of every softmax estimator.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { rng } from './helpers.mjs';
import * as ref from './reference.mjs';

const close = (a, b, tol, what) => assert.ok(Math.abs(a - b) <= tol * Math.max(1, Math.abs(b)), `${what}: ${a} vs ${b}`);

test('softmax attention: hand-computed 2 x 2, causal mask, scale', () => {
  // q = [[1, 0], [0, 1]], k = [[1, 0], [0, 2]], scale 1: row 0 scores [1, 0], row 1 [0, 2]
  const q = { data: [1, 0, 0, 1], dims: [2, 2] }, k = { data: [1, 0, 0, 2], dims: [2, 2] };
  const a = ref.attentionMatrix(q, k, { scale: 1 }).data;
  close(a[0], Math.E / (Math.E + 1), 1e-15, 'a00');
  close(a[1], 1 / (Math.E + 1), 1e-15, 'a01');
  close(a[3], Math.exp(2) / (1 + Math.exp(2)), 1e-15, 'a11');
  const c = ref.attentionMatrix(q, k, { scale: 1, causal: true }).data;
  [1, 0, 1 / (1 + Math.exp(2)), Math.exp(2) / (1 + Math.exp(2))].forEach((x, i) => close(c[i], x, 1e-15, `causal ${i}`));
  assert.equal(c[1], 0, 'masked entry is exactly 0');
  // default scale 1/sqrt(d)
  const dflt = ref.attentionMatrix(q, k).data;
  close(dflt[0], Math.exp(1 / Math.SQRT2) / (Math.exp(1 / Math.SQRT2) + 1), 1e-15, 'default scale');
  // output = A v, leading dims stacked per head
  const v = { data: [1, 2, 3, 4], dims: [2, 2] };
  const out = ref.exactAttention(q, k, v, { scale: 1 }).data;
  close(out[0], a[0] * 1 + a[1] * 3, 1e-15, 'out00');
  const q2 = { data: [...q.data, ...k.data], dims: [2, 2, 2] };
  const k2 = { data: [...k.data, ...q.data], dims: [2, 2, 2] };
  const both = ref.attentionMatrix(q2, k2, { scale: 1 }).data;
  assert.deepEqual(Array.from(both.subarray(0, 4)), Array.from(a));
});

test('sliding window: hand-computed, the causal softmax once the window holds every key, grouped heads read their key/value head', () => {
  // q = [1, 0] at 3 positions, keys [1, 0], [0, 0], [2, 0], values 10, 20, 30, scale 1
  const q = { data: [1, 0, 1, 0, 1, 0], dims: [3, 2] }, k = { data: [1, 0, 0, 0, 2, 0], dims: [3, 2] };
  const v = { data: [10, 20, 30], dims: [3, 1] };
  const w2 = ref.slidingWindowAttention(q, k, v, 2, { scale: 1 }).data;
  close(w2[0], 10, 1e-15, 'query 0 sees key 0');
  close(w2[1], (Math.E * 10 + 20) / (Math.E + 1), 1e-15, 'query 1 sees keys 0, 1');
  close(w2[2], (20 + Math.exp(2) * 30) / (1 + Math.exp(2)), 1e-15, 'query 2 sees keys 1, 2 only');
  const w1 = ref.slidingWindowAttention(q, k, v, 1, { scale: 1, maskOf: () => [1, 0, 1] }).data;
  assert.deepEqual(Array.from(w1), [10, 10, 30], 'window 1: the last unmasked key (key 1 masked)');
  assert.deepEqual(Array.from(ref.slidingWindowAttention(q, k, v, 2, { maskOf: () => [0, 0, 1] }).data), [0, 0, 30], 'no key: zeros');
  const g = rng(3), tensor = (dims) => ({ data: Float64Array.from({ length: dims.reduce((a, b) => a * b) }, g.normal), dims });
  const q4 = tensor([2, 4, 5, 3]), k4 = tensor([2, 2, 5, 3]), v4 = tensor([2, 2, 5, 2]);
  const kRep = { data: new Float64Array(2 * 4 * 5 * 3), dims: [2, 4, 5, 3] }, vRep = { data: new Float64Array(2 * 4 * 5 * 2), dims: [2, 4, 5, 2] };
  for (let h = 0; h < 8; h++) {  // query head h of batch b reads key/value head (b, floor(h / 2))
    const kv = Math.floor(h / 4) * 2 + Math.floor((h % 4) / 2);
    kRep.data.set(k4.data.subarray(kv * 15, kv * 15 + 15), h * 15), vRep.data.set(v4.data.subarray(kv * 10, kv * 10 + 10), h * 10);
  }
  const want = ref.exactAttention(q4, kRep, vRep, { causal: true }).data, got = ref.slidingWindowAttention(q4, k4, v4, 5).data;
  want.forEach((x, i) => close(got[i], x, 1e-14, `window 5 = causal, entry ${i}`));
});

test('OPRF rho: brute force equals the O(Ld) formula of docs/design.md §3; A* < 1/8, B^2 = 1 - 4A', () => {
  const g = rng(1);
  const x = Array.from({ length: 7 }, () => Float64Array.from({ length: 3 }, g.normal));
  const y = Array.from({ length: 5 }, () => Float64Array.from({ length: 3 }, g.normal));
  const mean = (rows) => rows.reduce((s, r) => s.map((v, i) => v + r[i] / rows.length), new Float64Array(3));
  const msq = (rows) => rows.reduce((s, r) => s + r.reduce((t, v) => t + v * v, 0), 0) / rows.length;
  const mx = mean(x), my = mean(y);
  close(ref.oprfRho(x, y), msq(x) + msq(y) + 2 * (mx[0] * my[0] + mx[1] * my[1] + mx[2] * my[2]), 1e-13, 'rho');
  for (const rho of [0, 0.5, 3, 40]) {
    const c = ref.oprfCoefficients(rho, 3);
    assert.ok(c.a < 1 / 8 && c.a <= 0);
    close(c.b * c.b, 1 - 4 * c.a, 1e-14, 'B^2');
    close(c.D, Math.pow(1 - 4 * c.a, 3 / 4), 1e-14, 'D');
  }
});

test('hyperbolic = mean of positive with W and -W; relu = (relu(Wx) + eps).(relu(Wy) + eps)', () => {
  const g = rng(2);
  const w = Array.from({ length: 6 }, () => Float64Array.from({ length: 4 }, g.normal));
  const negW = w.map((r) => r.map((v) => -v));
  const x = [Float64Array.from({ length: 4 }, () => 0.5 * g.normal())];
  const y = [Float64Array.from({ length: 4 }, () => 0.5 * g.normal())];
  const hyp = ref.kernelEstimateHead('hyperbolic', w, x, y)[0][0];
  const pos = ref.kernelEstimateHead('positive', w, x, y)[0][0];
  const neg = ref.kernelEstimateHead('positive', negW, x, y)[0][0];
  close(hyp, (pos + neg) / 2, 1e-14, 'hyperbolic identity');
  const relu = ref.kernelEstimateHead('relu', w, x, y, { epsilon: 0.1 })[0][0];
  let expected = 0;
  for (const r of w) {
    const dx = r.reduce((s, v, i) => s + v * x[0][i], 0), dy = r.reduce((s, v, i) => s + v * y[0][i], 0);
    expected += (Math.max(dx, 0) + 0.1) * (Math.max(dy, 0) + 0.1);
  }
  close(relu, expected, 1e-14, 'relu');
  // trigonometric: exp(|x|^2/2 + |y|^2/2) mean_r cos(w_r.(x - y))
  const trig = ref.kernelEstimateHead('trigonometric', w, x, y)[0][0];
  const sq = (v) => v.reduce((s, t) => s + t * t, 0);
  let cosMean = 0;
  for (const r of w) cosMean += Math.cos(r.reduce((s, v, i) => s + v * (x[0][i] - y[0][i]), 0)) / w.length;
  close(trig, Math.exp(sq(x[0]) / 2 + sq(y[0]) / 2) * cosMean, 1e-13, 'trigonometric identity');
});

test('every softmax estimator is unbiased: phi(x).phi(y) -> exp(x.y) for many iid features', () => {
  // m = 40000 iid Gaussian rows, |x|, |y| ~ 0.6: the relative standard deviation of each
  // estimate is <~ 0.6/sqrt(m) ~ 3e-3, so 2e-2 is > 5 standard deviations (fixed seed).
  const g = rng(3), m = 40000, d = 3;
  const w = Array.from({ length: m }, () => Float64Array.from({ length: d }, g.normal));
  const x = [Float64Array.from([0.3, -0.4, 0.2])], y = [Float64Array.from([0.1, 0.5, -0.3])];
  const target = Math.exp(0.03 - 0.2 - 0.06);
  for (const kernel of ['positive', 'hyperbolic', 'trigonometric', 'oprf']) {
    const est = ref.kernelEstimateHead(kernel, w, x, y)[0][0];
    assert.ok(Math.abs(est / target - 1) < 2e-2, `${kernel}: ${est} vs ${target}`);
  }
});

test('favor matrix: rows normalized, causal mask; compare and outputRelativeError basics', () => {
  const g = rng(4);
  const w = { data: Float64Array.from({ length: 8 * 3 }, g.normal), dims: [8, 3] };
  const q = { data: Float64Array.from({ length: 5 * 3 }, g.normal), dims: [5, 3] };
  const a = ref.favorAttentionMatrix('positive', w, q, q, { causal: true }).data;
  for (let i = 0; i < 5; i++) {
    let s = 0;
    for (let j = 0; j < 5; j++) {
      s += a[i * 5 + j];
      if (j > i) assert.equal(a[i * 5 + j], 0);
    }
    close(s, 1, 1e-14, `row ${i}`);
  }
  const e = ref.compare({ data: a, dims: [5, 5] }, { data: a, dims: [5, 5] });
  assert.deepEqual([e.mse, e.relFrobenius, e.maxAbs], [0, 0, 0]);
  // the masked zeros of A^ are floored at 1e-12 and the row renormalized: KL ~ 1e-12, not 0
  assert.ok(e.meanRowKL >= 0 && e.meanRowKL < 1e-10, `meanRowKL ${e.meanRowKL}`);
  close(ref.outputRelativeError({ data: [3, 4], dims: [1, 2] }, { data: [3, 5], dims: [1, 2] }), 0.2, 1e-15, 'output error');
  assert.equal(ref.maxRelError([1, NaN], [1, 2]), Infinity, 'NaN never passes');
  assert.equal(ref.relFrobenius([1, 2], [1, 2, 3]), Infinity, 'size mismatch never passes');
});
