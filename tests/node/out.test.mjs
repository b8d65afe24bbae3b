// options.out: every call that returns a computed tensor (attention, its matrices, matmul, a
// causal state's append) writes it into the caller's Float32Array and returns that array as the
// result's data, with the same bits as the array it would have made. A wrong type is a TypeError
// and a wrong length a RangeError, both naming `out`; out is written only when the call succeeds,
// a causal state is unchanged after any error, and nothing leaks. Through the worker API the
// outcomes are the synchronous ones, and the caller's out is never moved.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { loadFavor } from 'favor-attention';

import { normalTensor, withValue } from './helpers.mjs';
import { assertSameOutcome, outcome } from './worker-helpers.mjs';

// q [2, 5, 8] and v [2, 7, 8]: exact attention's output has q's size, so q's array can be out.
const q = normalTensor([2, 5, 8], 1), k = normalTensor([2, 7, 8], 2), v = normalTensor([2, 7, 8], 3);
const codebook = normalTensor([6, 8], 4);
const a = normalTensor([5, 8], 5), b = normalTensor([3, 8], 6), bias = { data: new Float32Array([0.5, -1, 2]), dims: [3] };
const step = [normalTensor([2, 1, 8], 7), normalTensor([2, 1, 8], 8), normalTensor([2, 1, 8], 9)];

// [name, (favor, options, map) => result]: each call with options merged into its own. The
// append runs on a fresh favor state that has seen q, k, v (so each call sees the same state).
const CALLS = [
  ['exactAttention', (f, o) => f.exactAttention(q, k, v, { causal: true, ...o })],
  ['attentionMatrix', (f, o) => f.attentionMatrix(q, k, { scale: 0.3, ...o })],
  ['favorAttention', (f, o, map) => f.favorAttention(q, k, v, { featureMap: map, chunk: 3, ...o })],
  ['favorAttentionMatrix', (f, o, map) => f.favorAttentionMatrix(q, k, { featureMap: map, causal: true, ...o })],
  ['codebookAttention', (f, o) => f.codebookAttention(q, k, v, { codebook, assignment: 'soft', ...o })],
  ['codebookAttentionMatrix', (f, o) => f.codebookAttentionMatrix(q, k, { codebook, ...o })],
  ['matmul', (f, o) => f.matmul(a, b, { transposeB: true, bias, ...o })],
  ['append', async (f, o, map) => {
    const state = await f.createCausalState({ method: 'favor', featureMap: map });
    try {
      await state.append(q, q, q);
      return await state.append(...step, o);
    } finally {
      await state.dispose();
    }
  }],
];

const bits = (array) => new Uint32Array(array.buffer, array.byteOffset, array.length);
const sentinel = (n) => new Float32Array(n).fill(7.25);
const untouched = (array) => array.every((x) => x === 7.25);

let favor, map;
before(async () => {
  favor = await loadFavor();
  map = favor.createFeatureMap({ dim: 8, features: 16, seed: 3 });
});

