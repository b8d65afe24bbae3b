// Feature maps and packed matrices that are garbage-collected without dispose() are reclaimed through the
// FinalizationRegistry in web/api.js, and 10,000 mixed calls that create maps with and without
// disposing them leave the wasm heap no larger than after the first 100.
// Needs node --expose-gc: scripts/test.sh runs the Node suite as `node --expose-gc --test tests/node/`.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { loadFavor } from 'favor-attention';

import { assertBelow, normalTensor } from './helpers.mjs';
import * as ref from './reference.mjs';

const skip = typeof globalThis.gc !== 'function' && 'needs node --expose-gc (scripts/test.sh passes it)';

// Full collections until the registry has run its callbacks and `done()` holds (callbacks run
// from the event loop after a collection, so each round yields to it).
async function collectUntil(done, rounds = 50) {
  for (let i = 0; i < rounds && !done(); i++) {
    globalThis.gc();
    await new Promise((resolve) => setImmediate(resolve));
  }
  return done();
}

// A [m, d] projection of 128 KiB: maps made from it are cheap to create and easy to see in the heap.
const W = normalTensor([512, 64], 5);

test('feature maps dropped without dispose() are freed once garbage-collected', { skip }, async (t) => {
  const favor = await loadFavor();
  const base = favor.memory();
  (() => {
    for (let i = 0; i < 64; i++) favor.createFeatureMap({ projection: W, kernel: i % 2 ? 'positive' : 'relu' });
  })();
  const held = favor.memory();
  assert.ok(held.usedBytes - base.usedBytes >= 64 * W.data.length * 4, `64 maps hold their W: ${held.usedBytes - base.usedBytes} bytes`);
  const freed = await collectUntil(() => favor.memory().usedBytes === base.usedBytes);
  const end = favor.memory();
  t.diagnostic(`bytes in use: before ${base.usedBytes}, with 64 maps ${held.usedBytes}, after collection ${end.usedBytes}; heap ${end.heapBytes} bytes`);
  assert.ok(freed, `bytes in use after collection: ${end.usedBytes}, expected ${base.usedBytes}`);
});

test('packed matrices dropped without dispose() are freed once garbage-collected, disposed ones not twice', { skip }, async () => {
  const favor = await loadFavor();
  const base = favor.memory().usedBytes;
  (() => {
    for (let i = 0; i < 32; i++) {
      const packed = favor.packMatrix(W, { transposeB: i % 3 === 0 });
      if (i % 2) packed.dispose();
    }
  })();
  assert.ok(favor.memory().usedBytes - base >= 16 * W.data.length * 4, 'the undisposed ones hold their copy of W');
  assert.ok(await collectUntil(() => favor.memory().usedBytes === base), 'freed once collected');
  const a = normalTensor([3, 64], 4);
  const packed = favor.packMatrix(W, { transposeB: true });
  assert.deepEqual(favor.matmul(a, packed).data, favor.matmul(a, W, { transposeB: true }).data, 'the allocator still works');
  packed.dispose();
});

test('a map disposed explicitly is not freed a second time when collected', { skip }, async () => {
  const favor = await loadFavor();
  const base = favor.memory().usedBytes;
  (() => {
    for (let i = 0; i < 32; i++) {
      const map = favor.createFeatureMap({ projection: W });
      if (i % 2) map.dispose();
    }
  })();
  assert.ok(await collectUntil(() => favor.memory().usedBytes === base));
  // a double free would corrupt the allocator: the instance must still allocate and compute
  const q = normalTensor([3, 16, 64], 1), k = normalTensor([3, 20, 64], 2), v = normalTensor([3, 20, 4], 3);
  assertBelow(ref.maxRelError(favor.exactAttention(q, k, v).data, ref.exactAttention(q, k, v).data), 1e-5, 'after collection');
});

