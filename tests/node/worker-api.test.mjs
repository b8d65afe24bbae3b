// loadFavor({ worker: true }): the same API in a worker_threads worker, every call a Promise.
// Results equal the synchronous API's bit for bit (the same module computes them); errors reject
// with the class and message the synchronous call throws; feature maps and causal states live in
// the worker behind proxies with dispose(); transfer: true detaches the caller's inputs; the
// caller's event loop keeps running during a long call; dispose() ends the worker.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { after, before, test } from 'node:test';

import { loadFavor } from 'favor-attention';

import { assertBitIdentical, normalTensor } from './helpers.mjs';

let sync, worker;
before(async () => {
  [sync, worker] = await Promise.all([loadFavor({ threads: 1 }), loadFavor({ worker: true, threads: 1 })]);
});
after(() => worker.dispose());

const q = normalTensor([2, 3, 40, 16], 1, 0.7), k = normalTensor([2, 3, 40, 16], 2, 0.7), v = normalTensor([2, 3, 40, 8], 3);

test('every call resolves to the synchronous result, bit for bit', async () => {
  assert.equal(worker.info.simd, sync.info.simd);
  assertBitIdentical((await worker.exactAttention(q, k, v, { causal: true })).data, sync.exactAttention(q, k, v, { causal: true }).data, 'exact');
  assertBitIdentical((await worker.attentionMatrix(q, k)).data, sync.attentionMatrix(q, k).data, 'matrix');
  const options = { dim: 16, features: 24, kernel: 'hyperbolic', seed: 4 };
  const [wm, sm] = [await worker.createFeatureMap(options), sync.createFeatureMap(options)];
  assert.deepEqual([wm.dim, wm.features, wm.numFeatures, wm.kernel, wm.sampling], [16, 24, 48, 'hyperbolic', 'orthogonal']);
  assertBitIdentical((await wm.projection).data, sm.projection.data, 'projection');
  assertBitIdentical((await worker.favorAttention(q, k, v, { featureMap: wm, causal: true })).data,
    sync.favorAttention(q, k, v, { featureMap: sm, causal: true }).data, 'favor');
  await wm.redraw(9);
  sm.redraw(9);
  assertBitIdentical((await worker.favorAttentionMatrix(q, k, { featureMap: wm })).data, sync.favorAttentionMatrix(q, k, { featureMap: sm }).data, 'after redraw');
  const codebook = await worker.kmeans(k, { clusters: 5 });
  assertBitIdentical(codebook.data, sync.kmeans(k, { clusters: 5 }).data, 'kmeans');
  assertBitIdentical((await worker.codebookAttention(q, k, v, { codebook, causal: true })).data,
    sync.codebookAttention(q, k, v, { codebook, causal: true }).data, 'codebook');
  const w = normalTensor([8, 16], 5);
  assertBitIdentical((await worker.matmul(q, w, { transposeB: true })).data, sync.matmul(q, w, { transposeB: true }).data, 'matmul');
  const [ws, ss] = [await worker.createCausalState({ method: 'favor', featureMap: wm }), sync.createCausalState({ method: 'favor', featureMap: sm })];
  assert.equal(ws.method, 'favor');
  assertBitIdentical((await ws.append(q, k, v)).data, ss.append(q, k, v).data, 'state append');
  assert.equal(await ws.length, 40);
  assert.equal(await ws.stateBytes, ss.stateBytes);
  await ws.reset();
  assert.equal(await ws.length, 0);
  const { relFrobenius } = await worker.compare(sync.attentionMatrix(q, k), sync.attentionMatrix(q, k));
  assert.equal(relFrobenius, 0);
  await ws.dispose();
  ss.dispose(), sm.dispose();
  await wm.dispose();
  assert.equal(wm.disposed, true);
});

test('errors reject with the synchronous class and message; the worker keeps working', async () => {
  const bad = normalTensor([2, 3, 40, 15], 6);
  for (const [call, syncCall] of [
    [() => worker.exactAttention(q, bad, v), () => sync.exactAttention(q, bad, v)],
    [() => worker.exactAttention(q, k, v, { causal: 'yes' }), () => sync.exactAttention(q, k, v, { causal: 'yes' })],
    [() => worker.createFeatureMap({ dim: 8 }), () => sync.createFeatureMap({ dim: 8 })],
    [() => worker.createCausalState({ method: 'linear' }), () => sync.createCausalState({ method: 'linear' })],
  ]) {
    let expected;
    try { syncCall(); } catch (e) { expected = e; }
    await assert.rejects(call, (e) => e.constructor === expected.constructor && e.message === expected.message);
  }
  const map = await worker.createFeatureMap({ dim: 16, features: 4 });
  await map.dispose();
  await assert.rejects(() => worker.favorAttention(q, k, v, { featureMap: map }), (e) => e instanceof TypeError && /featureMap/.test(e.message));
  const state = await worker.createCausalState({ method: 'exact' });
  await state.dispose();
  await assert.rejects(() => state.append(q, k, v), (e) => e instanceof TypeError && /state/.test(e.message));
  assert.deepEqual((await worker.exactAttention(q, k, v)).dims, [2, 3, 40, 8]);
});