describe('options.out in the synchronous API', () => {
  for (const [name, call] of CALLS) {
    test(`${name}: writes into out, returns it, the same bits as without out`, async () => {
      const fresh = await call(favor, {}, map);
      const out = sentinel(fresh.data.length);
      const result = await call(favor, { out }, map);
      assert.equal(result.data, out, 'the result is out itself');
      assert.deepEqual(result.dims, fresh.dims);
      assert.deepEqual(bits(out), bits(fresh.data));
      // A repeat into the same array gives the same bits again (nothing kept from the last call).
      out.fill(-1);
      await call(favor, { out }, map);
      assert.deepEqual(bits(out), bits(fresh.data));
    });

    test(`${name}: a wrong length is a RangeError naming out and the expected size, before any write`, async () => {
      const n = (await call(favor, {}, map)).data.length;
      for (const length of [n - 1, n + 1, 0]) {
        const out = sentinel(length);
        await assert.rejects(async () => call(favor, { out }, map), (e) => {
          assert.ok(e instanceof RangeError, `${e}`);
          assert.match(e.message, new RegExp(`^${name}: out: expected a Float32Array of ${n} floats \\(the output's dims \\[[\\d, ]+\\]\\), got one of ${length}`));
          return true;
        });
        assert.ok(untouched(out), 'out unchanged');
      }
    });

    test(`${name}: out of another type is a TypeError naming out`, async () => {
      const n = (await call(favor, {}, map)).data.length;
      for (const bad of [new Float64Array(n), Array.from({ length: n }, () => 0), { data: new Float32Array(n), dims: [n] }, null, 'out']) {
        await assert.rejects(async () => call(favor, { out: bad }, map), (e) => e instanceof TypeError && new RegExp(`^${name}: out: expected a Float32Array`).test(e.message));
      }
    });
  }

  test('out may be an input\'s array: the inputs are read before it is written', () => {
    const expected = favor.exactAttention(q, k, v);
    const own = { data: q.data.slice(), dims: q.dims };
    const result = favor.exactAttention(own, k, v, { out: own.data });
    assert.equal(result.data, own.data);
    assert.deepEqual(bits(own.data), bits(expected.data));
    const vOwn = { data: v.data.slice(), dims: v.dims };
    const kv = favor.favorAttention(k, k, vOwn, { featureMap: map, out: vOwn.data });
    assert.deepEqual(bits(kv.data), bits(favor.favorAttention(k, k, v, { featureMap: map }).data));
  });

  test('out keeps its own values when the call fails inside wasm (a NaN input)', () => {
    const out = sentinel(2 * 5 * 8);
    assert.throws(() => favor.exactAttention(withValue(q, 3, NaN), k, v, { out }), RangeError);
    assert.throws(() => favor.favorAttention(q, withValue(k, 0, Infinity), v, { featureMap: map, out }), RangeError);
    assert.ok(untouched(out));
  });

  test('a causal state is unchanged by an append whose out has the wrong length', () => {
    const state = favor.createCausalState({ method: 'favor', featureMap: map });
    const twin = favor.createCausalState({ method: 'favor', featureMap: map });
    state.append(q, q, q), twin.append(q, q, q);
    const bytes = state.stateBytes;
    assert.throws(() => state.append(...step, { out: new Float32Array(3) }), { name: 'RangeError', message: /^append: out: expected a Float32Array of 16 floats/ });
    assert.equal(state.length, 5, 'no position was appended');
    assert.equal(state.stateBytes, bytes);
    const out = sentinel(16);
    state.append(...step, { out });
    assert.deepEqual(bits(out), bits(twin.append(...step).data), 'the next append gives what it gives on a state that saw no error');
    state.dispose(), twin.dispose();
  });

  test('calls with out allocate nothing that stays: bytes in use back to the baseline, errors included', () => {
    const instance = favor;
    const before0 = instance.memory();
    const out = new Float32Array(2 * 5 * 8);
    for (let i = 0; i < 500; i++) {
      instance.favorAttention(q, k, v, { featureMap: map, out });
      assert.throws(() => instance.exactAttention(q, k, v, { out: new Float32Array(i % 79) }), RangeError);
      assert.throws(() => instance.matmul(a, b, { transposeB: true, out: new Float64Array(15) }), TypeError);
    }
    const after0 = instance.memory();
    assert.equal(after0.usedBytes, before0.usedBytes, 'bytes in use');
    assert.equal(after0.heapBytes, before0.heapBytes, 'the heap did not grow');
  });
});

describe('options.out through the worker API', () => {
  let worker, workerMap, transferring;
  before(async () => {
    worker = await loadFavor({ worker: true });
    transferring = await loadFavor({ worker: true, transfer: true });
    workerMap = await worker.createFeatureMap({ dim: 8, features: 16, seed: 3 });
  });
  after(async () => {
    await worker?.dispose();
    await transferring?.dispose();
  });

  for (const [name, call] of CALLS) {
    test(`${name}: the synchronous outcomes, into the caller's out`, async () => {
      const n = (await call(favor, {}, map)).data.length;
      for (const out of [sentinel(n), sentinel(n + 2), new Float64Array(n), undefined]) {
        const mine = out instanceof Float32Array ? sentinel(out.length) : out;
        const expected = await outcome(() => call(favor, { out: mine }, map));
        const actual = await outcome(() => call(worker, { out }, workerMap));
        assertSameOutcome(actual, expected, `${name} with out ${out?.constructor.name ?? out} of ${out?.length}`);
        if (out instanceof Float32Array && !expected.error) assert.equal(actual.value.data, out, 'the result is the caller\'s out');
        if (out instanceof Float32Array && expected.error) assert.ok(untouched(out), 'out unchanged after the error');
      }
    });
  }

  test('with transfer: true the caller\'s out is written, never moved; a failed append leaves the state unchanged', async () => {
    const tmap = await transferring.createFeatureMap({ dim: 8, features: 16, seed: 3 });
    const out = sentinel(2 * 5 * 8);
    const result = await transferring.favorAttention({ data: q.data.slice(), dims: q.dims }, { data: k.data.slice(), dims: k.dims },
      { data: v.data.slice(), dims: v.dims }, { featureMap: tmap, out });
    assert.equal(result.data, out);
    assert.equal(out.length, 80, 'out is not detached');
    assert.deepEqual(bits(out), bits(favor.favorAttention(q, k, v, { featureMap: map }).data));
    // out may be an input's own array: that input is copied, never moved, and the result lands in it.
    const qOwn = { data: q.data.slice(), dims: q.dims }, kOwn = { data: k.data.slice(), dims: k.dims };
    const into = await transferring.favorAttention(qOwn, kOwn, { data: v.data.slice(), dims: v.dims }, { featureMap: tmap, out: qOwn.data });
    assert.equal(into.data, qOwn.data);
    assert.equal(qOwn.data.length, 80, 'the input that is out was not moved');
    assert.equal(kOwn.data.length, 0, 'the other inputs were moved');
    assert.deepEqual(bits(qOwn.data), bits(result.data));
    const state = await worker.createCausalState({ method: 'exact' });
    await state.append(q, q, q);
    await assert.rejects(state.append(...step, { out: new Float32Array(1) }), RangeError);
    assert.equal(await state.length, 5);
    await state.dispose();
  });
});
