// Misuse of the worker API (loadFavor({ worker: true })), table-driven like misuse.test.mjs: each
// row runs once on the synchronous API and once through the worker, and the worker's call must
// reject (never throw synchronously, never hang) with the same class and message as the
// synchronous call throws. Then what only the worker API has: disposed proxies and instances,
// feature maps of other instances, inputs moved with transfer: true (views into larger or shared
// buffers, a buffer used twice, inputs already moved), arguments structured clone cannot carry,
// failed loads (no worker left running) and unknown load options.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { after, before, test } from 'node:test';

import { loadFavor } from 'favor-attention';

import { OBJECTS, OPERATIONS } from '../../web/operations.js';
import { cloneTensor, filledTensor, normalTensor, withValue } from './helpers.mjs';
import { asyncRun, failingRows } from './hostile-cases.mjs';
import { assertSameOutcome, eventually, outcome, settledThreadCount, strict, threadCount, within } from './worker-helpers.mjs';

const LIMIT_MS = 20_000;  // a worker call that has not settled by then hangs
let sync, worker, otherSync, otherWorker;
const violations = [];
before(async () => {
  [sync, otherSync, worker, otherWorker] = await Promise.all([
    loadFavor({ threads: 1 }), loadFavor({ threads: 1 }), loadFavor({ worker: true, threads: 1 }), loadFavor({ worker: true, threads: 1 }),
  ]);
});
after(() => Promise.all([worker?.dispose(), otherWorker?.dispose()]));

// The fixtures of misuse.test.mjs: q [4, 8], k [6, 8], v [6, 3]; a head-dim 8 map.
const q = normalTensor([4, 8], 1), k = normalTensor([6, 8], 2), v = normalTensor([6, 3], 3);
const qs = normalTensor([6, 8], 4);
const q3 = normalTensor([2, 4, 8], 5), k3 = normalTensor([2, 6, 8], 6), v3 = normalTensor([2, 6, 3], 7);
const mask = (values, dims = [values.length]) => ({ data: Uint8Array.from(values), dims });
class Tensorish {  // a class instance: structured clone would drop its name
  constructor() { this.dims = [6, 3]; }
}

