// Hostile and oversized arguments (hostile-cases.mjs) in both APIs: every row's synchronous
// outcome is the one the table states, the worker's (with and without transfer) is the same bit
// for bit, no worker call throws synchronously, and every object that lives in wasm is intact
// afterwards. Then what only some paths have: the size check itself (a mock heap), out as an
// input's own array with transfer: true, Buffers that must never be moved, buffers that cannot be.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, test } from 'node:test';
import { markAsUntransferable } from 'node:worker_threads';

import { loadFavor } from 'favor-attention';

import { createHeap, MAX_HEAP_BYTES } from '../../web/heap.js';
import { checkTensor } from '../../web/validate.js';
import { normalTensor } from './helpers.mjs';
import { asyncRun, HOSTILE_CASES, HUGE_FLOATS, syncRun } from './hostile-cases.mjs';
import { assertSameOutcome, outcome, strict, within } from './worker-helpers.mjs';

const LIMIT_MS = 60_000;
let sync, worker, moving;
before(async () => {
  [sync, worker, moving] = await Promise.all([
    loadFavor({ threads: 1 }), loadFavor({ worker: true, threads: 1 }), loadFavor({ worker: true, threads: 1, transfer: true }),
  ]);
});
after(() => Promise.all([worker?.dispose(), moving?.dispose()]));

// Fixtures whose data is a fresh copy at every read (a worker with transfer: true moves inputs).
const copying = (t) => ({ get data() { return t.data.slice(); }, dims: t.dims });
const q = copying(normalTensor([2, 5, 8], 1)), k = copying(normalTensor([2, 7, 8], 2)), v = copying(normalTensor([2, 7, 4], 3));
const b = copying(normalTensor([8, 3], 4));

// Objects that live in wasm, made before a row runs and checked after it: a packed matrix, a
// feature map and a causal state with two appends; what each gives must not change.
async function liveObjects(f) {
  const packed = await f.packMatrix(b);
  const map = await f.createFeatureMap({ dim: 8, features: 16, seed: 3 });
  const state = await f.createCausalState({ method: 'exact' });
  await state.append(normalTensor([1, 2, 8], 5), normalTensor([1, 2, 8], 6), normalTensor([1, 2, 4], 7));
  const probe = async () => ({
    matmul: await f.matmul(normalTensor([3, 8], 8), packed),
    favor: await f.favorAttention(q, k, v, { featureMap: map }),
    length: await state.length,
  });
  return { probe, before: await probe(), dispose: () => Promise.all([packed.dispose(), map.dispose(), state.dispose()]) };
}

async function assertIntact(objects, label) {
  const now = await objects.probe();
  for (const key of ['matmul', 'favor']) assertSameOutcome({ value: now[key] }, { value: objects.before[key] }, `${label}: ${key} of a live object`);
  assert.equal(now.length, objects.before.length, `${label}: the live state's length`);
}

for (const [label, call, expected] of HOSTILE_CASES) {
  test(`hostile: ${label}`, async () => {
    const base = sync.memory().usedBytes;
    const objects = await liveObjects(sync);
    const want = await outcome(() => syncRun(call)(sync));
    if (expected === 'value') {
      assert.ok(!want.error, `the synchronous call failed: ${want.error?.constructor.name}: ${want.error?.message}`);
    } else {
      assert.ok(want.error instanceof expected[0], `expected ${expected[0].name}, got ${want.error?.constructor.name ?? 'a result'}: ${want.error?.message}`);
      assert.match(want.error.message, expected[1]);
    }
    await assertIntact(objects, 'synchronous');
    await objects.dispose();
    assert.equal(sync.memory().usedBytes, base, 'synchronous bytes in use back at their baseline');

    for (const [name, api] of [['worker', worker], ['worker with transfer', moving]]) {
      const violations = [];
      const live = await liveObjects(api);
      const got = await within(outcome(() => asyncRun(call)(strict(api, violations))), LIMIT_MS, `${name}: ${label}`);
      assert.deepEqual(violations, [], `${name}: a call threw synchronously or returned no Promise`);
      assertSameOutcome(got, want, `${name}: ${label}`);
      await assertIntact(live, name);
      await live.dispose();
    }
    globalThis.gc?.();  // the worker's copy of a 1.44 GB input goes now, not rows later
  });
}

