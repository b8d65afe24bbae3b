// The pthreads build in Node: thread choice and info, results bit-identical to the
// single-threaded SIMD module, errors and recovery, heap growth, dispose(), and a process that
// loaded it exiting by itself.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';

import { loadFavor } from 'favor-attention';
import { chooseThreads } from '../../web/load.js';

import { AUTO_TILE_ROWS, RELAXED_SIMD_SUPPORTED, assertBitIdentical, concatRows, normalTensor, sliceRows } from './helpers.mjs';

const one = await loadFavor({ threads: 1 });
const two = await loadFavor({ threads: 2 });
const three = await loadFavor({ threads: 3 });

test('threads: n loads the pthreads build with n threads, and no Worker global is left behind', () => {
  assert.deepEqual(two.info, { version: '0.1.0', simd: true, relaxedSimd: RELAXED_SIMD_SUPPORTED, threads: 2, tileRows: AUTO_TILE_ROWS });
  assert.equal(three.info.threads, 3);
  assert.equal(globalThis.Worker, undefined);
});

test("threads: 'auto' (the default) uses the cores, at most 64", async () => {
  const expected = Math.min(availableParallelism(), 64);
  for (const favor of [await loadFavor(), await loadFavor({ threads: 'auto' })]) {
    assert.equal(favor.info.threads, expected);
    if (expected === 1) assert.equal(favor.info.threadsReason, 'one CPU core');
    favor.dispose();
  }
});

// The policy itself, for the machines this 2-core one cannot be: one thread per core, without
// the caps of 8 (Node) and 4 (browsers) it once had; each call then picks its own count.
test("threads: 'auto' starts one thread per core, up to 64, on any machine", () => {
  const auto = (cores, o = {}) => chooseThreads(o, { simd: true, cores });
  assert.deepEqual(auto(16), { threads: 16 });
  assert.deepEqual(auto(12), { threads: 12 });
  assert.deepEqual(auto(256), { threads: 64 });
  assert.deepEqual(auto(1), { threads: 1, threadsReason: 'one CPU core' });
  assert.deepEqual(auto(16, { threads: 4 }), { threads: 4 });
  assert.deepEqual(chooseThreads({}, { simd: true, cores: 16, blocker: 'not cross-origin isolated' }),
    { threads: 1, threadsReason: 'not cross-origin isolated' });
});

test('one thread, and why: requested, no SIMD, a given single-thread .wasm', async () => {
  assert.deepEqual(one.info, { version: '0.1.0', simd: true, relaxedSimd: RELAXED_SIMD_SUPPORTED, threads: 1, threadsReason: 'requested', tileRows: AUTO_TILE_ROWS });
  const scalar = await loadFavor({ simd: false });
  assert.equal(scalar.info.threads, 1);
  assert.match(scalar.info.threadsReason, /SIMD/);
  const simdWasm = fileURLToPath(new URL('../../dist/favor-simd.wasm', import.meta.url));
  const byUrl = await loadFavor({ wasmUrl: simdWasm });
  assert.equal(byUrl.info.threads, 1);
  assert.match(byUrl.info.threadsReason, /wasmUrl/);
});