// [label, async (favor, map) => call]: written once for both APIs (awaiting a synchronous value
// changes nothing). `map` is a head-dim 8 feature map of that API.
const cases = [
  // ---- tensors ----
  ['q is a Float32Array, not a tensor', (f) => f.exactAttention(q.data, k, v)],
  ['q is null', (f) => f.exactAttention(null, k, v)],
  ['q missing', (f) => f.exactAttention(undefined, k, v)],
  ['q.data is a Float64Array', (f) => f.exactAttention({ data: Float64Array.from(q.data), dims: [4, 8] }, k, v)],
  ['k.data is a plain Array', (f) => f.exactAttention(q, { data: Array.from(k.data), dims: [6, 8] }, v)],
  ['v.data is missing', (f) => f.exactAttention(q, k, { dims: [6, 3] })],
  ['v.dims is a string', (f) => f.exactAttention(q, k, { data: v.data, dims: '6,3' })],
  ['q.dims is an Int32Array', (f) => f.exactAttention({ data: q.data, dims: new Int32Array([4, 8]) }, k, v)],
  ['q.dims rank 1', (f) => f.exactAttention({ data: q.data, dims: [32] }, k, v)],
  ['q.dims with a 0', (f) => f.exactAttention({ data: new Float32Array(0), dims: [0, 8] }, k, v)],
  ['q.dims not integers', (f) => f.exactAttention({ data: q.data, dims: [2.5, 12.8] }, k, v)],
  ['k.dims holds a string', (f) => f.exactAttention(q, { data: k.data, dims: ['6', 8] }, v)],
  ['k.dims holds a BigInt', (f) => f.exactAttention(q, { data: k.data, dims: [6n, 8] }, v)],
  ['q data length does not match dims', (f) => f.exactAttention({ data: q.data, dims: [5, 8] }, k, v)],
  ['v is a view shorter than dims', (f) => f.exactAttention(q, k, { data: v.data.subarray(1), dims: [6, 3] })],
  ['NaN in q', (f) => f.exactAttention(withValue(q, 5, NaN), k, v)],
  ['+Infinity in k', (f) => f.exactAttention(q, withValue(k, 47, Infinity), v)],
  ['d of k differs from q', (f) => f.exactAttention(q, filledTensor([6, 7]), v)],
  ['leading dims of k differ from q', (f) => f.exactAttention(q3, filledTensor([3, 6, 8]), v3)],
  ['causal with L > S', (f) => f.exactAttention(filledTensor([8, 8]), k, v, { causal: true })],
  ['causal is a string', (f) => f.exactAttention(qs, k, v, { causal: 'yes' })],
  ['causal is a function', (f) => f.exactAttention(qs, k, v, { causal: () => true })],
  ['scale 0', (f) => f.exactAttention(q, k, v, { scale: 0 })],
  ['scale NaN', (f) => f.exactAttention(q, k, v, { scale: NaN })],
  ['scale a symbol', (f) => f.exactAttention(q, k, v, { scale: Symbol('half') })],
  ['scale null', (f) => f.exactAttention(q, k, v, { scale: null })],
  ['scale a Date', (f) => f.exactAttention(q, k, v, { scale: new Date(0) })],
  ['unknown option key', (f) => f.exactAttention(q, k, v, { Causal: true })],
  ['options a number', (f) => f.exactAttention(q, k, v, 5)],
  ['options an array', (f) => f.exactAttention(q, k, v, [true])],
  ['options null', (f) => f.exactAttention(q, k, v, null)],
  ['options a function', (f) => f.exactAttention(q, k, v, function causal() {})],
  ['v a class instance without data', (f) => f.exactAttention(q, k, new Tensorish())],
  ['v null', (f) => f.exactAttention(q, k, null)],
  ['favorAttention: v null', (f, map) => f.favorAttention(q, k, null, { featureMap: map })],
  ['codebookAttention: v null', (f) => f.codebookAttention(q, k, null, { codebook: filledTensor([3, 8]) })],
  ['attentionMatrix: q an Array', (f) => f.attentionMatrix([1, 2], k)],
  ['attentionMatrix: causal with L > S', (f) => f.attentionMatrix(filledTensor([8, 8]), k, { causal: true })],
  ['attentionMatrix: does not take featureMap', (f, map) => f.attentionMatrix(q, k, { featureMap: map })],
  ['attentionMatrix: too large for memory', (f) => f.attentionMatrix(filledTensor([40000, 1]), filledTensor([40000, 1]))],

  // ---- createFeatureMap ----
  ['createFeatureMap: no options', (f) => f.createFeatureMap()],
  ['createFeatureMap: options null', (f) => f.createFeatureMap(null)],
  ['createFeatureMap: unknown key', (f) => f.createFeatureMap({ dim: 8, features: 8, numFeatures: 16 })],
  ['createFeatureMap: features missing', (f) => f.createFeatureMap({ dim: 8 })],
  ['createFeatureMap: features 0', (f) => f.createFeatureMap({ dim: 8, features: 0 })],
  ['createFeatureMap: features 2.5', (f) => f.createFeatureMap({ dim: 8, features: 2.5 })],
  ['createFeatureMap: features a string', (f) => f.createFeatureMap({ dim: 8, features: '8' })],
  ['createFeatureMap: W too large for one allocation', (f) => f.createFeatureMap({ dim: 64, features: 2 ** 24 })],
  ['createFeatureMap: unknown kernel', (f) => f.createFeatureMap({ dim: 8, features: 8, kernel: 'softmax' })],
  ['createFeatureMap: sampling true', (f) => f.createFeatureMap({ dim: 8, features: 8, sampling: true })],
  ['createFeatureMap: seed 2^53', (f) => f.createFeatureMap({ dim: 8, features: 8, seed: 2 ** 53 })],
  ['createFeatureMap: seed a BigInt', (f) => f.createFeatureMap({ dim: 8, features: 8, seed: 1n })],
  ['createFeatureMap: epsilon NaN', (f) => f.createFeatureMap({ dim: 8, features: 8, kernel: 'relu', epsilon: NaN })],
  ['createFeatureMap: projection rank 3', (f) => f.createFeatureMap({ projection: filledTensor([2, 4, 8]) })],
  ['createFeatureMap: NaN in projection', (f) => f.createFeatureMap({ projection: withValue(filledTensor([4, 8]), 9, NaN) })],
  ['createFeatureMap: features disagrees with projection', (f) => f.createFeatureMap({ projection: filledTensor([4, 8]), features: 5 })],
  ['createFeatureMap: rho on a positive map', (f) => f.createFeatureMap({ dim: 8, features: 4, rho: 1 })],
  ['createFeatureMap: fit on a positive map', (f) => f.createFeatureMap({ dim: 8, features: 4, fit: { q: filledTensor([3, 8]), k: filledTensor([3, 8]) } })],
  ['createFeatureMap: fit.k of another d', (f) => f.createFeatureMap({ dim: 8, features: 4, kernel: 'aderf', fit: { q: filledTensor([3, 8]), k: filledTensor([3, 5]) } })],

  // ---- favorAttention / favorAttentionMatrix ----
  ['favorAttention: no options', (f) => f.favorAttention(q, k, v)],
  ['favorAttention: featureMap a plain object', (f) => f.favorAttention(q, k, v, { featureMap: { dim: 8, features: 8 } })],
  ['favorAttention: featureMap null', (f) => f.favorAttention(q, k, v, { featureMap: null })],
  ['favorAttention: featureMap a class instance', (f) => f.favorAttention(q, k, v, { featureMap: new Tensorish() })],
  ['favorAttention: featureMap disposed', async (f) => {
    const map = await f.createFeatureMap({ dim: 8, features: 8 });
    await map.dispose();
    return f.favorAttention(q, k, v, { featureMap: map });
  }],
  ['favorAttention: featureMap disposed twice', async (f) => {
    const map = await f.createFeatureMap({ dim: 8, features: 8 });
    map.dispose();
    await map.dispose();
    return f.favorAttention(q, k, v, { featureMap: map });
  }],
  ['favorAttention: a causal state as featureMap', async (f) => {
    const state = await f.createCausalState({ method: 'exact' });
    try { return await f.favorAttention(q, k, v, { featureMap: state }); } finally { await state.dispose(); }
  }],
  ['favorAttention: a disposed causal state as featureMap', async (f) => {
    const state = await f.createCausalState({ method: 'exact' });
    await state.dispose();
    return f.favorAttention(q, k, v, { featureMap: state });
  }],
  ['favorAttention: q d differs from the map', (f, map) => f.favorAttention(filledTensor([4, 6]), filledTensor([6, 6]), v, { featureMap: map })],
  ['favorAttention: chunk 0', (f, map) => f.favorAttention(q, k, v, { featureMap: map, chunk: 0 })],
  ['favorAttention: chunk a string', (f, map) => f.favorAttention(q, k, v, { featureMap: map, chunk: '64' })],
  ['favorAttention: NaN in v', (f, map) => f.favorAttention(q, k, withValue(v, 17, NaN), { featureMap: map })],
  ['favorAttention: unknown option', (f, map) => f.favorAttention(q, k, v, { featureMap: map, features: 8 })],
  ['favorAttentionMatrix: featureMap a string', (f) => f.favorAttentionMatrix(q, k, { featureMap: 'positive' })],
  ['favorAttentionMatrix: does not take chunk', (f, map) => f.favorAttentionMatrix(q, k, { featureMap: map, chunk: 8 })],
  ['favorAttentionMatrix: too large for memory', (f, map) => f.favorAttentionMatrix(filledTensor([40000, 8]), filledTensor([40000, 8]), { featureMap: map })],

  // ---- the map's own methods ----
  ['redraw: seed -1', (f, map) => map.redraw(-1)],
  ['redraw: seed missing', (f, map) => map.redraw()],
  ['redraw: seed a string', (f, map) => map.redraw('7')],
  ['redraw on a disposed map', async (f) => {
    const map = await f.createFeatureMap({ dim: 8, features: 4 });
    await map.dispose();
    return map.redraw(1);
  }],
  ['redraw on a disposed map with a bad seed (disposal is reported first)', async (f) => {
    const map = await f.createFeatureMap({ dim: 8, features: 4 });
    await map.dispose();
    return map.redraw('x');
  }],
  ['projection of a disposed map', async (f) => {
    const map = await f.createFeatureMap({ dim: 8, features: 4 });
    map[Symbol.dispose]();
    return map.projection;
  }],

  // ---- compare / outputRelativeError ----
  ['compare: dims differ', (f) => f.compare(filledTensor([4, 6]), filledTensor([6, 4]))],
  ['compare: exactMatrix a Float32Array', (f) => f.compare(new Float32Array(4), filledTensor([2, 2]))],
  ['compare: NaN in exactMatrix', (f) => f.compare(withValue(filledTensor([3, 3]), 4, NaN), filledTensor([3, 3]))],
  ['compare: approxMatrix missing', (f) => f.compare(filledTensor([3, 3]))],
  ['outputRelativeError: approx null', (f) => f.outputRelativeError(filledTensor([2, 2]), null)],
  ['outputRelativeError: Infinity in exact', (f) => f.outputRelativeError(withValue(filledTensor([2, 2]), 1, Infinity), filledTensor([2, 2]))],

  // ---- codebooks ----
  ['codebookAttention: codebook missing', (f) => f.codebookAttention(q, k, v, {})],
  ['codebookAttention: codebook d differs', (f) => f.codebookAttention(q, k, v, { codebook: filledTensor([3, 7]) })],
  ['codebookAttention: assignment nearest', (f) => f.codebookAttention(q, k, v, { codebook: filledTensor([3, 8]), assignment: 'nearest' })],
  ['codebookAttention: temperature 0', (f) => f.codebookAttention(q, k, v, { codebook: filledTensor([3, 8]), assignment: 'soft', temperature: 0 })],
  ['codebookAttention: chunk -Infinity', (f) => f.codebookAttention(q, k, v, { codebook: filledTensor([3, 8]), chunk: -Infinity })],
  ['codebookAttentionMatrix: codebook null', (f) => f.codebookAttentionMatrix(q, k, { codebook: null })],
  ['codebookAttentionMatrix: +Infinity in q', (f) => f.codebookAttentionMatrix(withValue(q, 31, Infinity), k, { codebook: filledTensor([3, 8]) })],
  ['kmeans: options missing', (f) => f.kmeans(k)],
  ['kmeans: clusters above the number of keys', (f) => f.kmeans(k, { clusters: 7 })],
  ['kmeans: unknown option', (f) => f.kmeans(k, { clusters: 2, init: 'random' })],
  ['randomCodebook: no options', (f) => f.randomCodebook()],
  ['randomCodebook: sigma Infinity', (f) => f.randomCodebook({ clusters: 2, dim: 4, sigma: Infinity })],
  ['randomCodebook: too large for memory', (f) => f.randomCodebook({ clusters: 2 ** 24, dim: 2 ** 20 })],
  ['codebookFromFeatureMap: not a FeatureMap', (f) => f.codebookFromFeatureMap({ projection: filledTensor([2, 8]) })],
  ['codebookFromFeatureMap: nothing', (f) => f.codebookFromFeatureMap()],
  ['codebookFromFeatureMap: a disposed map', async (f) => {
    const map = await f.createFeatureMap({ dim: 8, features: 4 });
    await map.dispose();
    return f.codebookFromFeatureMap(map);
  }],
  ['codebookFromFeatureMap: scale NaN', (f, map) => f.codebookFromFeatureMap(map, { scale: NaN })],

  // ---- key masks ----
  ['keyMask a Float32Array tensor', (f) => f.exactAttention(q, k, v, { keyMask: { data: new Float32Array(6), dims: [6] } })],
  ['keyMask a bare Uint8Array', (f) => f.exactAttention(q, k, v, { keyMask: new Uint8Array(6) })],
  ['keyMask length does not match its dims', (f) => f.exactAttention(q, k, v, { keyMask: mask([1, 1, 1, 1, 1], [6]) })],
  ['keyMask does not broadcast', (f) => f.exactAttention(q3, k3, v3, { keyMask: { data: new Uint8Array(18).fill(1), dims: [3, 6] } })],
  ['keyMask holds a 2', (f) => f.codebookAttention(q, k, v, { codebook: filledTensor([3, 8]), keyMask: mask([1, 1, 2, 1, 1, 1]) })],

  // ---- grouped heads, matmul ----
  ['heads of k do not divide those of q', (f) => f.exactAttention(filledTensor([2, 4, 4, 8]), filledTensor([2, 3, 6, 8]), filledTensor([2, 3, 6, 3]))],
  ['matmul: inner dims differ', (f) => f.matmul(q, filledTensor([7, 3]))],
  ['matmul: transposeB a string', (f) => f.matmul(q, filledTensor([8, 3]), { transposeB: 'yes' })],
  ['matmul: bias a Float64Array', (f) => f.matmul(q, filledTensor([8, 3]), { bias: { data: new Float64Array(3), dims: [3] } })],
  ['matmul: NaN in b', (f) => f.matmul(q, withValue(filledTensor([8, 3]), 4, NaN))],

  // ---- causal states ----
  ['createCausalState: no options', (f) => f.createCausalState()],
  ['createCausalState: unknown method', (f) => f.createCausalState({ method: 'linear' })],
  ['createCausalState: favor without featureMap', (f) => f.createCausalState({ method: 'favor' })],
  ['createCausalState: favor with a disposed map', async (f) => {
    const map = await f.createFeatureMap({ dim: 8, features: 4 });
    await map.dispose();
    return f.createCausalState({ method: 'favor', featureMap: map });
  }],
  ['createCausalState: oprf map without rho', async (f) => {
    const map = await f.createFeatureMap({ dim: 8, features: 4, kernel: 'oprf' });
    try { return await f.createCausalState({ method: 'favor', featureMap: map }); } finally { await map.dispose(); }
  }],
  ['createCausalState: exact takes no featureMap', (f, map) => f.createCausalState({ method: 'exact', featureMap: map })],
  ['createCausalState: window 0', (f) => f.createCausalState({ method: 'exact', window: 0 })],
  ['createCausalState: window -1', (f) => f.createCausalState({ method: 'exact', window: -1 })],
  ['createCausalState: window 1.5', (f) => f.createCausalState({ method: 'exact', window: 1.5 })],
  ['createCausalState: window a string', (f) => f.createCausalState({ method: 'exact', window: '8' })],
  ['createCausalState: window NaN', (f) => f.createCausalState({ method: 'exact', window: NaN })],
  ['createCausalState: favor window not a multiple of 4', (f, map) => f.createCausalState({ method: 'favor', featureMap: map, window: 6 })],
  ['createCausalState: codebook takes no window', (f) => f.createCausalState({ method: 'codebook', codebook: filledTensor([3, 8]), window: 8 })],
  ['append: leading dims differ from the first append', async (f) => {
    const state = await f.createCausalState({ method: 'exact' });
    await state.append(filledTensor([2, 1, 8]), filledTensor([2, 1, 8]), filledTensor([2, 1, 3]));
    try { return await state.append(filledTensor([3, 1, 8]), filledTensor([3, 1, 8]), filledTensor([3, 1, 3])); } finally { await state.dispose(); }
  }],
  ['append: d differs from the map', async (f, map) => {
    const state = await f.createCausalState({ method: 'favor', featureMap: map });
    try { return await state.append(filledTensor([1, 7]), filledTensor([1, 7]), filledTensor([1, 3])); } finally { await state.dispose(); }
  }],
  ['append: unknown option', async (f) => {
    const state = await f.createCausalState({ method: 'exact' });
    try { return await state.append(filledTensor([1, 8]), filledTensor([1, 8]), filledTensor([1, 3]), { causal: true }); } finally { await state.dispose(); }
  }],
  ['append on a disposed state', async (f) => {
    const state = await f.createCausalState({ method: 'exact' });
    await state.dispose();
    return state.append(filledTensor([1, 8]), filledTensor([1, 8]), filledTensor([1, 3]));
  }],
  // ---- packMatrix ----
  ['packMatrix: NaN in b', (f) => f.packMatrix(withValue(filledTensor([8, 3]), 2, NaN))],
  ['packMatrix: b rank 3', (f) => f.packMatrix(filledTensor([1, 8, 3]))],
  ['matmul: transposeB with a packed b', async (f) => f.matmul(q, await f.packMatrix(filledTensor([8, 3])), { transposeB: false })],
  ['matmul: packed b of the wrong k', async (f) => f.matmul(q, await f.packMatrix(filledTensor([7, 3])))],
  ['matmul: a disposed packed b', async (f) => {
    const packed = await f.packMatrix(filledTensor([8, 3]));
    await packed.dispose();
    return f.matmul(q, packed);
  }],
  ['bytes of a disposed packed matrix', async (f) => {
    const packed = await f.packMatrix(filledTensor([8, 3]));
    await packed.dispose();
    return packed.bytes;
  }],
  // ---- options.out: checked in the worker against an array of out's length ----
  ['out a Float64Array', (f) => f.exactAttention(q, k, v, { out: new Float64Array(12) })],
  ['out a tensor, not its array', (f, map) => f.favorAttention(q, k, v, { featureMap: map, out: filledTensor([4, 3]) })],
  ['out one float short', (f) => f.attentionMatrix(q, k, { out: new Float32Array(23) })],
  ['out one float long, with a NaN input', (f) => f.exactAttention(withValue(q, 2, NaN), k, v, { out: new Float32Array(13) })],
  ['out of the wrong length with an invalid q', (f) => f.matmul(q.data, filledTensor([8, 3]), { out: new Float32Array(1) })],
  ['out of the wrong length for an append', async (f) => {
    const state = await f.createCausalState({ method: 'exact' });
    return state.append(filledTensor([1, 8]), filledTensor([1, 8]), filledTensor([1, 3]), { out: new Float32Array(4) });
  }],
  ['length of a disposed state', async (f) => {
    const state = await f.createCausalState({ method: 'codebook', codebook: filledTensor([3, 8]) });
    state[Symbol.dispose]();
    return state.length;
  }],
  ['stateBytes of a disposed state', async (f) => {
    const state = await f.createCausalState({ method: 'exact' });
    await state.dispose();
    return state.stateBytes;
  }],
  ['reset of a disposed state', async (f) => {
    const state = await f.createCausalState({ method: 'exact' });
    await state.dispose();
    return state.reset();
  }],
  // ---- hostile and oversized arguments: the rows misuse.test.mjs runs (hostile-cases.mjs) ----
  ...failingRows(asyncRun).map(([label, call]) => [label, call]),
];

