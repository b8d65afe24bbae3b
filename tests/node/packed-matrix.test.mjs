// favor.packMatrix: b checked and packed once in wasm memory, then matmul(a, packed) gives the
// same bits as matmul(a, b) (both layouts, bias, leading dims, out) and the float64 product; its
// settings, errors (bad b when packing, a disposed or foreign packed matrix, transposeB given
// again, a wrong k), memory (freed by dispose(), nothing left by errors), and the same outcomes
// through the worker API.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { loadFavor } from 'favor-attention';

import { assertBelow, normalTensor, withValue } from './helpers.mjs';
import * as ref from './reference.mjs';
import { assertSameOutcome, outcome } from './worker-helpers.mjs';

const a = normalTensor([2, 5, 12], 1);
const bKM = normalTensor([12, 7], 2), bMK = normalTensor([7, 12], 3);
const bias = { data: Float32Array.from({ length: 7 }, (_, i) => i / 4 - 0.5), dims: [7] };
const bits = (array) => Array.from(new Uint32Array(array.buffer, array.byteOffset, array.length));

let favor, other;
before(async () => {
  [favor, other] = await Promise.all([loadFavor(), loadFavor()]);
});

describe('packMatrix in the synchronous API', () => {
  for (const [label, b, transposeB] of [['b [k, m]', bKM, false], ['b [m, k] (transposeB)', bMK, true]]) {
    test(`${label}: matmul with the packed b gives matmul's bits and the float64 product`, () => {
      const packed = favor.packMatrix(b, { transposeB });
      assert.deepEqual(packed.dims, b.dims);
      assert.equal(packed.transposeB, transposeB);
      assert.ok(packed.bytes >= 4 * b.data.length, `bytes ${packed.bytes}`);
      for (const options of [{}, { bias }]) {
        const plain = favor.matmul(a, b, { transposeB, ...options });
        const fast = favor.matmul(a, packed, options);
        assert.deepEqual(fast.dims, [2, 5, 7]);
        assert.deepEqual(bits(fast.data), bits(plain.data));
        const expected = ref.linearProduct(a, b, transposeB, options.bias);
        let worst = 0;
        for (let i = 0; i < expected.length; i++) worst = Math.max(worst, Math.abs(fast.data[i] - expected[i]) / (1 + Math.abs(expected[i])));
        assertBelow(worst, 1e-5, 'against float64');  // 12 float32 terms
        const out = new Float32Array(70);
        assert.equal(favor.matmul(a, packed, { ...options, out }).data, out);
        assert.deepEqual(bits(out), bits(plain.data));
      }
      // The packed matrix is a copy: changing b afterwards changes nothing.
      const copy = { data: b.data.slice(), dims: b.dims };
      const again = favor.packMatrix(copy, { transposeB });
      copy.data.fill(0);
      assert.deepEqual(bits(favor.matmul(a, again).data), bits(favor.matmul(a, b, { transposeB }).data));
      again.dispose();
      packed.dispose();
      assert.equal(packed.disposed, true);
    });
  }

  test('errors name the argument; the instance keeps working', () => {
    const packed = favor.packMatrix(bKM);
    const cases = [
      [() => favor.packMatrix(withValue(bKM, 4, NaN)), RangeError, /^packMatrix: b\b/],
      [() => favor.packMatrix(normalTensor([2, 12, 7], 4)), RangeError, /^packMatrix: b: expected dims \[k, m\]/],
      [() => favor.packMatrix(bKM.data), TypeError, /^packMatrix: b: expected a tensor/],
      [() => favor.packMatrix(bKM, { transposeB: 'yes' }), TypeError, /^packMatrix: transposeB/],
      [() => favor.packMatrix(bKM, { transpose: true }), TypeError, /^packMatrix: options\.transpose: unknown option/],
      [() => favor.matmul(a, packed, { transposeB: false }), TypeError, /^matmul: transposeB: a packed b keeps the layout/],
      [() => favor.matmul(normalTensor([5, 11], 5), packed), RangeError, /^matmul: b: expected \[11, m\]/],
      [() => favor.matmul(a, packed, { bias: { data: new Float32Array(3), dims: [3] } }), RangeError, /^matmul: bias: expected dims \[7\]/],
      [() => favor.matmul(withValue(a, 0, Infinity), packed), RangeError, /^matmul: a\b/],
      [() => favor.matmul(a, other.packMatrix(bKM)), TypeError, /^matmul: b: a packed matrix of another favor instance/],
    ];
    for (const [call, type, pattern] of cases) assert.throws(call, (e) => e instanceof type && pattern.test(e.message), String(call));
    packed.dispose();
    assert.throws(() => favor.matmul(a, packed), { name: 'TypeError', message: 'matmul: b: this packed matrix has been disposed' });
    assert.throws(() => packed.bytes, { name: 'TypeError', message: 'matrix: this packed matrix has been disposed' });
    assert.throws(() => packed.dims, TypeError);
    packed.dispose();  // idempotent
    const fresh = favor.packMatrix(bKM);
    assert.deepEqual(bits(favor.matmul(a, fresh).data), bits(favor.matmul(a, bKM).data));
    fresh.dispose();
  });

  test('packing and disposing frees every byte; matmul with a packed b allocates nothing that stays', () => {
    const start = favor.memory().usedBytes;
    const out = new Float32Array(70);
    for (let i = 0; i < 300; i++) {
      const packed = favor.packMatrix(i % 2 ? bMK : bKM, { transposeB: i % 2 === 1 });
      favor.matmul(a, packed, { bias, out });
      assert.throws(() => favor.matmul(normalTensor([1, 3], i), packed), RangeError);
      assert.throws(() => favor.packMatrix(withValue(bKM, i % 84, NaN)), RangeError);
      packed.dispose();
    }
    assert.equal(favor.memory().usedBytes, start);
  });
});