// Each call takes the threads its work is worth (thread_plan.hpp: one per 2^19 multiply-adds).
test('threadsUsed() tells how many threads calls took since it was last asked', () => {
  const tiny = normalTensor([4, 8], 1), large = normalTensor([4, 1024, 64], 2);
  two.threadsUsed();
  assert.equal(two.threadsUsed(), 1, 'no call since: 1');
  two.exactAttention(tiny, tiny, tiny);
  assert.equal(two.threadsUsed(), 1, 'a 4 x 4 call runs on the calling thread');
  two.exactAttention(large, large, large);
  assert.equal(two.threadsUsed(), 2, 'four heads of 1024 x 1024 take both threads');
  assert.equal(two.threadsUsed(), 1, 'and the count starts again');
  three.exactAttention(large, large, large);
  three.exactAttention(tiny, tiny, tiny);
  assert.equal(three.threadsUsed(), 3, 'the most since last asked, not the last call');
  one.exactAttention(large, large, large);
  assert.equal(one.threadsUsed(), 1, 'the single-threaded build');
  assert.equal(two.threadsUsed(), 1, 'instances count apart');

  // At most one thread per block of rows the work splits into. The random-feature engine cuts a
  // short call's blocks into pieces of 32 rows: one head of 32 rows is one piece (its work, 2.1
  // million multiply-adds at m = 256, would be worth 4 threads), 64 rows are two. Exact
  // attention's blocks are 64 rows: 64 rows are one, 128 two.
  const wide = two.createFeatureMap({ dim: 64, features: 256, seed: 2 });
  for (const [L, favorThreads, exactThreads] of [[32, 1, 1], [64, 2, 1], [128, 2, 2]]) {
    const h = normalTensor([1, L, 64], 8);
    two.favorAttention(h, h, h, { featureMap: wide });
    assert.equal(two.threadsUsed(), favorThreads, `FAVOR+, one head of ${L} rows`);
    two.exactAttention(h, h, h);
    assert.equal(two.threadsUsed(), exactThreads, `exact, one head of ${L} rows`);
  }
  wide.dispose();
  // A structured W projects by transforms: 3 p log2 p = 1,152 multiply-adds a row for 64
  // projections of d = 64, against 4,096 by the GEMM. With the products by v (4,096 a row), 192
  // rows (2 heads of 48 queries and 48 keys) are worth 3 threads with a dense W and 1.92 with a
  // structured one: 2 and 1 on two.
  const x = normalTensor([2, 48, 64], 4);
  for (const [sampling, expected] of [['orthogonal', 2], ['structured', 1]]) {
    const featureMap = two.createFeatureMap({ dim: 64, features: 64, sampling, seed: 1 });
    two.favorAttention(x, x, x, { featureMap });
    assert.equal(two.threadsUsed(), expected, `FAVOR+ with ${sampling} sampling`);
    featureMap.dispose();
  }
  // A causal state's step of two heads gives each head a thread when a head's step is worth
  // 16,384 multiply-adds: 2 rows x 8,192 with a dense W, 2 x 5,248 with a structured one.
  const step = normalTensor([2, 1, 64], 5);
  for (const [sampling, expected] of [['orthogonal', 2], ['structured', 1]]) {
    const featureMap = two.createFeatureMap({ dim: 64, features: 64, sampling, seed: 1 });
    const state = two.createCausalState({ method: 'favor', featureMap });
    two.threadsUsed();
    state.append(step, step, step);
    assert.equal(two.threadsUsed(), expected, `a causal state's step with ${sampling} sampling`);
    state.dispose();
    featureMap.dispose();
  }
  // An exact cache's step gives each head a thread when a head's step is worth one (1,025 keys
  // x 128 multiply-adds are); a one-head cache's prefill takes every thread for its query blocks,
  // and its step, worth less than a thread, wakes none.
  for (const [prefill, stepThreads, what] of [[large, 2, '4 heads x 1024 positions'], [normalTensor([1, 2048, 64], 6), 1, 'one head of 2048 positions']]) {
    const cache = two.createCausalState({ method: 'exact' });
    cache.append(prefill, prefill, prefill);
    assert.equal(two.threadsUsed(), 2, `an exact cache's prefill of ${what}`);
    const row = sliceRows(prefill, 0, 1);
    cache.append(row, row, row);
    assert.equal(two.threadsUsed(), stepThreads, `and its step (${what})`);
    cache.dispose();
  }
});

test('bad threads values are rejected with the argument named', async () => {
  for (const [value, type] of [[0, RangeError], [1.5, RangeError], [65, RangeError], [NaN, RangeError],
    ['2', TypeError], ['all', TypeError], [true, TypeError], [null, TypeError]]) {
    await assert.rejects(loadFavor({ threads: value }), (e) => e instanceof type && /^loadFavor: threads: /.test(e.message),
      `threads: ${String(value)}`);
  }
});

const q = normalTensor([3, 200, 16], 1), k = normalTensor([3, 200, 16], 2), v = normalTensor([3, 200, 7], 3);
const q1 = normalTensor([1, 333, 8], 4), k1 = normalTensor([1, 333, 8], 5), v1 = normalTensor([1, 333, 8], 6);

function stateOutputs(favor, method, featureMap, codebook, extra = {}) {
  const state = favor.createCausalState({ method, ...{ exact: {}, favor: { featureMap }, codebook: { codebook } }[method], ...extra });
  try {
    return concatRows([[0, 150], [150, 151], [151, 152], [152, 160], [160, 200]].map(([a, b]) =>
      state.append(sliceRows(q, a, b), sliceRows(k, a, b), sliceRows(v, a, b))));
  } finally {
    state.dispose();
  }
}