test(`the worker misuse table covers every call (${cases.length} rows)`, () => {
  assert.ok(cases.length >= 100);
  const text = cases.map(([, fn]) => fn.toString()).join('\n');
  // Every call, method and getter of web/operations.js but those without arguments (memory()):
  // a getter is misused on a disposed object.
  const used = [
    ...Object.entries(OPERATIONS).filter(([, spec]) => spec.args.length > 0).map(([name]) => name),
    ...Object.values(OBJECTS).flatMap(({ getters, methods }) => [...getters, ...Object.keys(methods)]),
  ];
  for (const name of used) assert.ok(text.includes(`.${name}`), `no row uses ${name}`);
});

for (const [label, call] of cases) {
  test(`worker misuse: ${label}`, async () => {
    const syncMap = sync.createFeatureMap({ dim: 8, features: 8, seed: 1 });
    const expected = await outcome(() => call(sync, syncMap));
    syncMap.dispose();
    assert.ok(expected.error instanceof TypeError || expected.error instanceof RangeError,
      `the synchronous call must fail with a TypeError or RangeError, got ${expected.error ?? 'a result'}`);
    const before = violations.length;
    const favor = strict(worker, violations);
    const map = await favor.createFeatureMap({ dim: 8, features: 8, seed: 1 });
    const actual = await within(outcome(() => call(favor, map)), LIMIT_MS, label);
    assert.deepEqual(violations.slice(before), [], 'a worker call threw synchronously or returned no Promise');
    assertSameOutcome(actual, expected, label);
    assert.equal(map.disposed, false);
    await map.dispose();
    // The worker keeps working.
    assertSameOutcome(await outcome(() => worker.exactAttention(q3, k3, v3)), await outcome(() => sync.exactAttention(q3, k3, v3)), `${label}: then`);
  });
}

