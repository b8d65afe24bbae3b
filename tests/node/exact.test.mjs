// exactAttention and attentionMatrix against the float64 brute-force reference: bidirectional,
// causal, cross (L != S, dv != d), scale, ranks 2/3/4, block boundaries (the core streams 64
// queries x 128 keys per block, in strips of 8 queries), large scores (online softmax must not
// overflow).
//
// Tolerance: 1e-5 of the largest reference entry. float32 computes each score q.k over d terms
// (relative error ~d * 6e-8 of |q||k|), exp amplifies an absolute score error e into a relative
// error e; with |scores| <~ 10 here that is ~1e-6 of the output, so 1e-5 has a 10x margin while
// any indexing, masking, scaling or normalization mistake is >= 1e-2.
import assert from 'node:assert/strict';
import { before, test } from 'node:test';

import { loadFavor } from 'favor-attention';

import { assertBelow, cloneTensor, normalTensor } from './helpers.mjs';
import * as ref from './reference.mjs';

const TOL = 1e-5;
let favor;
before(async () => {
  favor = await loadFavor();
});

function check(lead, L, S, d, dv, options, seed, std = 1) {
  const q = normalTensor([...lead, L, d], seed, std);
  const k = normalTensor([...lead, S, d], seed + 1, std);
  const v = normalTensor([...lead, S, dv], seed + 2);
  const label = `lead [${lead}] L=${L} S=${S} d=${d} dv=${dv} ${JSON.stringify(options ?? {})}`;

  const out = favor.exactAttention(q, k, v, options);
  assert.deepEqual(out.dims, [...lead, L, dv], label);
  assert.ok(out.data instanceof Float32Array);
  assertBelow(ref.maxRelError(out.data, ref.exactAttention(q, k, v, options).data), TOL, `exactAttention ${label}`);

  const a = favor.attentionMatrix(q, k, options);
  assert.deepEqual(a.dims, [...lead, L, S], label);
  assert.ok(a.data instanceof Float32Array);
  const expectedA = ref.attentionMatrix(q, k, options);
  assertBelow(ref.maxRelError(a.data, expectedA.data), TOL, `attentionMatrix ${label}`);
  // rows sum to 1, masked entries are exactly 0
  for (let r = 0; r < a.data.length / S; r++) {
    let sum = 0;
    for (let j = 0; j < S; j++) {
      const x = a.data[r * S + j];
      sum += x;
      if (options?.causal && j > r % L) assert.equal(x, 0, `${label}: causal mask at row ${r % L}, col ${j}`);
      else assert.ok(x >= 0, `${label}: negative probability`);
    }
    assert.ok(Math.abs(sum - 1) < 1e-5, `${label}: row ${r} sums to ${sum}`);
  }
}

test('bidirectional, rank 2, default scale', () => {
  check([], 20, 20, 16, 16, undefined, 10);
  check([], 17, 17, 8, 8, {}, 11);
  check([], 17, 17, 8, 8, { causal: false }, 12);
});

test('causal, rank 2 (query i sees keys j <= i)', () => {
  check([], 20, 20, 16, 16, { causal: true }, 20);
  check([], 1, 1, 4, 3, { causal: true }, 21);
});

test('cross attention: L != S and dv != d', () => {
  check([], 13, 29, 8, 3, undefined, 30);
  check([], 40, 7, 5, 11, undefined, 31);
  check([], 1, 50, 6, 1, undefined, 32);
});

test('explicit scale (replaces 1/sqrt(d)), causal and not', () => {
  check([], 24, 24, 8, 8, { scale: 0.05 }, 40);
  check([], 24, 31, 8, 4, { scale: 1.3 }, 41);
  check([], 24, 24, 8, 8, { scale: 0.7, causal: true }, 42);
  // a different scale really changes the result
  const q = normalTensor([10, 8], 43), k = normalTensor([10, 8], 44), v = normalTensor([10, 3], 45);
  const a = favor.exactAttention(q, k, v, { scale: 0.1 });
  const b = favor.exactAttention(q, k, v, { scale: 1 });
  assert.ok(ref.maxRelError(a.data, b.data) > 1e-2);
  // scale = 1/sqrt(d) given explicitly equals the default
  const c = favor.exactAttention(q, k, v, { scale: 1 / Math.sqrt(8) });
  const dflt = favor.exactAttention(q, k, v);
  assertBelow(ref.maxRelError(c.data, dflt.data), 1e-6, 'explicit default scale');
});