test('10,000 mixed calls creating maps with and without dispose(): the heap stays at its size after the first 100', { skip }, async (t) => {
  const favor = await loadFavor();
  const q = normalTensor([2, 8, 64], 11), k = normalTensor([2, 12, 64], 12), v = normalTensor([2, 12, 8], 13);
  const expected = ref.exactAttention(q, k, v);
  const start = favor.memory();
  const call = (i) => {
    switch (i % 4) {
      case 0: {  // never disposed: left to the FinalizationRegistry
        const map = favor.createFeatureMap({ projection: W, kernel: 'positive' });
        return favor.favorAttentionMatrix(q, k, { featureMap: map });
      }
      case 1: {
        const map = favor.createFeatureMap({ projection: W, kernel: 'hyperbolic' });
        favor.favorAttention(q, k, v, { featureMap: map, causal: false });
        return map.dispose();
      }
      case 2: return i % 8 === 2 ? favor.exactAttention(q, q, q, { causal: true }) : favor.exactAttention(q, k, v);
      default: return favor.codebookAttention(q, k, v, { codebook: favor.codebookFromFeatureMap(favor.createFeatureMap({ dim: 64, features: 8, seed: i })), assignment: 'gaussian' });
    }
  };
  for (let i = 0; i < 100; i++) call(i);
  const after100 = favor.memory();
  // After every 100 calls, as an idle event loop eventually would: collect until the registry has
  // freed every map of those calls (none is kept), so each window of 100 starts from the same state.
  const settled = () => favor.memory().usedBytes === start.usedBytes;
  assert.ok(await collectUntil(settled), 'the maps of the first 100 calls were freed');
  for (let i = 100; i < 10000; i++) {
    call(i);
    if (i % 100 === 99) assert.ok(await collectUntil(settled), `the maps of calls up to ${i} were freed`);
  }
  const after10000 = favor.memory();
  const end = favor.memory();
  t.diagnostic(`heap bytes: start ${start.heapBytes}, after 100 calls ${after100.heapBytes}, after 10,000 ${after10000.heapBytes}`);
  t.diagnostic(`bytes in use: start ${start.usedBytes}, after 100 calls ${after100.usedBytes} (up to 50 maps alive; 7,500 made in all, 5,000 of them never disposed), after 10,000 calls and a collection ${end.usedBytes}`);
  assert.ok(after10000.heapBytes <= after100.heapBytes, `heap grew from ${after100.heapBytes} to ${after10000.heapBytes}`);
  assert.equal(end.usedBytes, start.usedBytes, 'every map was freed');
  assertBelow(ref.maxRelError(favor.exactAttention(q, k, v).data, expected.data), 1e-5, 'after 10,000 calls');
});

test('causal states: 10,000 appends and disposes (and states left to the collector) return bytes in use to the baseline', { skip }, async (t) => {
  const favor = await loadFavor();
  const d = 16;
  const map = favor.createFeatureMap({ dim: d, features: 32, seed: 1 });
  const book = favor.randomCodebook({ clusters: 8, dim: d });
  const step = normalTensor([4, 1, d], 21), prefill = normalTensor([4, 9, d], 22);
  const mask = { data: Uint8Array.from([1, 0, 1, 1, 1, 1, 0, 1, 1]), dims: [9] };
  const options = [{ method: 'exact' }, { method: 'favor', featureMap: map }, { method: 'codebook', codebook: book, assignment: 'soft' }];
  // A failing append (other leading dims) leaves the state as it was.
  const failing = (state) => {
    try { state.append(normalTensor([2, 1, d], 23), normalTensor([2, 1, d], 23), normalTensor([2, 1, d], 23)); } catch { /* expected */ }
  };
  // One round first: threads allocate their own buffers on first use of a code path (and the
  // C++ runtime its exception globals on the first throw), once per process; the baseline is
  // taken after them, as in the test above.
  for (const o of options) {
    const state = favor.createCausalState(o);
    state.append(prefill, prefill, prefill, { keyMask: mask });
    state.append(step, step, step);
    failing(state);
    state.dispose();
  }
  const start = favor.memory();
  let appends = 0, kept = 0;
  // In a function of its own: a state still referenced from this frame would not be collected.
  (() => {
  for (let s = 0; s < 300; s++) {
    const state = favor.createCausalState(options[s % 3]);
    state.append(prefill, prefill, prefill, { keyMask: mask });
    for (let i = 0; i < 32; i++) state.append(step, step, step);
    appends += 33;
    failing(state);
    assert.equal(state.length, 41);
    if (s % 4 === 2) kept++;  // dropped without dispose(): the FinalizationRegistry frees it
    else state.dispose();
  }
  })();
  assert.ok(appends >= 9900);
  const settled = () => favor.memory().usedBytes === start.usedBytes;
  const freed = await collectUntil(settled);
  t.diagnostic(`bytes in use: start ${start.usedBytes}, after ${appends} appends over 300 states (${kept} never disposed) and a collection ${favor.memory().usedBytes}`);
  assert.ok(freed, 'every state was freed');
  map.dispose();
});
