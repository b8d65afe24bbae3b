// Outputs are fresh arrays owned by the caller: they keep their values after many later calls
// and after the wasm heap grows (growth detaches every view into the old heap), they are not
// views of the module memory, and calls that grow the heap themselves return correct values.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { loadFavor } from 'favor-attention';

import { assertBelow, normalTensor } from './helpers.mjs';
import { HOSTILE_CASES, syncRun } from './hostile-cases.mjs';
import * as ref from './reference.mjs';

// Reference row i of softmax(scale q k^T) for one head (rank-2 tensors), in float64.
function referenceRow(q, k, i) {
  const d = q.dims[1], S = k.dims[0];
  const qi = q.data.subarray(i * d, (i + 1) * d);
  const k1 = { data: k.data, dims: [S, d] };
  return ref.attentionMatrix({ data: qi, dims: [1, d] }, k1).data;
}

// A fresh, independent copy of a typed array is not a view into some larger buffer.
function assertOwnBuffer(array, what) {
  assert.ok(array instanceof Float32Array, `${what}: Float32Array`);
  assert.equal(array.byteOffset, 0, `${what}: not an offset view`);
  assert.equal(array.buffer.byteLength, array.byteLength, `${what}: its buffer is exactly its own size, not the wasm heap`);
  assert.ok(!(array.buffer instanceof SharedArrayBuffer), `${what}: not shared memory`);
}

test('outputs keep their values after many later calls and after forcing memory growth', async () => {
  const favor = await loadFavor();
  const q = normalTensor([2, 40, 8], 1), k = normalTensor([2, 50, 8], 2), v = normalTensor([2, 50, 6], 3);
  const map = favor.createFeatureMap({ dim: 8, features: 32, kernel: 'hyperbolic', seed: 1 });
  const outputs = {
    exactAttention: favor.exactAttention(q, k, v),
    attentionMatrix: favor.attentionMatrix(q, k),
    favorAttention: favor.favorAttention(q, k, v, { featureMap: map }),
    favorAttentionMatrix: favor.favorAttentionMatrix(q, k, { featureMap: map }),
    projection: map.projection,
  };
  const saved = Object.fromEntries(Object.entries(outputs).map(([name, t]) => [name, t.data.slice()]));
  for (const [name, t] of Object.entries(outputs)) assertOwnBuffer(t.data, name);

  // many later calls of every kind
  for (let i = 0; i < 200; i++) {
    const qi = normalTensor([2, 40, 8], 100 + i);
    favor.exactAttention(qi, k, v, { causal: false });
    favor.favorAttention(qi, k, v, { featureMap: map, chunk: 7 });
    favor.compare(outputs.attentionMatrix, favor.attentionMatrix(qi, k));
  }
  for (const [name, t] of Object.entries(outputs)) assert.deepEqual(t.data, saved[name], `${name} after 200 calls`);

  // force heap growth: 2048^2, 4096^2 and 8192 x 4096 matrices (16, 64 and 128 MiB outputs;
  // the initial heap is 16 MiB)
  for (const [L, S] of [[2048, 2048], [4096, 4096], [8192, 4096]]) {
    const qb = normalTensor([L, 4], L, 0.5), kb = normalTensor([S, 4], S + 1, 0.5);
    const big = favor.attentionMatrix(qb, kb);
    assert.deepEqual(big.dims, [L, S]);
    assert.equal(big.data.length, L * S);
    assertOwnBuffer(big.data, `${L} x ${S} matrix`);
    // spot-check rows against float64 (first, middle, last): the output was read out of a heap
    // that grew during this very call. float32 scores over d = 4: 1e-5 as in exact.test.mjs.
    for (const i of [0, L >> 1, L - 1]) {
      assertBelow(ref.maxRelError(big.data.subarray(i * S, (i + 1) * S), referenceRow(qb, kb, i)), 1e-5, `${L} x ${S} row ${i}`);
    }
    for (const [name, t] of Object.entries(outputs)) assert.deepEqual(t.data, saved[name], `${name} after a ${L} x ${S} matrix`);
  }

  // the instance still computes correctly after growth (inputs go into the new heap)
  assertBelow(ref.maxRelError(favor.exactAttention(q, k, v).data, ref.exactAttention(q, k, v).data), 1e-5, 'exactAttention after growth');
  assert.deepEqual(favor.favorAttention(q, k, v, { featureMap: map }).data, saved.favorAttention);
  assert.deepEqual(map.projection.data, saved.projection);
  const w = map.projection;
  assertBelow(ref.maxRelError(favor.favorAttentionMatrix(q, k, { featureMap: map }).data, ref.favorAttentionMatrix('hyperbolic', w, q, k).data), 1e-4, 'favorAttentionMatrix after growth');
});