test('transfer: true moves the inputs (the caller\'s arrays are detached); the result is the same', async () => {
  const moving = await loadFavor({ worker: true, threads: 1, transfer: true });
  try {
    const q2 = normalTensor([40, 16], 7), k2 = normalTensor([40, 16], 8);
    const want = sync.exactAttention(q2, k2, k2).data;
    const out = await moving.exactAttention(q2, k2, k2);
    assert.equal(q2.data.byteLength, 0, 'q was transferred');
    assertBitIdentical(out.data, want, 'transferred');
    // Two inputs viewing one whole buffer: it is moved, once (twice in a transfer list would fail the message).
    const buffer = normalTensor([40, 16], 9).data.buffer;
    const a = { data: new Float32Array(buffer), dims: [40, 16] }, b = { data: new Float32Array(buffer), dims: [40, 16] };
    const wantShared = sync.exactAttention(a, b, b).data;
    const shared = await moving.exactAttention(a, b, b);
    assert.equal(buffer.byteLength, 0, 'the shared buffer was transferred');
    assertBitIdentical(shared.data, wantShared, 'a buffer shared by two inputs');
  } finally {
    moving.dispose();
  }
});

test("wasmBinary reaches the worker as an ArrayBuffer, a Uint8Array or a view into a larger buffer, and stays the caller's", async () => {
  const bytes = await readFile(new URL('../../dist/favor-scalar.wasm', import.meta.url));
  const scalar = await loadFavor({ simd: false, threads: 1 });
  const whole = Uint8Array.from(bytes).buffer;
  const padded = new Uint8Array(bytes.length + 16);
  padded.set(bytes, 8);
  const view = Uint8Array.from(bytes);
  for (const wasmBinary of [whole, view, padded.subarray(8, 8 + bytes.length)]) {
    const own = await loadFavor({ worker: true, transfer: true, threads: 1, simd: false, wasmBinary });
    try {
      assert.equal(own.info.simd, false);
      const copy = (t) => ({ data: t.data.slice(), dims: t.dims });  // (transfer: true moves the inputs, not the load options)
      assertBitIdentical((await own.exactAttention(copy(q), copy(k), copy(v))).data, scalar.exactAttention(q, k, v).data, wasmBinary.constructor.name);
    } finally {
      await own.dispose();
    }
  }
  assert.equal(whole.byteLength, bytes.length, 'the ArrayBuffer was not moved');
  assert.equal(view.byteLength, bytes.length, 'the Uint8Array was not moved');
  assert.equal(padded.byteLength, bytes.length + 16, 'the larger buffer was not moved');
});

test('a long call does not block the caller; dispose() ends the worker and later calls reject', async () => {
  const own = await loadFavor({ worker: true, threads: 1 });
  const big = normalTensor([4096, 64], 9);
  let ticks = 0;
  const timer = setInterval(() => ticks++, 5);
  const t0 = performance.now();
  await own.exactAttention(big, big, big);
  const ms = performance.now() - t0;
  clearInterval(timer);
  assert.ok(ticks >= Math.min(10, ms / 20), `${ticks} timer ticks during a ${ms.toFixed(0)} ms call`);
  own.dispose();
  await assert.rejects(() => own.memory(), /disposed/);
  await assert.rejects(() => own.threadsUsed(), /disposed/);
});

test("threadsUsed() reports the worker's calls", async () => {
  const own = await loadFavor({ worker: true, threads: 2 });
  try {
    const large = normalTensor([4, 1024, 64], 3);
    assert.equal(await own.threadsUsed(), 1, 'no call yet');
    await own.exactAttention(large, large, large);
    assert.equal(await own.threadsUsed(), 2, 'four heads of 1024 x 1024 take both threads');
  } finally {
    await own.dispose();
  }
});

test('load options: worker and transfer are booleans; transfer needs worker; locateFile cannot cross', async () => {
  await assert.rejects(() => loadFavor({ worker: 'yes' }), TypeError);
  await assert.rejects(() => loadFavor({ transfer: true }), RangeError);
  await assert.rejects(() => loadFavor({ worker: true, locateFile: (f) => f }), TypeError);
});