test('rank 3 [H, L, d]', () => {
  check([3], 19, 19, 8, 8, undefined, 50);
  check([3], 19, 19, 8, 8, { causal: true }, 51);
  check([2], 9, 23, 4, 6, { scale: 0.4 }, 52);
});

test('rank 4 [B, H, L, d]', () => {
  check([2, 3], 11, 11, 8, 8, undefined, 60);
  check([2, 3], 11, 11, 8, 5, { causal: true }, 61);
  check([2, 2], 7, 15, 4, 9, undefined, 62);
});

test('rank 5 (any number of leading dims)', () => {
  check([2, 1, 2], 5, 6, 4, 3, undefined, 65);
});

test('every head uses its own slice (heads are not mixed up)', () => {
  // Head h of q/k/v is the same single-head problem scaled differently; each output head must
  // equal the single-head call on its slice.
  const q = normalTensor([4, 9, 8], 70), k = normalTensor([4, 12, 8], 71), v = normalTensor([4, 12, 3], 72);
  const out = favor.exactAttention(q, k, v);
  for (let h = 0; h < 4; h++) {
    const slice = (t, rows, cols) => ({ data: t.data.slice(h * rows * cols, (h + 1) * rows * cols), dims: [rows, cols] });
    const one = favor.exactAttention(slice(q, 9, 8), slice(k, 12, 8), slice(v, 12, 3));
    assertBelow(ref.maxRelError(out.data.subarray(h * 27, (h + 1) * 27), one.data), 1e-6, `head ${h}`);
  }
});

test('sizes crossing block boundaries: L = S = 1, 65, 300 (64-query and 128-key blocks)', () => {
  for (const n of [1, 65, 300]) {
    check([], n, n, 16, 8, undefined, 80 + n);
    check([], n, n, 16, 8, { causal: true }, 90 + n);
  }
  check([], 65, 300, 8, 4, undefined, 100);
  check([], 300, 257, 8, 4, undefined, 101);
  check([2], 129, 513, 4, 2, undefined, 102);
});

test('large scores do not overflow (online softmax keeps a running max)', () => {
  // scores up to ~|q||k|/sqrt(d) ~ 4000: exp() would overflow float32 without the max shift.
  // The reference subtracts the row max in float64. The tolerance is looser here: a score of
  // size ~4000 carries an absolute float32 rounding error of ~4000 * 6e-8 * sqrt(d) ~ 1e-3, which
  // exp turns into a relative error of that size on near-tie entries; rows here are nearly
  // one-hot (measured error ~3e-8), so 1e-4 still fails on any real overflow or masking bug.
  const q = normalTensor([70, 16], 110, 30), k = normalTensor([70, 16], 111, 30), v = normalTensor([70, 4], 112);
  for (const causal of [false, true]) {
    const out = favor.exactAttention(q, k, v, { causal });
    assert.ok(out.data.every(Number.isFinite), 'finite output');
    assertBelow(ref.maxRelError(out.data, ref.exactAttention(q, k, v, { causal }).data), 1e-4, `large scores causal=${causal}`);
    const a = favor.attentionMatrix(q, k, { causal });
    assert.ok(a.data.every(Number.isFinite), 'finite matrix');
    assertBelow(ref.maxRelError(a.data, ref.attentionMatrix(q, k, { causal }).data), 1e-4, `large-score matrix causal=${causal}`);
  }
});

test('inputs are not modified, and a tensor whose data is a subarray view works', () => {
  const q = normalTensor([12, 8], 120), k = normalTensor([12, 8], 121), v = normalTensor([12, 5], 122);
  const [q0, k0, v0] = [cloneTensor(q), cloneTensor(k), cloneTensor(v)];
  favor.exactAttention(q, k, v, { causal: true });
  favor.attentionMatrix(q, k);
  assert.deepEqual(q, q0);
  assert.deepEqual(k, k0);
  assert.deepEqual(v, v0);
  // q as a view at an offset into a larger buffer
  const big = new Float32Array(1000);
  big.set(q.data, 333);
  const qView = { data: big.subarray(333, 333 + q.data.length), dims: [12, 8] };
  const a = favor.exactAttention(qView, k, v);
  const b = favor.exactAttention(q, k, v);
  assert.deepEqual(a.data, b.data);
});

test('dims arrays are not aliased into the result', () => {
  const q = normalTensor([2, 5, 4], 130), k = normalTensor([2, 6, 4], 131), v = normalTensor([2, 6, 3], 132);
  const out = favor.exactAttention(q, k, v);
  assert.notEqual(out.dims, q.dims);
  out.dims[0] = 99;
  assert.deepEqual(q.dims, [2, 5, 4]);
});