test('outputs are fresh arrays: mutating one does not affect a later identical call', async () => {
  const favor = await loadFavor();
  const q = normalTensor([16, 8], 10), k = normalTensor([16, 8], 11), v = normalTensor([16, 4], 12);
  const map = favor.createFeatureMap({ dim: 8, features: 16 });
  const calls = {
    exactAttention: () => favor.exactAttention(q, k, v),
    attentionMatrix: () => favor.attentionMatrix(q, k),
    favorAttention: () => favor.favorAttention(q, k, v, { featureMap: map }),
    favorAttentionMatrix: () => favor.favorAttentionMatrix(q, k, { featureMap: map }),
    projection: () => map.projection,
  };
  for (const [name, call] of Object.entries(calls)) {
    const first = call();
    const copy = first.data.slice();
    first.data.fill(-7);
    first.dims.push(1);
    const second = call();
    assert.notEqual(second.data, first.data, name);
    assert.notEqual(second.data.buffer, first.data.buffer, name);
    assert.deepEqual(second.data, copy, `${name}: a later call is unaffected by mutating an earlier output`);
    assert.equal(second.dims.length, 2, name);
  }
});

test('a single call that grows the heap by itself returns correct values (fresh instance)', async () => {
  const favor = await loadFavor({ simd: false });
  // the first call into a new instance needs a 48 MiB output: the heap grows inside the call
  const qb = normalTensor([3, 1024, 8], 20, 0.5), kb = normalTensor([3, 4096, 8], 21, 0.5);
  const big = favor.attentionMatrix(qb, kb, { scale: 0.5 });
  assert.deepEqual(big.dims, [3, 1024, 4096]);
  for (const [h, i] of [[0, 0], [1, 500], [2, 1023]]) {
    const qh = { data: qb.data.subarray((h * 1024 + i) * 8, (h * 1024 + i + 1) * 8), dims: [1, 8] };
    const kh = { data: kb.data.subarray(h * 4096 * 8, (h + 1) * 4096 * 8), dims: [4096, 8] };
    const expected = ref.attentionMatrix(qh, kh, { scale: 0.5 }).data;
    const offset = (h * 1024 + i) * 4096;
    assertBelow(ref.maxRelError(big.data.subarray(offset, offset + 4096), expected), 1e-5, `head ${h} row ${i}`);
  }
});

test('hostile and oversized calls (hostile-cases.mjs), each repeated, free everything: bytes in use and heap size back at their baselines', async () => {
  const favor = await loadFavor({ threads: 1 });
  const runAll = () => {
    for (const [label, call] of HOSTILE_CASES) {
      try {
        syncRun(call)(favor);
      } catch (e) {
        assert.ok(e instanceof TypeError || e instanceof RangeError, `${label}: ${e?.constructor?.name}: ${e?.message}`);
      }
    }
  };
  runAll();  // first-use allocations of the runtime
  const base = favor.memory();
  for (let round = 0; round < 10; round++) runAll();
  assert.equal(favor.memory().usedBytes, base.usedBytes, 'bytes in use');
  assert.equal(favor.memory().heapBytes, base.heapBytes, 'the refused 4 GiB inputs never grew the heap');
});