test('the size check: inputs whose bytes pass the heap maximum never reach malloc; below it malloc gets the exact sum', () => {
  const requests = [];
  const Module = { _malloc: (bytes) => { requests.push(bytes); return 0; }, _free() {}, HEAPF32: new Float32Array(16) };
  const { call } = createHeap(Module);
  const big = checkTensor({ data: new Float32Array(HUGE_FLOATS), dims: [HUGE_FLOATS / 8, 8] }, 'q');  // pages never touched
  assert.throws(() => call('exactAttention', [big, big, big], () => assert.fail('ran')),
    (e) => e instanceof RangeError && /^exactAttention: out of memory: 43200001\d\d bytes of input/.test(e.message));
  assert.deepEqual(requests, [], 'malloc was never asked');
  assert.ok(3 * 4 * HUGE_FLOATS > 2 ** 32 && (3 * 4 * HUGE_FLOATS) % 2 ** 32 < 2 ** 28, 'the sum would wrap to a small block');
  // Two of them (2.88 GB) fit the maximum: malloc is asked for all of it (it says no here).
  assert.throws(() => call('compare', [big, big], () => assert.fail('ran')), (e) => e instanceof RangeError && /^compare: out of memory/.test(e.message));
  assert.equal(requests.length, 1);
  assert.ok(requests[0] > 2 * 4 * HUGE_FLOATS && requests[0] < 2 * 4 * HUGE_FLOATS + 256 && requests[0] <= MAX_HEAP_BYTES, `asked for ${requests[0]}`);
});

test('out is one of the inputs\' own arrays with transfer: true: the call resolves into out, a state advances once', async () => {
  for (const api of [moving, worker]) {
    const qq = normalTensor([4, 8], 9), kk = normalTensor([4, 8], 10), vv = normalTensor([4, 8], 11);
    const want = sync.exactAttention(qq, kk, vv);
    const result = await within(api.exactAttention(qq, kk, vv, { out: vv.data }), LIMIT_MS, 'exactAttention');
    assert.equal(result.data, vv.data, 'the result is out');
    assertSameOutcome({ value: result }, { value: want }, 'exactAttention into v');

    const state = await api.createCausalState({ method: 'exact' }), twin = sync.createCausalState({ method: 'exact' });
    for (let step = 0; step < 3; step++) {
      const a = normalTensor([2, 1, 8], 20 + step), c = normalTensor([2, 1, 8], 30 + step), x = normalTensor([2, 1, 4], 40 + step);
      const expected = twin.append(a, c, x);
      const got = await within(state.append(a, c, x, { out: x.data }), LIMIT_MS, 'append');
      assert.equal(got.data, x.data);
      assertSameOutcome({ value: got }, { value: expected }, `append ${step} into v`);
      assert.equal(await state.length, step + 1, 'the state advanced once');
    }
    // A view of out's buffer as an input: that buffer stays too.
    const arena = new Float32Array(64).fill(0.5);
    const view = { data: arena.subarray(0, 32), dims: [4, 8] };
    const got = await api.exactAttention(view, { data: arena.slice(0, 32), dims: [4, 8] }, { data: arena.slice(0, 32), dims: [4, 8] }, { out: arena.subarray(32) });
    assert.equal(arena.length, 64);
    assert.deepEqual(got.dims, [4, 8]);
    await state.dispose();
    twin.dispose();
  }
});

