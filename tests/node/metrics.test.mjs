// compare() and outputRelativeError() against the float64 reference and hand-computed values,
// including approximate matrices with negative entries (the trigonometric kernel gives them).
//
// Tolerance: the package computes these in double from the same float32 inputs as the
// reference; only summation order differs (~1e-15 relative), so 1e-10 relative. meanRowKL also
// gets 2e-6 absolute where the approximate rows are float32 probabilities: their sums differ
// from 1 by <~ 1e-6, and whether a row without floored entries is renormalized or not (the
// docs only say the floored rows are) changes KL by sum(p) * log(sum(q)) ~ 1e-6. A wrong floor,
// log base, row/column mix-up or mean changes it by far more.
import assert from 'node:assert/strict';
import { before, test } from 'node:test';

import { loadFavor } from 'favor-attention';

import { normalTensor, uniformTensor } from './helpers.mjs';
import * as ref from './reference.mjs';

const TOL = 1e-10;
let favor;
before(async () => {
  favor = await loadFavor();
});

function close(got, expected, what) {
  const err = Math.abs(got - expected) / Math.max(Math.abs(expected), 1e-300);
  assert.ok(err <= TOL || got === expected, `${what}: got ${got}, expected ${expected} (relative error ${err})`);
}

function checkCompare(exact, approx, label) {
  const got = favor.compare(exact, approx);
  assert.deepEqual(Object.keys(got).sort(), ['maxAbs', 'meanRowKL', 'mse', 'relFrobenius']);
  const expected = ref.compare(exact, approx);
  for (const key of ['mse', 'relFrobenius', 'maxAbs']) close(got[key], expected[key], `${label} ${key}`);
  const klError = Math.abs(got.meanRowKL - expected.meanRowKL);
  assert.ok(klError <= 1e-10 * Math.abs(expected.meanRowKL) + 2e-6, `${label} meanRowKL: got ${got.meanRowKL}, expected ${expected.meanRowKL}`);
  return got;
}

const f32 = (rows) => ({ data: Float32Array.from(rows.flat()), dims: [rows.length, rows[0].length] });

test('compare: hand-computed values', () => {
  const exact = f32([[0.5, 0.5], [1, 0]]);
  const approx = f32([[0.25, 0.75], [0.5, 0.5]]);
  const e = favor.compare(exact, approx);
  close(e.mse, (0.0625 + 0.0625 + 0.25 + 0.25) / 4, 'mse');
  close(e.relFrobenius, Math.sqrt(0.625 / 1.5), 'relFrobenius');
  close(e.maxAbs, 0.5, 'maxAbs');
  const kl0 = 0.5 * Math.log(0.5 / 0.25) + 0.5 * Math.log(0.5 / 0.75);
  const kl1 = Math.log(1 / 0.5);
  close(e.meanRowKL, (kl0 + kl1) / 2, 'meanRowKL');
});

test('compare: identical matrices give zero mse, relFrobenius and maxAbs', () => {
  const a = favor.attentionMatrix(normalTensor([17, 4], 1), normalTensor([23, 4], 2));
  const e = favor.compare(a, a);
  assert.equal(e.mse, 0);
  assert.equal(e.relFrobenius, 0);
  assert.equal(e.maxAbs, 0);
  assert.ok(Math.abs(e.meanRowKL) < 1e-6);
});

// Regression (fixed): the core renormalizes every approximate row but not the
// exact row, so for float32 rows that sum to 1 - 1e-7 KL(A || A) comes out negative
// (-1.6e-8 here) instead of 0, and KL is never negative. Breaks e.g. a log-scale KL plot.
test('compare: KL(A || A) is exactly 0 and never negative', () => {
  const a = favor.attentionMatrix(normalTensor([17, 4], 1), normalTensor([23, 4], 2));
  const e = favor.compare(a, a);
  assert.ok(e.meanRowKL >= 0, `meanRowKL ${e.meanRowKL} is negative`);
  assert.equal(e.meanRowKL, 0);
});