// Every call that runs in parallel (query blocks, heads), with one head and several.
function outputs(favor) {
  const map = favor.createFeatureMap({ dim: 16, features: 64, seed: 9 });
  try {
    const codebook = favor.kmeans(k, { clusters: 8, seed: 1 });
    return {
      exact: favor.exactAttention(q, k, v),
      exactCausal: favor.exactAttention(q, k, v, { causal: true }),
      exactOneHead: favor.exactAttention(q1, k1, v1),
      exactOneHeadCausal: favor.exactAttention(q1, k1, v1, { causal: true, scale: 0.3 }),
      matrix: favor.attentionMatrix(q, k, { causal: true }),
      favor: favor.favorAttention(q, k, v, { featureMap: map }),
      favorCausal: favor.favorAttention(q, k, v, { featureMap: map, causal: true }),
      codebook,
      codebookAttention: favor.codebookAttention(q, k, v, { codebook, assignment: 'soft' }),
      // Causal states: heads in parallel for the 150-row prefill and the 40-row append, one after
      // another for the decode steps (too little work per head to share).
      ...Object.fromEntries(['exact', 'favor', 'codebook'].map((method) => [`${method}State`, stateOutputs(favor, method, map, codebook)])),
      // A sliding window shorter than the prefill: rows one at a time on their own keys, heads in parallel.
      exactWindowState: stateOutputs(favor, 'exact', map, codebook, { window: 37 }),
      // FAVOR+ over a window: appends within a block and across block starts (copies of the states).
      favorWindowState: stateOutputs(favor, 'favor', map, codebook, { window: 64 }),
      // Decode steps whose heads run in parallel (d = 64, m = 256: enough work per head).
      favorDecode: decodeOutputs(favor),
    };
  } finally {
    map.dispose();
  }
}

const qd = normalTensor([4, 48, 64], 11, 0.5), kd = normalTensor([4, 48, 64], 12, 0.5), vd = normalTensor([4, 48, 64], 13);

// A 16-row prefill, then 32 decode steps, heads in parallel on every step (state and steps kept
// apart from `outputs` so that the memory test below can repeat them).
function decodeOutputs(favor, steps = 32) {
  const featureMap = favor.createFeatureMap({ dim: 64, features: 256, seed: 21 });
  const state = favor.createCausalState({ method: 'favor', featureMap });
  try {
    const rows = [[0, 16], ...Array.from({ length: steps }, (_, i) => [16 + i, 17 + i])];
    return concatRows(rows.map(([a, b]) => state.append(sliceRows(qd, a, b), sliceRows(kd, a, b), sliceRows(vd, a, b))));
  } finally {
    state.dispose();
    featureMap.dispose();
  }
}

test('outputs are bit-identical to the single-threaded SIMD module with 2 and 3 threads', () => {
  const expected = outputs(one);
  for (const favor of [two, three]) {
    const actual = outputs(favor);
    for (const name of Object.keys(expected)) {
      assert.deepEqual(actual[name].dims, expected[name].dims, name);
      assert.ok(actual[name].data instanceof Float32Array && !(actual[name].data.buffer instanceof SharedArrayBuffer),
        `${name}: a plain Float32Array that the caller owns`);
      assertBitIdentical(actual[name].data, expected[name].data, `${name}, ${favor.info.threads} threads`);
    }
  }
});