test('feature maps of another instance (synchronous or another worker) reject as the synchronous API rejects a foreign map', async () => {
  const foreign = otherSync.createFeatureMap({ dim: 8, features: 8 });
  const expected = await outcome(() => sync.favorAttention(q, k, v, { featureMap: foreign }));
  assert.match(expected.error.message, /^favorAttention: featureMap: expected a FeatureMap from this instance's createFeatureMap, got an object \(FeatureMap\)$/);
  const syncMap = sync.createFeatureMap({ dim: 8, features: 8 });
  const otherWorkersMap = await otherWorker.createFeatureMap({ dim: 8, features: 8 });
  const ownMap = await worker.createFeatureMap({ dim: 8, features: 8 });
  for (const [name, map] of [['a synchronous map', syncMap], ["another worker's map", otherWorkersMap]]) {
    for (const call of [
      (f, m) => f.favorAttention(q, k, v, { featureMap: m }),
      (f, m) => f.favorAttentionMatrix(q, k, { featureMap: m, causal: false }),
      (f, m) => f.createCausalState({ method: 'favor', featureMap: m }),
      (f, m) => f.codebookFromFeatureMap(m),
    ]) {
      const actual = await within(outcome(() => call(worker, map)), LIMIT_MS, name);
      assertSameOutcome(actual, await outcome(() => call(sync, foreign)), `${name}: ${call}`);
    }
  }
  // ... and the worker's own map in the synchronous API or in the other worker
  assertSameOutcome(await outcome(() => sync.favorAttention(q, k, v, { featureMap: ownMap })), expected, 'a worker map in the synchronous API');
  assertSameOutcome(await outcome(() => otherWorker.favorAttention(q, k, v, { featureMap: ownMap })), expected, 'a worker map in another worker');
  // each map still works where it belongs
  assertSameOutcome(await outcome(() => worker.favorAttention(q, k, v, { featureMap: ownMap })),
    await outcome(() => sync.favorAttention(q, k, v, { featureMap: syncMap })), 'own maps');
  assert.deepEqual((await otherWorker.favorAttention(q, k, v, { featureMap: otherWorkersMap })).dims, [4, 3]);
  foreign.dispose(), syncMap.dispose();
  await Promise.all([ownMap.dispose(), otherWorkersMap.dispose()]);
});

test('a disposed instance: every call rejects with a TypeError naming it; calls pending at dispose() reject; proxies are inert', async () => {
  const own = await loadFavor({ worker: true, threads: 1 });
  const map = await own.createFeatureMap({ dim: 8, features: 8 });
  const state = await own.createCausalState({ method: 'exact' });
  const big = normalTensor([4096, 64], 9);
  const pending = own.exactAttention(big, big, big);
  const ended = own.dispose();
  assert.ok(ended instanceof Promise, 'dispose() returns a Promise');
  await within(assert.rejects(pending, (e) => e.constructor === Error && /disposed while this call ran/.test(e.message)), LIMIT_MS, 'pending call');
  await within(ended, LIMIT_MS, 'dispose()');
  const favor = strict(own, violations);
  const before = violations.length;
  for (const [name, call] of [
    ['exactAttention', () => favor.exactAttention(q, k, v)], ['attentionMatrix', () => favor.attentionMatrix(q, k)],
    ['createFeatureMap', () => favor.createFeatureMap({ dim: 8, features: 8 })], ['createCausalState', () => favor.createCausalState({ method: 'exact' })],
    ['favorAttention', () => favor.favorAttention(q, k, v, { featureMap: map })], ['favorAttentionMatrix', () => favor.favorAttentionMatrix(q, k, { featureMap: map })],
    ['codebookAttention', () => favor.codebookAttention(q, k, v, { codebook: filledTensor([3, 8]) })],
    ['codebookAttentionMatrix', () => favor.codebookAttentionMatrix(q, k, { codebook: filledTensor([3, 8]) })],
    ['kmeans', () => favor.kmeans(k, { clusters: 2 })], ['randomCodebook', () => favor.randomCodebook({ clusters: 2, dim: 4 })],
    ['codebookFromFeatureMap', () => favor.codebookFromFeatureMap(map)], ['matmul', () => favor.matmul(q, filledTensor([8, 3]))],
    ['compare', () => favor.compare(filledTensor([2, 2]), filledTensor([2, 2]))], ['outputRelativeError', () => favor.outputRelativeError(filledTensor([2, 2]), filledTensor([2, 2]))],
    ['memory', () => favor.memory()],
    ['redraw', () => map.redraw(1)], ['projection', () => map.projection], ['append', () => state.append(q, k, v)], ['length', () => state.length],
    ['stateBytes', () => state.stateBytes], ['reset', () => state.reset()],
  ]) {
    await within(assert.rejects(call(), (e) => e instanceof TypeError && e.message === `${name}: this favor instance has been disposed (its worker has ended)`), LIMIT_MS, name);
  }
  assert.deepEqual(violations.slice(before), []);
  // Disposing again, or disposing its proxies, resolves at once.
  await within(Promise.all([own.dispose(), map.dispose(), state.dispose()]), 1000, 'dispose after dispose');
  assert.equal(map.disposed, true);
});

test('transfer: true moves whole-buffer inputs once each; views into larger or shared buffers are copied; moved inputs are empty afterwards', async () => {
  const moving = await loadFavor({ worker: true, threads: 1, transfer: true });
  try {
    // q and k views into one larger buffer, v a whole buffer used twice (as k of one call and v).
    const arena = new Float32Array(4 * 8 + 6 * 8 + 5);
    arena.set(q.data, 0);
    arena.set(k.data, 32);
    const qView = { data: arena.subarray(0, 32), dims: [4, 8] }, kView = { data: arena.subarray(32, 80), dims: [6, 8] };
    const want = sync.exactAttention(q, k, k).data;
    const vWhole = { data: k.data.slice(), dims: [6, 8] };
    const out = await moving.exactAttention(qView, kView, vWhole);
    assertSameOutcome({ value: out }, { value: { data: want, dims: [4, 8] } }, 'views and a whole buffer');
    assert.equal(arena.byteLength, (4 * 8 + 6 * 8 + 5) * 4, 'the larger buffer stays with the caller');
    assert.equal(vWhole.data.byteLength, 0, 'the whole-buffer input moved');
    // The same array as q, k and v: its buffer moves once.
    const x = { data: q.data.slice(), dims: [4, 8] };
    assertSameOutcome({ value: await moving.exactAttention(x, x, x) }, { value: sync.exactAttention(q, q, q) }, 'one array three times');
    assert.equal(x.data.byteLength, 0);
    // An input moved by an earlier call is empty: the synchronous API's message for empty data.
    const expected = await outcome(() => sync.exactAttention({ data: new Float32Array(0), dims: [4, 8] }, k, v));
    assertSameOutcome(await within(outcome(() => moving.exactAttention(x, cloneTensor(k), cloneTensor(v))), LIMIT_MS, 'moved input'), expected, 'a moved input');
    // A SharedArrayBuffer: copied (a snapshot), never moved or shared.
    const shared = new Float32Array(new SharedArrayBuffer(q.data.byteLength));
    shared.set(q.data);
    const pending = moving.exactAttention({ data: shared, dims: [4, 8] }, cloneTensor(k), cloneTensor(v));
    shared.fill(7);  // after the call was made: the worker has its own copy
    assertSameOutcome({ value: await pending }, { value: sync.exactAttention(q, k, v) }, 'shared buffer');
    assert.equal(shared.byteLength, q.data.byteLength);
    // A failed call still moved its inputs (documented).
    const failing = { data: withValue(q, 0, NaN).data, dims: [4, 8] };
    await assert.rejects(moving.exactAttention(failing, cloneTensor(k), cloneTensor(v)), RangeError);
    assert.equal(failing.data.byteLength, 0);
  } finally {
    await moving.dispose();
  }
});

test('arguments past those a call takes are ignored, as the synchronous API ignores them: never read, sent or moved', async () => {
  const moving = await loadFavor({ worker: true, threads: 1, transfer: true });
  try {
    const extra = new Float32Array(8), unreadable = { get boom() { throw new Error('read'); } };
    const want = sync.exactAttention(q, k, v, {}, extra, unreadable);
    assertSameOutcome({ value: await within(moving.exactAttention(cloneTensor(q), cloneTensor(k), cloneTensor(v), {}, extra, unreadable), LIMIT_MS, 'extra') },
      { value: want }, 'extra arguments');
    assert.equal(extra.length, 8, 'an extra array is not moved');
    const map = await moving.createFeatureMap({ dim: 8, features: 4 }, unreadable);
    assert.deepEqual((await map.redraw(3, unreadable, extra)).features, 4);
    assert.equal(extra.length, 8);
  } finally {
    await moving.dispose();
  }
});

test('without transfer, inputs are copied when the call is made and never detached', async () => {
  const arena = new Float32Array(1 << 20);  // 4 MiB, of which q is 128 bytes
  arena.set(q.data, 1000);
  const qView = { data: arena.subarray(1000, 1032), dims: [4, 8] };
  const x = { data: k.data.slice(), dims: [6, 8] };
  const pending = worker.exactAttention(qView, x, x);
  arena.fill(0), x.data.fill(0);  // after the call: it computed on the values at the call
  assertSameOutcome({ value: await pending }, { value: sync.exactAttention(q, k, k) }, 'copied at the call');
  assert.equal(x.data.byteLength, 6 * 8 * 4);
});

test('arguments structured clone cannot carry give the synchronous errors; tensor classes with getters work', async () => {
  class Tensor {  // a tensor class whose data and dims are getters, as some libraries write them
    #data; #dims;
    constructor(t) { this.#data = t.data; this.#dims = t.dims; }
    get data() { return this.#data; }
    get dims() { return this.#dims; }
  }
  const cyclic = { causal: true };
  cyclic.self = cyclic;
  for (const [label, call] of [
    ['tensors of a class with getters', (f) => f.exactAttention(new Tensor(q), new Tensor(k), new Tensor(v))],
    ['a mask of a class with getters', (f) => f.exactAttention(q, k, v, { keyMask: new Tensor(mask([1, 0, 1, 1, 0, 1])) })],
    ['options with a cycle', (f) => f.exactAttention(qs, k, v, cyclic)],
    ['a function as data', (f) => f.exactAttention({ data: () => q.data, dims: [4, 8] }, k, v)],
    ['a symbol as a dim', (f) => f.exactAttention({ data: q.data, dims: [Symbol.iterator, 8] }, k, v)],
    ['a class instance as options', (f) => f.kmeans(k, new Tensorish())],
  ]) {
    const expected = await outcome(() => call(sync));
    const actual = await within(outcome(() => call(worker)), LIMIT_MS, label);
    assertSameOutcome(actual, expected, label);
  }
});

test('options and tensors read through their prototypes: what they inherit counts, as the synchronous API reads it', async () => {
  class Options {}
  Options.prototype.causal = true;
  // A class whose options are getters over private fields (read with the caller's object as this).
  class GetterOptions {
    #causal = true;
    #out;
    constructor(out) { this.#out = out; }
    get causal() { return this.#causal; }
    get out() { return this.#out; }
    get gpuBuffer() { throw new Error('not an option: never read'); }
  }
  const hiddenCausal = () => Object.defineProperty({}, 'causal', { value: true, enumerable: false });
  const kq = { data: k.data, dims: [6, 8] };  // six queries, so that causal changes the result
  const causal = sync.exactAttention(kq, k, v, { causal: true }).data, full = sync.exactAttention(kq, k, v).data;
  assert.notDeepEqual(causal, full);
  for (const [label, make, want] of [
    ['options inheriting causal', () => Object.create({ causal: true }), causal],
    ['options inheriting causal from two prototypes up', () => Object.create(Object.create({ causal: true })), causal],
    ['options inheriting an unknown key (only own keys are checked)', () => Object.create({ causl: true }), full],
    ['options whose own causal overrides the inherited', () => Object.assign(Object.create({ causal: true }), { causal: false }), full],
    ['a class instance inheriting causal', () => new Options(), causal],
    ['a class instance whose causal is a getter over a private field', () => new GetterOptions(), causal],
    ['options whose own causal is not enumerable (read, not checked)', hiddenCausal, causal],
    ['options with no prototype and a causal not enumerable', () => Object.defineProperty(Object.create(null), 'causal', { value: true }), causal],
  ]) {
    for (const api of [sync, worker]) {
      const result = await within(Promise.resolve(api.exactAttention(kq, k, v, make())), LIMIT_MS, label);
      assert.deepEqual(result.data, want, `${label}${api === worker ? ' (worker)' : ''}`);
    }
  }
  // An inherited out is written (the caller's array, never a copy of it), beside an inherited causal.
  for (const api of [sync, worker]) {
    const out = new Float32Array(6 * 3);
    const result = await api.exactAttention(kq, k, v, Object.create({ out, causal: true }));
    assert.equal(result.data, out);
    assert.deepEqual(out, causal);
  }
  // ... and an out behind a getter, or not enumerable, with a causal of the same kind.
  for (const api of [sync, worker]) {
    for (const [label, make] of [['a getter', (out) => new GetterOptions(out)],
      ['not enumerable', (out) => Object.defineProperty(hiddenCausal(), 'out', { value: out })]]) {
      const out = new Float32Array(6 * 3);
      const result = await api.exactAttention(kq, k, v, make(out));
      assert.equal(result.data, out, `out ${label}${api === worker ? ' (worker)' : ''}`);
      assert.deepEqual(out, causal, `out ${label}${api === worker ? ' (worker)' : ''}`);
    }
  }
  // A tensor inheriting its data and dims; an own key named __proto__ is an unknown option in both.
  const inheriting = Object.create({ data: q.data, dims: [4, 8] });
  for (const [label, call] of [
    ['a tensor inheriting data and dims', (f) => f.exactAttention(inheriting, k, v)],
    ['options with an own __proto__ key', (f) => f.exactAttention(q, k, v, JSON.parse('{"__proto__": {"causal": true}}'))],
    ['options with an own __proto__ key and an out', (f) => f.exactAttention(q, k, v, Object.assign(JSON.parse('{"__proto__": {"causal": true}}'), { out: new Float32Array(12) }))],
    ['class-instance options with an own __proto__ key', (f) => f.exactAttention(q, k, v, Object.defineProperty(new Tensorish(), '__proto__', { value: 1, enumerable: true }))],
  ]) {
    assertSameOutcome(await within(outcome(() => call(worker)), LIMIT_MS, label), await outcome(() => call(sync)), label);
  }
});

// ---- loading ----
const wasmBytes = await readFile(new URL('../../dist/favor-scalar.wasm', import.meta.url));

test('failed loads reject as the synchronous load does and leave no worker running; unknown options reject', async () => {
  const base = await settledThreadCount();
  const corrupt = Uint8Array.from(wasmBytes.subarray(0, 64));  // starts with \0asm, then ends
  for (const [label, options] of [
    ['a wasmUrl that does not exist', { wasmUrl: '/nonexistent/favor.wasm', threads: 1 }],
    ['a wasmUrl of a file that is not wasm', { wasmUrl: new URL('../../package.json', import.meta.url), threads: 1 }],
    ['a wasmBinary that is not wasm', { wasmBinary: new Uint8Array([1, 2, 3, 4]), threads: 1 }],
    ['a wasmBinary cut short', { wasmBinary: corrupt, simd: false, threads: 1 }],
    ['a wasmBinary of the other build', { wasmBinary: wasmBytes, simd: true, threads: 2 }],
    ['a wasmBinary a string', { wasmBinary: 'AGFzbQ==' }],
    ['an unknown option', { threadz: 2 }],
    ['simd: "yes"', { simd: 'yes' }],
    ['threads: 0', { threads: 0 }],
    ['loadTimeout: -1', { loadTimeout: -1 }],
    ['tileRows: 8', { tileRows: 8 }],
    ['transfer: "yes"', { transfer: 'yes' }],
    ['locateFile (a function cannot cross)', { locateFile: (file) => file }],
  ]) {
    const expected = label.startsWith('locateFile') ? { error: new TypeError('loadFavor: locateFile: a function cannot be sent to the worker; pass wasmUrl or wasmBinary') }
      : await outcome(() => loadFavor(options));
    assert.ok(expected.error, `${label}: the synchronous load fails`);
    const actual = await within(outcome(() => loadFavor({ worker: true, ...options })), LIMIT_MS, label);
    assertSameOutcome(actual, expected, label);
    if (expected.error.code !== undefined) assert.equal(actual.error.code, expected.error.code, `${label}: code`);
    assert.ok(await eventually(() => threadCount() <= base), `${label}: ${threadCount() - base} thread(s) left running`);
  }
  await assert.rejects(loadFavor({ worker: 'yes' }), (e) => e instanceof TypeError && /^loadFavor: worker: expected a boolean/.test(e.message));
  await assert.rejects(loadFavor({ transfer: true }), (e) => e instanceof RangeError && /^loadFavor: transfer: only with worker: true/.test(e.message));
});