test('compare: an approximate matrix with negative and zero entries (KL floors them at 1e-12 and renormalizes)', () => {
  // hand-computed row: [0.6, -0.1, 0.5] -> [0.6, 1e-12, 0.5] / (1.1 + 1e-12); exact row / its sum
  const exact = f32([[0.5, 0.2, 0.3]]);
  const approx = f32([[0.6, -0.1, 0.5]]);
  const e = favor.compare(exact, approx);
  const p = [0.5, 0.2, 0.3].map(Math.fround), a = [0.6, 1e-12, 0.5].map((x, i) => (i === 1 ? x : Math.fround(x)));
  const total = a[0] + a[1] + a[2], pTotal = p[0] + p[1] + p[2];  // both rows normalized
  const kl = p.reduce((s, pi, i) => s + (pi / pTotal) * Math.log((pi / pTotal) / (a[i] / total)), 0);
  close(e.meanRowKL, kl, 'meanRowKL with a negative entry');
  close(e.maxAbs, Math.fround(0.2) - Math.fround(-0.1), 'maxAbs');
  // a larger signed case against the reference: trigonometric-like rows that sum to 1 with
  // negative entries, and some exact zeros
  const ex = favor.attentionMatrix(normalTensor([30, 6], 3), normalTensor([30, 6], 4), { causal: true });
  const ap = uniformTensor([30, 30], 5, -0.05, 0.1);
  for (let i = 0; i < 30; i++) ap.data[i * 30 + (i % 30)] = 0;
  checkCompare(ex, ap, 'signed approx');
});

test('compare: against the float64 reference on real exact vs approximate matrices, every kernel, rank 2-4', () => {
  for (const kernel of ['positive', 'hyperbolic', 'trigonometric', 'relu', 'oprf']) {
    for (const lead of [[], [3], [2, 2]]) {
      const q = normalTensor([...lead, 24, 8], 10, 0.8), k = normalTensor([...lead, 24, 8], 11, 0.8);
      const exact = favor.attentionMatrix(q, k);
      const map = favor.createFeatureMap({ dim: 8, features: 6, kernel, seed: 2 });
      const approx = favor.favorAttentionMatrix(q, k, { featureMap: map });
      const e = checkCompare(exact, approx, `${kernel} [${lead}]`);
      assert.ok(e.relFrobenius > 0 && e.meanRowKL > 0, 'a 6-feature estimate is not exact');
      map.dispose();
    }
  }
});

test('compare: signed matrices (both with negative entries): mse, relFrobenius and maxAbs', () => {
  const a = normalTensor([2, 10, 12], 20), b = normalTensor([2, 10, 12], 21);
  const got = favor.compare(a, b);
  const expected = ref.compare(a, b);
  for (const key of ['mse', 'relFrobenius', 'maxAbs']) close(got[key], expected[key], key);
});

test('compare: rows are the last dim across every head (meanRowKL averages all rows)', () => {
  // head 0 identical, head 1 different: meanRowKL is half the head-1 value
  const e0 = favor.attentionMatrix(normalTensor([8, 4], 30), normalTensor([8, 4], 31));
  const e1 = favor.attentionMatrix(normalTensor([8, 4], 32), normalTensor([8, 4], 33));
  const a1 = favor.attentionMatrix(normalTensor([8, 4], 34), normalTensor([8, 4], 35));
  const stack = (x, y) => ({ data: Float32Array.from([...x.data, ...y.data]), dims: [2, 8, 8] });
  const both = favor.compare(stack(e0, e1), stack(e0, a1));
  const one = favor.compare(e1, a1);
  const zero = favor.compare(e0, e0);
  close(both.meanRowKL, (zero.meanRowKL + one.meanRowKL) / 2, 'meanRowKL over heads');
  close(both.mse, one.mse / 2, 'mse over heads');
  close(both.maxAbs, one.maxAbs, 'maxAbs over heads');
});

test('outputRelativeError: hand-computed, against the reference, signed values, ranks 2-4', () => {
  close(favor.outputRelativeError(f32([[3, 4]]), f32([[3, 5]])), 1 / 5, 'hand-computed');
  assert.equal(favor.outputRelativeError(f32([[1, -2]]), f32([[1, -2]])), 0);
  for (const dims of [[7, 3], [2, 7, 3], [2, 2, 5, 4]]) {
    const a = normalTensor(dims, 40), b = normalTensor(dims, 41);
    close(favor.outputRelativeError(a, b), ref.outputRelativeError(a, b), `random [${dims}]`);
  }
  // a real use: exact vs approximate attention
  const q = normalTensor([2, 30, 8], 50, 0.7), k = normalTensor([2, 30, 8], 51, 0.7), v = normalTensor([2, 30, 5], 52);
  const exact = favor.exactAttention(q, k, v);
  const approx = favor.favorAttention(q, k, v, { featureMap: favor.createFeatureMap({ dim: 8, features: 32, kernel: 'oprf' }) });
  const e = favor.outputRelativeError(exact, approx);
  close(e, ref.outputRelativeError(exact, approx), 'exact vs favor');
  assert.ok(e > 0 && e < 1);
});