test('Buffers are never moved unless transfer: true and they own their whole buffer; a Buffer wasmBinary stays the caller\'s', async () => {
  const path = new URL('../../dist/favor-scalar.wasm', import.meta.url);
  const binary = readFileSync(path);
  const length = binary.length;
  const loaded = await loadFavor({ worker: true, wasmBinary: binary, simd: false, threads: 1 });
  assert.equal(binary.length, length, 'the wasmBinary Buffer keeps its bytes');
  const again = await loadFavor({ worker: true, wasmBinary: binary, simd: false, threads: 1 });
  assert.deepEqual((await again.exactAttention(q, k, v)).dims, [2, 5, 4], 'loading again with it works');
  await Promise.all([loaded.dispose(), again.dispose()]);

  const qq = normalTensor([4, 8], 1), kk = normalTensor([6, 8], 2), vv = normalTensor([6, 3], 3);
  const masks = { alloc: Buffer.alloc(6, 1), pooled: Buffer.from([1, 0, 1, 1, 0, 1]), view: Buffer.alloc(64, 1).subarray(3, 9) };
  for (const [name, data] of Object.entries(masks)) {
    await worker.exactAttention(qq, kk, vv, { keyMask: { data, dims: [6] } });
    assert.equal(data.length, 6, `${name}: copied, not moved, without transfer`);
  }
  for (const name of ['pooled', 'view']) {
    const data = masks[name];
    await moving.exactAttention(normalTensor([4, 8], 1), normalTensor([6, 8], 2), normalTensor([6, 3], 3), { keyMask: { data, dims: [6] } });
    assert.equal(data.length, 6, `${name}: a view into a larger buffer is copied even with transfer`);
  }
  await moving.exactAttention(normalTensor([4, 8], 1), normalTensor([6, 8], 2), normalTensor([6, 3], 3), { keyMask: { data: masks.alloc, dims: [6] } });
  assert.equal(masks.alloc.length, 0, 'a Buffer owning its whole buffer is moved with transfer (documented)');
});

test('a buffer that cannot be moved goes copied with transfer: true, and the call resolves', async () => {
  const data = new Float32Array(32).fill(0.5);
  markAsUntransferable(data.buffer);
  const t = { data, dims: [4, 8] };
  const got = await within(moving.exactAttention(t, normalTensor([6, 8], 2), normalTensor([6, 3], 3)), LIMIT_MS, 'untransferable');
  assertSameOutcome({ value: got }, { value: sync.exactAttention(t, normalTensor([6, 8], 2), normalTensor([6, 3], 3)) }, 'untransferable input');
  assert.equal(data.length, 32, 'still the caller\'s');
});

test('no worker call throws synchronously, whatever its options\' getters or Proxy do', async () => {
  const hostile = () => new Proxy({}, { ownKeys() { throw new RangeError('trap'); }, getOwnPropertyDescriptor() { throw new RangeError('trap'); }, get() { throw new RangeError('trap'); } });
  const throwingOut = () => ({ get out() { throw new RangeError('getter'); } });
  const state = await worker.createCausalState({ method: 'exact' });
  const map = await worker.createFeatureMap({ dim: 8, features: 4 });
  const calls = {
    exactAttention: (o) => worker.exactAttention(q, k, v, o), attentionMatrix: (o) => worker.attentionMatrix(q, k, o),
    favorAttention: (o) => worker.favorAttention(q, k, v, o), favorAttentionMatrix: (o) => worker.favorAttentionMatrix(q, k, o),
    codebookAttention: (o) => worker.codebookAttention(q, k, v, o), codebookAttentionMatrix: (o) => worker.codebookAttentionMatrix(q, k, o),
    matmul: (o) => worker.matmul(q, b, o), append: (o) => state.append(q, k, v, o), kmeans: (o) => worker.kmeans(k, o),
    createFeatureMap: (o) => worker.createFeatureMap(o), createCausalState: (o) => worker.createCausalState(o), packMatrix: (o) => worker.packMatrix(b, o),
    codebookFromFeatureMap: (o) => worker.codebookFromFeatureMap(map, o), randomCodebook: (o) => worker.randomCodebook(o),
  };
  for (const [name, call] of Object.entries(calls)) {
    for (const [kind, options] of [['a Proxy', hostile], ['an out getter', throwingOut]]) {
      let result;
      assert.doesNotThrow(() => { result = call(options()); }, `${name} with ${kind}`);
      assert.ok(result instanceof Promise, `${name} with ${kind}: a Promise`);
      await assert.rejects(result, RangeError, `${name} with ${kind}`);
    }
  }
  assert.equal(await state.length, 0);
  await Promise.all([state.dispose(), map.dispose()]);
});