// A result without out is copied into an array the calling thread made while the helper threads
// computed (bindings/wasm/heap.cpp prepare_result_array, a CallerTask): its pages mapped in then rather
// than after the call, where no thread shares the time. Seen through Module.favorResultArray,
// where the array waits for web/heap.js: a setter on Object.prototype records what the module
// puts there (a module loaded after it has no property of its own to bypass it).
test('a result without out is the array the calling thread made while the helpers computed', async (t) => {
  const made = [], held = new WeakMap();
  let last;
  Object.defineProperty(Object.prototype, 'favorResultArray', {
    configurable: true,
    get() { return held.get(this); },
    set(value) {
      held.set(this, value);
      last = value;
      if (value) made.push(value);
    },
  });
  t.after(() => delete Object.prototype.favorResultArray);
  const favor = await loadFavor({ threads: 2 });
  t.after(() => favor.dispose());
  favor.threadsUsed();
  const exact = favor.exactAttention(q, k, v);
  assert.equal(favor.threadsUsed(), 2);
  assert.equal(made.length, 1);
  assert.equal(exact.data, made[0], 'the result is the array made during the call');
  assert.equal(last, undefined, 'and none is kept');
  assertBitIdentical(exact.data, one.exactAttention(q, k, v).data, 'exact');
  const map = favor.createFeatureMap({ dim: 16, features: 64, seed: 3 }), map1 = one.createFeatureMap({ dim: 16, features: 64, seed: 3 });
  const approx = favor.favorAttention(q, k, v, { featureMap: map });
  assert.equal(made.length, 2);
  assert.equal(approx.data, made[1]);
  assertBitIdentical(approx.data, one.favorAttention(q, k, v, { featureMap: map1 }).data, 'FAVOR+');
  // With out, none is made; nor for a call on one thread.
  const out = new Float32Array(exact.data.length);
  assert.equal(favor.exactAttention(q, k, v, { out }).data, out);
  assert.equal(favor.threadsUsed(), 2);
  const tiny = normalTensor([1, 8, 4], 7);
  favor.exactAttention(tiny, tiny, tiny);
  assert.equal(favor.threadsUsed(), 1);
  assert.equal(made.length, 2);
  // A call that fails after its helpers started (an overflow in the last block) keeps none.
  const big = normalTensor([1, 333, 8], 4);
  big.data.fill(3e38, 330 * 8, 331 * 8);
  assert.throws(() => favor.exactAttention(big, { data: big.data.slice(), dims: big.dims }, v1), RangeError);
  assert.equal(made.length, 3, 'the failed call made one');
  assert.equal(last, undefined, 'and did not keep it');
  assertBitIdentical(favor.exactAttention(q, k, v).data, exact.data, 'after the error');
  assert.equal(made.length, 4);
  assert.equal(last, undefined);
  map.dispose(), map1.dispose();
});