test('FAVOR+ states with a window, made, filled across block starts (some appends failing) and disposed in a loop: bytes in use back at the baseline', async () => {
  const favor = await loadFavor({ threads: 1 });
  const fm = favor.createFeatureMap({ dim: 8, features: 16, seed: 3 });
  const q = normalTensor([2, 40, 8], 32), step = normalTensor([2, 1, 8], 33);
  const huge = { data: new Float32Array(2 * 9 * 8).fill(3e38), dims: [2, 9, 8] };  // its sums overflow: the append fails
  const round = (i) => {
    const state = favor.createCausalState({ method: 'favor', featureMap: fm, window: 4 * (1 + (i % 5)) });
    state.append(q, q, q);  // a prefill across block starts: it runs on copies of the states
    for (let t = 0; t < 30; t++) state.append(step, step, step);
    assert.throws(() => state.append(huge, huge, huge), RangeError);
    assert.equal(state.length, 70);
    state.dispose();
  };
  round(0);  // first-use allocations of the runtime
  const base = favor.memory();
  for (let i = 1; i <= 200; i++) round(i);
  assert.equal(favor.memory().usedBytes, base.usedBytes, 'bytes in use after 200 windowed states');
  assert.equal(favor.memory().heapBytes, base.heapBytes, 'the heap did not grow');
  // A live one holds the same state bytes at every later decode step. Each block start makes a
  // new state and drops the oldest, and the allocator's bookkeeping moves by some tens of bytes
  // with where they land: over 10 blocks the bytes in use peak at the same height, 250 blocks
  // later too (a leak of one allocation per block start would add 24 bytes or more each).
  const state = favor.createCausalState({ method: 'favor', featureMap: fm, window: 16 });
  const peak = () => {
    let top = 0;
    for (let t = 0; t < 40; t++) state.append(step, step, step), top = Math.max(top, favor.memory().usedBytes);
    return top;
  };
  for (let t = 0; t < 16; t++) state.append(step, step, step);
  const bytes = state.stateBytes, first = peak();
  for (let t = 0; t < 1000; t++) state.append(step, step, step);
  assert.equal(state.stateBytes, bytes);
  const later = peak();
  assert.ok(later <= first + 256, `bytes in use peak at ${first} and 1,000 steps later at ${later}`);
  state.dispose();
  fm.dispose();
});

test('exact states with a sliding window, made, filled past their window and disposed in a loop: bytes in use back at the baseline', async () => {
  const favor = await loadFavor({ threads: 1 });
  const q = normalTensor([2, 40, 8], 30), step = normalTensor([2, 1, 8], 31);
  const round = (i) => {
    const state = favor.createCausalState({ method: 'exact', window: 1 + (i % 9) });
    state.append(q, q, q);  // a prefill longer than the window: the buffers shrink at the next step
    for (let t = 0; t < 30; t++) state.append(step, step, step);
    assert.equal(state.length, 70);
    state.dispose();
  };
  round(0);  // first-use allocations of the runtime
  const base = favor.memory();
  for (let i = 1; i <= 300; i++) round(i);
  assert.equal(favor.memory().usedBytes, base.usedBytes, 'bytes in use after 300 windowed states');
  assert.equal(favor.memory().heapBytes, base.heapBytes, 'the heap did not grow');
  // A live one holds the same bytes at every later step.
  const state = favor.createCausalState({ method: 'exact', window: 16 });
  for (let t = 0; t < 40; t++) state.append(step, step, step);
  const held = favor.memory().usedBytes, bytes = state.stateBytes;
  for (let t = 0; t < 200; t++) state.append(step, step, step);
  assert.equal(state.stateBytes, bytes);
  assert.equal(favor.memory().usedBytes, held, 'decode steps of a full windowed state allocate nothing for good');
  state.dispose();
});