describe('packMatrix through the worker API', () => {
  let worker;
  before(async () => {
    worker = await loadFavor({ worker: true });
  });
  after(() => worker?.dispose());

  test('the synchronous outcomes: products, errors, settings, disposed and foreign matrices', async () => {
    const mine = favor.packMatrix(bMK, { transposeB: true });
    const theirs = await worker.packMatrix(bMK, { transposeB: true });
    assert.deepEqual(theirs.dims, mine.dims);
    assert.equal(theirs.transposeB, true);
    assert.equal(await theirs.bytes, mine.bytes);
    const rows = [
      ['product', (f, p) => f.matmul(a, p, { bias })],
      ['product into out', (f, p) => f.matmul(a, p, { out: new Float32Array(70) })],
      ['transposeB again', (f, p) => f.matmul(a, p, { transposeB: true })],
      ['a wrong k', (f, p) => f.matmul(normalTensor([3, 5], 6), p)],
      ['a NaN b to pack', (f) => f.packMatrix(withValue(bKM, 1, NaN))],
      ['a rank-3 b to pack', (f) => f.packMatrix(normalTensor([1, 12, 7], 7))],
      ['a packed matrix of another instance', (f) => f.matmul(a, other.packMatrix(bKM))],
    ];
    for (const [label, call] of rows) assertSameOutcome(await outcome(() => call(worker, theirs)), await outcome(() => call(favor, mine)), label);
    mine.dispose();
    await theirs.dispose();
    assertSameOutcome(await outcome(() => worker.matmul(a, theirs)), await outcome(() => favor.matmul(a, mine)), 'a disposed packed matrix');
    assertSameOutcome(await outcome(() => theirs.bytes), await outcome(() => mine.bytes), 'bytes of a disposed packed matrix');
    const before0 = (await worker.memory()).usedBytes;
    for (let i = 0; i < 50; i++) await (await worker.packMatrix(bKM)).dispose();
    assert.equal((await worker.memory()).usedBytes, before0, 'packed matrices made and disposed in the worker leave nothing');
  });
});