// Large inputs of the attention calls (exact, FAVOR+, codebook) are copied in while the call runs,
// piece by piece, as the helpers start on the pieces already in (web/heap.js call, bindings/wasm/heap.cpp
// copy_arriving_input, favor/input_arrival.hpp). Seen through Module.favorArriving, the function
// the module calls for each piece, recorded by a setter on Object.prototype as above: the results
// are the single-thread build's bits, errors its messages word for word (a NaN in the last head's
// v, an infinity in the first head's q), and the function is gone after each call.
test('large inputs arrive while the call runs: the same bits and errors as copied beforehand', async (t) => {
  const pieces = [];
  let current, failAt = -1;
  const held = new WeakMap();
  Object.defineProperty(Object.prototype, 'favorArriving', {
    configurable: true,
    get() { return held.get(this); },
    set(value) {
      current = value;
      held.set(this, value && ((...args) => {
        if (pieces.length === failAt) throw new Error('a copy that fails');
        pieces.push(args);
        return value(...args);
      }));
    },
  });
  t.after(() => delete Object.prototype.favorArriving);
  const favor = await loadFavor({ threads: 2 });
  t.after(() => favor.dispose());
  const maps = [favor, one].map((f) => f.createFeatureMap({ dim: 32, features: 64, seed: 9 }));
  const gq = normalTensor([2, 4, 1500, 32], 1), gk = normalTensor([2, 2, 2100, 32], 2), gv = normalTensor([2, 2, 2100, 16], 3);
  const mask = { data: new Uint8Array(2 * 2100).map((_, i) => (i % 7 ? 1 : 0)), dims: [2, 1, 2100] };
  const hq = normalTensor([4, 1024, 32], 4), hk = normalTensor([4, 1024, 32], 5), hv = normalTensor([4, 1024, 32], 6);
  const one1 = normalTensor([1, 30000, 32], 7);
  const calls = {
    'FAVOR+, grouped, masked': (f, m) => f.favorAttention(gq, gk, gv, { featureMap: m, keyMask: mask }),
    'FAVOR+, grouped, causal': (f, m) => f.favorAttention(gq, gk, gv, { featureMap: m, causal: true }),
    'FAVOR+, one head': (f, m) => f.favorAttention(one1, one1, one1, { featureMap: m }),
    'FAVOR+, into out': (f, m) => f.favorAttention(hq, hk, hv, { featureMap: m, out: new Float32Array(hq.data.length) }),
    'exact, 4 heads': (f) => f.exactAttention(hq, hk, hv),
    'exact, grouped, causal, masked': (f) => f.exactAttention(gq, gk, gv, { causal: true, keyMask: mask }),
    'codebook, grouped, causal': (f) => f.codebookAttention(gq, gk, gv, { codebook: normalTensor([16, 32], 8), causal: true }),
  };
  for (const [name, call] of Object.entries(calls)) {
    pieces.length = 0;
    const got = call(favor, maps[0]);
    assert.ok(pieces.length > 3, `${name}: its inputs arrived in pieces (${pieces.length})`);
    assert.equal(current, undefined, `${name}: nothing kept after the call`);
    assertBitIdentical(got.data, call(one, maps[1]).data, name);
  }
  // The same floats, once each: every piece's count summed is q, k and v's lengths.
  pieces.length = 0;
  calls['exact, 4 heads'](favor);
  assert.equal(pieces.reduce((n, [, , count]) => n + count, 0), 3 * hq.data.length);
  // Errors: the one a check beforehand gives, word for word.
  const badV = { data: hv.data.slice(), dims: hv.dims }, badQ = { data: hq.data.slice(), dims: hq.dims };
  badV.data[badV.data.length - 5] = NaN;
  badQ.data[7] = Infinity;
  for (const [name, call] of Object.entries({
    exact: (f, m, a, b) => f.exactAttention(a, hk, b),
    'FAVOR+': (f, m, a, b) => f.favorAttention(a, hk, b, { featureMap: m }),
    codebook: (f, m, a, b) => f.codebookAttention(a, hk, b, { codebook: normalTensor([16, 32], 8) }),
  })) {
    for (const [a, b, what] of [[hq, badV, /v: expected finite values, found nan at index 131067$/], [badQ, badV, /q: expected finite values, found inf at index 7$/]]) {
      let mine, theirs;
      try { call(favor, maps[0], a, b); } catch (e) { mine = e; }
      try { call(one, maps[1], a, b); } catch (e) { theirs = e; }
      assert.ok(mine instanceof RangeError, `${name}: ${mine}`);
      assert.match(mine.message, what);
      assert.equal(mine.message, theirs.message, name);
      assert.equal(current, undefined);
    }
  }
  // A copy that fails (a JS exception in the copy) ends the call with an error naming the inputs,
  // whichever piece it was; no thread is left waiting, and the next calls work.
  for (const at of [0, 5]) {
    failAt = at;
    pieces.length = 0;
    assert.throws(() => calls['FAVOR+, grouped, masked'](favor, maps[0]),
      (e) => e instanceof RangeError && e.message === 'favorAttention: q, k, v: could not be copied into the WebAssembly heap');
    pieces.length = 0;
    assert.throws(() => calls['exact, 4 heads'](favor), /^RangeError: exactAttention: q, k, v: could not be copied/);
    assert.equal(current, undefined);
  }
  failAt = -1;
  assertBitIdentical(calls['FAVOR+, grouped, masked'](favor, maps[0]).data, calls['FAVOR+, grouped, masked'](one, maps[1]).data, 'after a failed copy');
  // Small calls copy their inputs beforehand, as does the one-thread build.
  pieces.length = 0;
  favor.exactAttention(q, k, v);
  one.favorAttention(hq, hk, hv, { featureMap: maps[1] });
  assert.equal(pieces.length, 0);
  assertBitIdentical(favor.exactAttention(hq, hk, hv).data, one.exactAttention(hq, hk, hv).data, 'after the errors');
  maps.forEach((m) => m.dispose());
});

test('errors are still TypeError/RangeError naming the argument, and the instance keeps working', () => {
  const bad = normalTensor([3, 200, 16], 1);
  bad.data[2 * 200 * 16 + 5] = NaN;
  assert.throws(() => two.exactAttention(bad, k, v), (e) => e instanceof RangeError && /^exactAttention: q: .*finite/.test(e.message));
  // Overflowing scores in a block that a worker thread computes (the last one).
  const big = normalTensor([1, 333, 8], 4);
  big.data.fill(3e38, 330 * 8, 331 * 8);
  const bigK = { data: big.data.slice(), dims: big.dims };
  assert.throws(() => two.exactAttention(big, bigK, v1), (e) => e instanceof RangeError && /^exactAttention: /.test(e.message));
  assert.throws(() => two.exactAttention(q, { data: k.data, dims: [3, 200, 15] }, v), RangeError);
  assert.throws(() => two.exactAttention(q, { data: Array.from(k.data), dims: k.dims }, v), TypeError);
  assertBitIdentical(two.exactAttention(q1, k1, v1).data, one.exactAttention(q1, k1, v1).data, 'after the errors');
});

