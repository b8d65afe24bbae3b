// Memory of the worker API (loadFavor({ worker: true })), as memory.test.mjs and gc.test.mjs
// check it for the synchronous API: the worker's wasm bytes in use return to their baseline
// after many calls and after feature maps and states are disposed, or dropped and collected
// (a FinalizationRegistry on the caller's side frees them in the worker); an instance dropped
// undisposed ends its worker once collected; dispose() ends the worker thread; an idle worker
// never keeps Node running, a call in flight does.
// The collection tests need node --expose-gc (scripts/test.sh passes it).
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { loadFavor } from 'favor-attention';

import { normalTensor } from './helpers.mjs';
import { asyncRun, HOSTILE_CASES } from './hostile-cases.mjs';
import { eventually, outcome, settledThreadCount, threadCount } from './worker-helpers.mjs';

const skip = typeof globalThis.gc !== 'function' && 'needs node --expose-gc (scripts/test.sh passes it)';

// Full collections until `done()` (async: it may ask the worker) holds. Registry callbacks run
// from the event loop after a collection, and their messages need the worker's reply.
async function collectUntil(done, rounds = 50) {
  for (let i = 0; i < rounds; i++) {
    if (await done()) return true;
    globalThis.gc();
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return done();
}

const W = normalTensor([512, 64], 5);  // a 128 KiB projection: maps made from it are easy to see
const d = 16;
const q = normalTensor([2, 24, d], 1), k = normalTensor([2, 30, d], 2), v = normalTensor([2, 30, 8], 3);
const step = normalTensor([2, 1, d], 4);
const used = async (favor) => (await favor.memory()).usedBytes;

// One of each kind of work; maps and states disposed unless `keep` (left to the collector).
async function round(favor, i, { keep = false } = {}) {
  const map = await favor.createFeatureMap({ dim: d, features: 32, seed: i, kernel: i % 2 ? 'positive' : 'hyperbolic' });
  await favor.favorAttention(q, k, v, { featureMap: map, causal: i % 3 === 0 });
  await favor.favorAttentionMatrix(q, k, { featureMap: map });
  await map.redraw(i);
  await map.projection;
  const codebook = await favor.kmeans(k, { clusters: 4, iterations: 3, seed: i });
  await favor.codebookAttention(q, k, v, { codebook, assignment: 'soft' });
  const state = await favor.createCausalState(i % 2 ? { method: 'favor', featureMap: map } : { method: 'codebook', codebook });
  await state.append(q, q, q);
  for (let t = 0; t < 4; t++) await state.append(step, step, step);
  // an exact state with a sliding window shorter than what it is given: its buffers slide and shrink
  const windowed = await favor.createCausalState({ method: 'exact', window: 3 + (i % 5) });
  await windowed.append(q, q, q);
  for (let t = 0; t < 12; t++) await windowed.append(step, step, step);
  await favor.exactAttention(q, k, v, { causal: false });
  await assert.rejects(favor.exactAttention(q, k, normalTensor([2, 29, 8], 6)), RangeError);  // failed calls free their inputs too
  const packed = await favor.packMatrix({ data: k.data.subarray(0, 8 * d), dims: i % 2 === 0 ? [8, d] : [d, 8] }, { transposeB: i % 2 === 0 });
  await favor.matmul(q, packed, { out: new Float32Array(q.data.length / d * 8) });
  if (!keep) await Promise.all([state.dispose(), windowed.dispose(), map.dispose(), packed.dispose()]);
}

test('many calls, maps and states created and disposed in the worker: bytes in use back to the baseline, the heap stops growing', async (t) => {
  const favor = await loadFavor({ worker: true, threads: 1 });
  try {
    await round(favor, 0);  // first-use allocations (the C++ runtime's, once per process) before the baseline
    const start = await favor.memory();
    for (let i = 1; i <= 50; i++) await round(favor, i);
    const after50 = await favor.memory();
    for (let i = 51; i <= 300; i++) await round(favor, i);
    const end = await favor.memory();
    t.diagnostic(`worker bytes in use: start ${start.usedBytes}, after 50 rounds ${after50.usedBytes}, after 300 ${end.usedBytes}; heap ${start.heapBytes} -> ${end.heapBytes}`);
    assert.equal(after50.usedBytes, start.usedBytes, 'bytes in use after 50 rounds');
    assert.equal(end.usedBytes, start.usedBytes, 'bytes in use after 300 rounds');
    assert.ok(end.heapBytes <= after50.heapBytes, `the heap grew from ${after50.heapBytes} to ${end.heapBytes}`);
    // A map holds its W in the worker until disposed: visible, then gone.
    const held = await favor.createFeatureMap({ projection: normalTensor([512, 64], 7) });
    assert.ok(await used(favor) - start.usedBytes >= 512 * 64 * 4, 'a live map holds its W');
    await held.dispose();
    assert.equal(await used(favor), start.usedBytes);
  } finally {
    await favor.dispose();
  }
});

test('feature maps, states and packed matrices dropped without dispose() are freed in the worker once collected', { skip }, async (t) => {
  const favor = await loadFavor({ worker: true, threads: 1 });
  try {
    await round(favor, 0);
    const base = await used(favor);
    await (async () => {
      for (let i = 0; i < 24; i++) {
        const map = await favor.createFeatureMap({ projection: W, kernel: i % 2 ? 'positive' : 'relu' });
        if (i % 3 === 0) await favor.createCausalState({ method: 'favor', featureMap: await favor.createFeatureMap({ dim: d, features: 8 }) });
        if (i % 3 === 1) await favor.packMatrix(W, { transposeB: i % 2 === 0 });
        if (i % 4 === 0) await map.dispose();  // disposed ones must not be freed twice
      }
    })();
    const held = await used(favor);
    assert.ok(held - base >= 18 * W.data.length * 4, `18 undisposed maps hold their W: ${held - base} bytes`);
    const freed = await collectUntil(async () => (await used(favor)) === base);
    t.diagnostic(`worker bytes in use: before ${base}, with the dropped proxies ${held}, after collection ${await used(favor)}`);
    assert.ok(freed, `bytes in use after collection ${await used(favor)}, expected ${base}`);
    // Nothing was freed twice: the worker still allocates and computes.
    await round(favor, 1);
    assert.equal(await used(favor), base);
  } finally {
    await favor.dispose();
  }
});

test('dispose() ends the worker thread and resolves once it has ended; the pthreads inside end with it', async () => {
  const base = await settledThreadCount();
  for (const threads of [1, 2]) {
    const favor = await loadFavor({ worker: true, threads });
    try {  // a failure here must not leave the worker running into the next test's count
      assert.equal(favor.info.threads, threads);
      assert.ok(threadCount() >= base + threads, `a worker (${threads} thread(s) of wasm) adds threads: ${threadCount()} vs ${base}`);
      await favor.exactAttention(q, k, v);
    } finally {
      await favor.dispose();
    }
    assert.ok(await eventually(() => threadCount() === base), `threads after dispose(): ${threadCount()}, before the load: ${base}`);
  }
});

// An instance dropped without dispose() ends its worker once collected: at once if it is idle, or
// when the call it was running settles.
test('an idle instance dropped without dispose() ends its worker once collected', { skip }, async () => {
  const base = await settledThreadCount();
  await (async () => {
    const favor = await loadFavor({ worker: true, threads: 1 });
    await favor.memory();
    assert.equal(threadCount(), base + 1);
  })();
  assert.ok(await collectUntil(() => threadCount() === base), `threads: ${threadCount()}, expected ${base}: the dropped idle instance's worker still runs`);
});

test('an instance collected while its call runs ends its worker when the call settles', { skip }, async () => {
  const base = await settledThreadCount();
  let collected = false, settled = false;
  const watch = new FinalizationRegistry(() => { collected = true; });
  const { pending } = await (async () => {
    const favor = await loadFavor({ worker: true, threads: 1 });
    watch.register(favor, 'the instance');
    const big = normalTensor([8192, 64], 9);  // seconds of exact attention on one thread
    return { pending: favor.exactAttention(big, big, big) };  // (returned bare, the Promise would be awaited here)
  })();
  pending.then(() => { settled = true; });
  for (let i = 0; i < 100 && !collected; i++) {
    globalThis.gc();
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  assert.ok(collected && !settled, `collected ${collected} before the call settled (${settled ? 'it had' : 'it had not'})`);
  assert.equal(threadCount(), base + 1, 'the worker runs on while its call does');
  assert.deepEqual((await pending).dims, [8192, 64]);
  assert.ok(await eventually(() => threadCount() === base), `threads: ${threadCount()}, expected ${base}: the worker outlived its last call`);
});

test('a proxy kept alive keeps its instance (and worker) alive though the instance itself was dropped', { skip }, async () => {
  const base = await settledThreadCount();
  const map = await (async () => {
    const favor = await loadFavor({ worker: true, threads: 1 });
    return favor.createFeatureMap({ dim: d, features: 16, seed: 3 });
  })();
  for (let i = 0; i < 10; i++) {
    globalThis.gc();
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  assert.equal(threadCount(), base + 1, 'the worker runs while a proxy of its instance lives');
  assert.deepEqual((await map.projection).dims, [16, d]);
  await map.dispose();
});

test('Node exits once a script ends with an idle instance undisposed; a call in flight keeps it running until it settles', async () => {
  const root = fileURLToPath(new URL('../../', import.meta.url));
  const run = (code) => new Promise((resolve) => {
    const t0 = Date.now();
    execFile(process.execPath, ['--input-type=module', '-e', code], { cwd: root, timeout: 30_000 }, (error, stdout, stderr) => {
      resolve({ code: error ? (error.killed ? 'killed after 30 s' : error.code) : 0, stdout, stderr, ms: Date.now() - t0 });
    });
  });
  const load = "import { loadFavor } from 'favor-attention'; const favor = await loadFavor({ worker: true, threads: 1 });"
    + 'const t = { data: new Float32Array(2048 * 32).fill(0.25), dims: [2048, 32] };';
  const idle = await run(`${load} console.log((await favor.exactAttention(t, t, t)).dims.join('x'));`);
  assert.equal(idle.code, 0, `an idle undisposed instance kept Node running: ${idle.code} ${idle.stderr}`);
  assert.equal(idle.stdout.trim(), '2048x32');
  // The script's last line starts a call and does not await it: Node waits for the result.
  const inFlight = await run(`${load} favor.exactAttention(t, t, t).then((out) => console.log('result', out.dims.join('x')));`);
  assert.equal(inFlight.code, 0, `${inFlight.code} ${inFlight.stderr}`);
  assert.equal(inFlight.stdout.trim(), 'result 2048x32', 'Node exited before the pending call settled');
});

test('hostile and oversized calls (hostile-cases.mjs) through the worker, repeated: the worker\'s bytes in use back at the baseline', async () => {
  // transfer: true moves the 1.44 GB input of the size rows instead of copying it.
  const favor = await loadFavor({ worker: true, threads: 1, transfer: true });
  try {
    const runAll = async () => {
      for (const [label, call] of HOSTILE_CASES) {
        const { error } = await outcome(() => asyncRun(call)(favor));
        assert.ok(!error || error instanceof TypeError || error instanceof RangeError, `${label}: ${error?.constructor?.name}: ${error?.message}`);
      }
    };
    await runAll();
    const base = await favor.memory();
    for (let round = 0; round < 5; round++) await runAll();
    const now = await favor.memory();
    assert.equal(now.usedBytes, base.usedBytes, 'bytes in use');
    assert.equal(now.heapBytes, base.heapBytes, 'heap size');
  } finally {
    await favor.dispose();
  }
});