// The pthreads build runs on wasm exceptions, whose typed catch clauses clang 14 skips there: the
// bindings look the exception's type up instead (bindings/wasm/error_values.cpp, current_error). The same errors,
// word for word, as the single-thread build, thrown on the calling thread and on a helper; and
// no catch clause in the C++ sources may name a type, since it would silently never match.
test('errors carry the single-thread build\'s messages word for word, out of memory included', () => {
  const map = (favor) => favor.createFeatureMap({ dim: 8, features: 16, seed: 3 });
  const maps = { one: map(one), two: map(two) };
  const big = normalTensor([1, 333, 8], 4);
  big.data.fill(3e38, 330 * 8, 331 * 8);
  const huge = { data: new Float32Array(40000).fill(0.5), dims: [40000, 1] };
  const calls = [
    (f) => f.exactAttention(q, { data: k.data, dims: [3, 200, 15] }, v),
    (f) => f.exactAttention(q, { data: Array.from(k.data), dims: k.dims }, v),
    (f) => f.exactAttention(big, { data: big.data.slice(), dims: big.dims }, v1),
    (f, m) => f.favorAttention(big, big, v1, { featureMap: m[f === one ? 'one' : 'two'] }),
    (f) => f.attentionMatrix(huge, huge),
    (f) => f.createFeatureMap({ dim: 46341, features: 46341 }),
  ];
  for (const [i, call] of calls.entries()) {
    let a, b;
    try { call(one, maps); } catch (e) { a = e; }
    try { call(two, maps); } catch (e) { b = e; }
    assert.ok(a && b, `call ${i} throws in both builds`);
    assert.equal(b.constructor, a.constructor, `call ${i}: ${b.message}`);
    assert.equal(b.message, a.message, `call ${i}`);
    assert.doesNotMatch(b.message, /unknown internal error/);
  }
  maps.one.dispose(), maps.two.dispose();
  const sources = ['include/favor', 'src/favor', 'bindings/wasm'].flatMap((dir) =>
    readdirSync(new URL(`../../${dir}/`, import.meta.url), { recursive: true }).filter((f) => /\.(cpp|hpp)$/.test(f)).map((f) => `${dir}/${f}`));
  assert.ok(sources.length > 20, 'the C++ sources are found');
  for (const file of sources) {
    const text = readFileSync(new URL(`../../${file}`, import.meta.url), 'utf8');
    assert.doesNotMatch(text, /catch\s*\((?!\s*\.\.\.\s*\))/, `${file}: a catch clause that names a type`);
  }
});

// The pthreads build puts a per-thread cache of freed blocks in front of malloc (helper threads
// allocate a decode step's temporaries too): what the caches hold must not count as in use, and
// they must not grow with the number of calls.
test('bytes in use return to the start after parallel decode steps, and do not grow with them', (t) => {
  const start = two.memory();
  decodeOutputs(two, 32);
  const after = two.memory();
  decodeOutputs(two, 32 * 10);
  const end = two.memory();
  t.diagnostic(`bytes in use: start ${start.usedBytes}, after 32 steps ${after.usedBytes}, after 320 more ${end.usedBytes}; heap ${after.heapBytes} -> ${end.heapBytes}`);
  assert.equal(after.usedBytes, start.usedBytes, 'every byte of a disposed state and its steps is free');
  assert.equal(end.usedBytes, start.usedBytes, 'and after ten times as many steps');
  assert.equal(end.heapBytes, after.heapBytes, 'the heap did not grow for the longer run');
});

// Long calls allocate large temporaries (each block of rows' features) on every thread; the caches
// keep the last few a thread freed. They count as free, and a call that repeats finds them: the
// heap stops growing. Its high-water mark also depends on how the threads' blocks happen to
// interleave (one CI run's first round peaked at 51 MB, where rounds reach 61 MB), so it is taken
// after three rounds, each drained (memory() empties the caches), before five undrained ones.
test('bytes in use return to the start after long parallel calls, and the heap stops growing', (t) => {
  const featureMap = two.createFeatureMap({ dim: 64, features: 256, seed: 3 });
  const x = normalTensor([2, 8192, 64], 11);
  const start = two.memory();
  const runs = () => {
    two.favorAttention(x, x, x, { featureMap });
    two.favorAttention(x, x, x, { featureMap, causal: true });
    two.exactAttention(sliceRows(x, 0, 1024), sliceRows(x, 0, 1024), sliceRows(x, 0, 1024));
  };
  const rounds = [];
  for (let i = 0; i < 3; ++i) {
    runs();
    rounds.push(two.memory());
  }
  const after = rounds.at(-1);
  for (let i = 0; i < 5; ++i) runs();
  const end = two.memory();
  featureMap.dispose();
  t.diagnostic(`bytes in use: start ${start.usedBytes}, after each of three rounds ${rounds.map((r) => r.usedBytes).join(', ')}, after five more ${end.usedBytes}; heap ${rounds.map((r) => r.heapBytes).join(', ')} -> ${end.heapBytes}`);
  for (const r of rounds) assert.equal(r.usedBytes, start.usedBytes, 'every temporary of the calls is free');
  assert.equal(end.usedBytes, start.usedBytes, 'and after five more rounds');
  assert.equal(end.heapBytes, after.heapBytes, 'the heap did not grow in five more rounds');
});

test('results stay right across heap growth', () => {
  const L = 2048, d = 64;  // a 2048 x 2048 x 4-head matrix: 64 MiB, beyond the 16 MiB start
  const a = normalTensor([4, L, d], 7);
  const before = two.memory().heapBytes;
  const m2 = two.attentionMatrix(a, a, { causal: true });
  assert.ok(two.memory().heapBytes > before, 'the heap grew');
  assertBitIdentical(m2.data, one.attentionMatrix(a, a, { causal: true }).data, 'attention matrix after growth');
  assertBitIdentical(two.exactAttention(q, k, v).data, one.exactAttention(q, k, v).data, 'exact after growth');
});

test('dispose() ends the workers; the instance keeps working on one thread', async () => {
  const favor = await loadFavor({ threads: 2 });
  const expected = favor.exactAttention(q1, k1, v1);
  favor.dispose();
  favor.dispose();  // twice is fine
  assertBitIdentical(favor.exactAttention(q1, k1, v1).data, expected.data, 'after dispose');
});

test('a script that loaded the threaded module exits by itself', () => {
  const script = `
    import { loadFavor } from 'favor-attention';
    const favor = await loadFavor({ threads: 2 });
    const t = { data: new Float32Array(300 * 8).fill(0.5), dims: [300, 8] };
    console.log(favor.info.threads, favor.exactAttention(t, t, t).data[0]);`;
  // The timeout only detects a hang: such a script takes well under a second.
  const child = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
    cwd: fileURLToPath(new URL('../..', import.meta.url)), encoding: 'utf8', timeout: 30_000,
  });
  assert.equal(child.error, undefined, `the child did not exit by itself: ${child.error?.message}`);
  assert.equal(child.status, 0, child.stderr);
  assert.equal(child.stdout.trim(), '2 0.5');
  assert.equal(child.stderr, '', 'nothing on stderr (no emscripten warnings)');
});

// Emscripten waits forever for a pool worker that cannot load; loadTimeout turns that into an
// error. 1 ms is always too short for workers to start, so the timeout path runs every time.
test('a pool that does not start within loadTimeout rejects, its workers end, and later loads work', () => {
  const script = `
    import { loadFavor } from 'favor-attention';
    const error = await loadFavor({ threads: 2, loadTimeout: 1 }).then(() => null, (e) => e);
    console.log(error?.code, error instanceof Error, /within 1 ms/.test(error?.message), /worker-src blob:/.test(error?.message));
    const favor = await loadFavor({ threads: 2, loadTimeout: 60_000 });
    const t = { data: new Float32Array(300 * 8).fill(0.5), dims: [300, 8] };
    console.log(favor.info.threads, favor.exactAttention(t, t, t).data[0]);`;
  const child = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
    cwd: fileURLToPath(new URL('../..', import.meta.url)), encoding: 'utf8', timeout: 30_000,
  });
  assert.equal(child.error, undefined, `the child did not exit by itself (workers left running?): ${child.error?.message}`);
  assert.equal(child.status, 0, child.stderr);
  assert.equal(child.stdout.trim(), 'FAVOR_LOAD_TIMEOUT true true true\n2 0.5');
});
