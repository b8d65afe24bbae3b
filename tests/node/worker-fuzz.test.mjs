// A seeded random walk over the worker API (loadFavor({ worker: true })) in lockstep with the
// synchronous API: a few hundred calls, about half of them invalid (bad dims, NaN, wrong types,
// unknown options, functions, disposed or foreign objects, options.out of the right or a wrong
// length or type; packed matrices made, used, disposed), each run on both APIs with the same
// arguments (feature maps and states as each API's own twin). Every worker outcome must equal the
// synchronous one: the same result bits or the same error class and message; no call may throw
// synchronously or hang. Afterwards both APIs' wasm bytes in use are back at their baselines.
// FAVOR_FUZZ_SEED / FAVOR_FUZZ_STEPS change the walk (the failing step is printed with its seed).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { loadFavor } from 'favor-attention';

import { rng } from './helpers.mjs';
import { assertSameOutcome, outcome, strict, within } from './worker-helpers.mjs';

const SEED = Number(process.env.FAVOR_FUZZ_SEED ?? 20240611);
const STEPS = Number(process.env.FAVOR_FUZZ_STEPS ?? 400);

let sync, worker, moving, foreignMap;
before(async () => {
  [sync, worker, moving] = await Promise.all([loadFavor({ threads: 1 }), loadFavor({ worker: true, threads: 1 }), loadFavor({ worker: true, threads: 1, transfer: true })]);
  foreignMap = (await loadFavor({ threads: 1 })).createFeatureMap({ dim: 8, features: 4 });
});
after(() => Promise.all([worker?.dispose(), moving?.dispose()]));

/** The walk's random choices; every call of `build` below is deterministic given them. */
function chooser(seed) {
  const { uniform, normal } = rng(seed);
  const int = (lo, hi) => lo + Math.floor(uniform() * (hi - lo + 1));
  const pick = (list) => list[int(0, list.length - 1)];
  const chance = (p) => uniform() < p;
  const tensor = (dims, scale = 0.6) => ({ data: Float32Array.from({ length: dims.reduce((a, b) => a * b, 1) }, () => normal() * scale), dims });
  return { uniform, int, pick, chance, tensor };
}

// Each API's run of a step is one epoch: a hostile getter below answers right at its first read
// in an epoch and wrong at every later one, so that both APIs meet the same hostility however
// often the other one read it.
let epoch = 0;
function onceRight(right, wrong) {
  let seen = -1;
  return () => {
    const first = seen !== epoch;
    seen = epoch;
    return first ? right() : wrong();
  };
}

// One corruption of a tensor or of an options object, or none. Each keeps the synchronous API's
// own view of it: the same object goes to both APIs.
function corruptTensor(c, t) {
  switch (c.int(0, 12)) {
    case 9: {  // data read twice would be a longer array (heap overflow if copied unchecked)
      const data = onceRight(() => t.data, () => new Float32Array(t.data.length * 64 + 1));
      return { get data() { return data(); }, dims: t.dims };
    }
    case 10: {  // dims read twice would be others of the same count
      const dims = onceRight(() => [...t.dims], () => [t.data.length, 1]);
      return { data: t.data, get dims() { return dims(); } };
    }
    case 11: {  // data with an own length that lies
      const data = new Float32Array(t.data.length * 4 + 1);
      Object.defineProperty(data, 'length', { value: t.data.length });
      return { data, dims: t.dims };
    }
    case 0: return { data: t.data, dims: [...t.dims.slice(0, -1), t.dims.at(-1) + 1] };           // length mismatch
    case 1: { const data = t.data.slice(); data[c.int(0, data.length - 1)] = c.pick([NaN, Infinity, -Infinity]); return { data, dims: t.dims }; }
    case 2: return { data: Float64Array.from(t.data), dims: t.dims };                              // wrong array type
    case 3: return t.data;                                                                       // not a tensor
    case 4: return { data: t.data, dims: t.dims.map(String) };                                     // dims of strings
    case 5: return c.pick([null, undefined, 7, 'q', () => t]);
    case 6: return { data: t.data.subarray(1), dims: t.dims };                                      // a short view
    case 7: return { data: t.data, dims: [t.data.length] };                                         // rank 1
    default: return t;
  }
}

// Options whose every key the API reads but does not check: getters of a class, or keys not enumerable.
class GetterOptions {
  #values;
  constructor(values) { this.#values = values; }
  static {
    for (const key of ['causal', 'scale', 'chunk', 'keyMask', 'out', 'featureMap', 'codebook', 'assignment', 'temperature', 'clusters', 'iterations', 'seed']) {
      Object.defineProperty(this.prototype, key, { get() { return this.#values[key]; } });
    }
  }
}
const hidden = (options) => Object.defineProperties({}, Object.fromEntries(Object.entries(options).map(([key, value]) => [key, { value }])));

function corruptOptions(c, options) {
  switch (c.int(0, 11)) {
    case 0: return { ...options, [c.pick(['Causal', 'chunks', 'features', 'mask'])]: true };
    case 1: return { ...options, scale: c.pick([0, -1, NaN, '0.5', null, () => 1, Symbol('s')]) };
    case 2: return { ...options, causal: c.pick(['yes', 1, null, () => true]) };
    case 3: return c.pick([null, 5, 'causal', [true], () => options]);
    case 4: return Object.create(options ?? null);  // every option inherited: read, but not checked, as own keys are
    case 5: return Object.assign(Object.create({ causal: true, Causal: 1 }), options);
    case 6: return options && typeof options === 'object' ? new GetterOptions(options) : options;
    case 7: return options && typeof options === 'object' ? hidden(options) : options;
    default: return options;
  }
}

// options.out for a call whose output has `size` floats, or none: a fresh array for each API's
// run (never one array shared by both), mostly of the right length, else of a wrong length or type.
function outChoice(c, size, bad) {
  if (!c.chance(0.3)) return null;
  const kind = bad ? c.pick(['short', 'long', 'float64', 'array']) : c.chance(0.8) ? 'right' : c.pick(['short', 'long']);
  const make = { right: () => new Float32Array(size), short: () => new Float32Array(size - 1), long: () => new Float32Array(size + 3),
    float64: () => new Float64Array(size), array: () => Array.from({ length: size }, () => 0) }[kind];
  const inherited = c.chance(0.3);  // out (and the rest) on the options' prototype
  return (o) => (o && typeof o === 'object' && !Array.isArray(o) && typeof o !== 'function'
    ? (inherited ? Object.create({ ...o, out: make() }) : { ...o, out: make() }) : o);
}

/**
 * One random call: { label, run(favor, objects) } where objects = { maps, states } of that API
 * (twins at the same indices). `valid` steers most arguments right, but any may still fail.
 */
function nextCall(c, step, pools) {
  const bad = c.chance(0.5);
  const d = c.pick([4, 8]), dv = c.int(1, 5);
  const lead = c.pick([[], [2], [1, 2]]);
  const L = c.int(1, 9), S = L + c.int(0, 4);
  const q = c.tensor([...lead, L, d]), k = c.tensor([...lead, S, d]), v = c.tensor([...lead, S, dv]);
  const maybe = (t) => (bad && c.chance(0.4) ? corruptTensor(c, t) : t);
  const opts = (o) => (bad && c.chance(0.5) ? corruptOptions(c, o) : o);
  // Masks in every typed array the synchronous API accepts: Uint8Array, a Node Buffer of its own,
  // one from Node's shared pool, a Buffer view into a larger one.
  const maskValues = Array.from({ length: S }, () => (bad && c.chance(0.1) ? 2 : c.int(0, 1)));
  const maskKind = c.pick(['plain', 'plain', 'alloc', 'pooled', 'view']);
  const maskData = { plain: () => Uint8Array.from(maskValues), alloc: () => { const m = Buffer.alloc(S); m.set(maskValues); return m; },
    pooled: () => Buffer.from(maskValues), view: () => { const m = Buffer.alloc(S + 9); m.set(maskValues, 4); return m.subarray(4, 4 + S); } }[maskKind];
  const mask = c.chance(0.2) ? { data: maskData(), dims: [S] } : undefined;
  const attention = (extra = {}) => ({ causal: c.chance(0.5), ...(c.chance(0.3) ? { scale: 0.1 + c.uniform() } : {}), ...(mask ? { keyMask: mask } : {}), ...extra });
  const codebook = c.tensor(c.chance(0.8) ? [c.int(1, 5), d] : [...lead, c.int(1, 4), d]);
  // A feature map argument: one of the pool's (maybe disposed), a foreign one or a plain object.
  const mapIndex = pools.maps.length ? c.int(0, pools.maps.length - 1) : -1;
  const mapKind = bad && c.chance(0.3) ? c.pick(['foreign', 'plain', 'state', 'none']) : 'pool';
  const mapOf = (objects) => (mapKind === 'pool' && mapIndex >= 0 ? objects.maps[mapIndex]
    : mapKind === 'foreign' ? foreignMap : mapKind === 'plain' ? { dim: d, features: 4 } : mapKind === 'state' ? objects.states[0] : undefined);
  const stateIndex = pools.states.length ? c.int(0, pools.states.length - 1) : -1;
  const matrixIndex = pools.matrices.length ? c.int(0, pools.matrices.length - 1) : -1;
  const rows = lead.reduce((x, y) => x * y, 1) * L;
  const out = (size) => outChoice(c, size, bad) ?? ((o) => o);

  const op = c.pick(['exactAttention', 'attentionMatrix', 'favorAttention', 'favorAttention', 'favorAttentionMatrix', 'codebookAttention',
    'codebookAttentionMatrix', 'kmeans', 'randomCodebook', 'matmul', 'compare', 'outputRelativeError', 'codebookFromFeatureMap',
    'createFeatureMap', 'createFeatureMap', 'redraw', 'projection', 'disposeMap', 'createCausalState', 'createCausalState',
    'append', 'append', 'append', 'length', 'stateBytes', 'reset', 'disposeState',
    'packMatrix', 'matmulPacked', 'matmulPacked', 'disposeMatrix', 'threadsUsed']);
  const label = `step ${step}: ${op}${bad ? ' (bad)' : ''}`;
  const calls = {
    exactAttention: () => { const a = [maybe(q), maybe(k), maybe(v)], o = opts(attention()), w = out(rows * dv); return (f) => f.exactAttention(...a, w(o)); },
    attentionMatrix: () => { const a = [maybe(q), maybe(k)], o = opts(attention()), w = out(rows * S); return (f) => f.attentionMatrix(...a, w(o)); },
    favorAttention: () => {
      const a = [maybe(q), maybe(k), maybe(v)], o = opts(attention(c.chance(0.3) ? { chunk: c.int(1, 6) } : {})), w = out(rows * dv);
      return (f, objects) => f.favorAttention(...a, w(o && typeof o === 'object' && !Array.isArray(o) ? { ...o, featureMap: mapOf(objects) } : o));
    },
    favorAttentionMatrix: () => {
      const a = [maybe(q), maybe(k)], o = opts(attention());
      return (f, objects) => f.favorAttentionMatrix(...a, o && typeof o === 'object' && !Array.isArray(o) ? { ...o, featureMap: mapOf(objects) } : o);
    },
    codebookAttention: () => {
      const a = [maybe(q), maybe(k), maybe(v), opts(attention({ codebook: maybe(codebook), assignment: c.pick(['hard', 'soft', 'gaussian', ...(bad ? ['near'] : [])]) }))];
      return (f) => f.codebookAttention(...a);
    },
    codebookAttentionMatrix: () => { const a = [maybe(q), maybe(k), opts(attention({ codebook: maybe(codebook), temperature: bad ? c.pick([0, -1, 0.5]) : 0.5 }))]; return (f) => f.codebookAttentionMatrix(...a); },
    kmeans: () => { const a = [maybe(k), { clusters: bad ? c.pick([0, S + 1, 2.5, '2']) : c.int(1, S), iterations: c.int(0, 4), seed: c.int(0, 9) }]; return (f) => f.kmeans(...a); },
    randomCodebook: () => { const a = [{ clusters: c.int(bad ? 0 : 1, 4), dim: d, seed: c.int(0, 9), ...(bad ? { sigma: c.pick([0, NaN, 2]) } : {}) }]; return (f) => f.randomCodebook(...a); },
    matmul: () => {
      const b = c.tensor(c.chance(0.5) ? [d, dv] : [dv, d]);
      const a = [maybe(q), maybe(b)], o = opts({ transposeB: b.dims[0] === dv && b.dims[1] === d && (!bad || c.chance(0.5)) }), w = out(rows * dv);
      return (f) => f.matmul(...a, w(o));
    },
    compare: () => { const x = c.tensor([L, S]), y = bad ? maybe(c.tensor(c.chance(0.5) ? [S, L] : [L, S])) : c.tensor([L, S]); return (f) => f.compare(x, y); },
    outputRelativeError: () => { const x = c.tensor([L, dv]), y = bad ? maybe(c.tensor([L, dv])) : c.tensor([L, dv]); return (f) => f.outputRelativeError(x, y); },
    codebookFromFeatureMap: () => { const o = bad && c.chance(0.5) ? { scale: c.pick([0, NaN, 'x']) } : undefined; return (f, objects) => f.codebookFromFeatureMap(mapOf(objects), o); },
    createFeatureMap: () => {
      const kernel = c.pick(['positive', 'hyperbolic', 'trigonometric', 'relu', 'oprf', 'sderf', 'aderf']);
      const o = { dim: d, features: c.int(1, 12), kernel, sampling: c.pick(['iid', 'orthogonal', 'orthogonal-fixed', 'simplex', 'structured']), seed: c.int(0, 99),
        ...(kernel === 'oprf' && c.chance(0.5) ? { rho: c.uniform() * 4 } : {}),
        ...(['sderf', 'aderf'].includes(kernel) && c.chance(0.5) ? { fit: { q: c.tensor([c.int(1, 6), d]), k: c.tensor([c.int(1, 6), d]) } } : {}) };
      const a = bad ? corruptOptions(c, c.chance(0.5) ? { ...o, features: c.pick([0, -1, 1.5, '4', undefined]) } : o) : o;
      return async (f, objects) => objects.maps.push(await f.createFeatureMap(a)) && undefined;
    },
    redraw: () => { const seed = bad ? c.pick([-1, 0.5, '3', undefined]) : c.int(0, 999); return async (f, objects) => { await objects.maps[mapIndex]?.redraw(seed); }; },
    projection: () => (f, objects) => objects.maps[mapIndex]?.projection,
    disposeMap: () => async (f, objects) => { await objects.maps[mapIndex]?.dispose(); },
    createCausalState: () => {
      const method = bad ? c.pick(['exact', 'favor', 'codebook', 'linear']) : c.pick(['exact', 'favor', 'codebook']);
      const chunk = c.chance(0.3) ? { chunk: bad ? 0 : c.int(1, 8) } : {};
      // A sliding window: 1 to 6 keys (exact), or blocks of 1 or 2 positions (FAVOR+), so that
      // appends of up to 3 rows slide it.
      const window = c.chance(0.3) ? { window: bad ? c.pick([0, -1, -4, 1.5, 6, '4', NaN]) : method === 'favor' ? c.pick([4, 8]) : c.int(1, 6) } : {};
      const books = { codebook: maybe(codebook), assignment: c.pick(['hard', 'soft']) };
      return async (f, objects) => {  // no random choice in here: it runs once per API
        const o = method === 'exact' ? { method, ...window } : method === 'favor' ? { method, featureMap: mapOf(objects), ...chunk, ...window }
          : { method, ...books, ...chunk };
        objects.states.push(await f.createCausalState(o));
      };
    },
    append: () => {
      const n = c.int(1, 3);
      const a = [maybe(c.tensor([...lead, n, d])), maybe(c.tensor([...lead, n, d])), maybe(c.tensor([...lead, n, dv]))];
      if (!bad && c.chance(0.2)) {  // out is v's own array (each API's run gets its own copy of v)
        return (f, objects) => {
          const vv = { data: a[2].data.slice(), dims: a[2].dims };
          return objects.states[stateIndex]?.append(a[0], a[1], vv, { out: vv.data });
        };
      }
      const w = out(lead.reduce((x, y) => x * y, 1) * n * dv), o = w({});
      return (f, objects) => objects.states[stateIndex]?.append(...a, ...(Object.hasOwn(o, 'out') ? [w({})] : []));
    },
    length: () => (f, objects) => objects.states[stateIndex]?.length,
    stateBytes: () => (f, objects) => objects.states[stateIndex]?.stateBytes,
    reset: () => async (f, objects) => { await objects.states[stateIndex]?.reset(); },
    disposeState: () => async (f, objects) => { await objects.states[stateIndex]?.dispose(); },
    packMatrix: () => {
      const b = c.tensor(c.chance(0.5) ? [d, dv] : [dv, d]), t = maybe(b);
      const o = opts({ transposeB: b.dims[0] === dv && b.dims[1] === d && (!bad || c.chance(0.5)) });
      return async (f, objects) => objects.matrices.push(await f.packMatrix(t, o)) && undefined;
    },
    matmulPacked: () => {  // any matrix of the pool (maybe disposed, maybe of another k), bias and out maybe
      const a = maybe(q), o = opts({ ...(bad && c.chance(0.3) ? { transposeB: false } : {}), ...(c.chance(0.3) ? { bias: c.tensor([c.int(1, 5)]) } : {}) });
      return (f, objects) => objects.matrices[matrixIndex] && f.matmul(a, objects.matrices[matrixIndex], o);
    },
    disposeMatrix: () => async (f, objects) => { await objects.matrices[matrixIndex]?.dispose(); },
    threadsUsed: () => (f) => f.threadsUsed(),  // both sides run on one thread: 1
  };
  return { label, run: calls[op]() };
}

test(`a seeded random mix of ${STEPS} valid and invalid calls gives the synchronous outcomes through the worker; memory back to its baseline`,
  (t) => walk(t, worker, SEED, STEPS));

// The same walk through a worker that moves its inputs (transfer: true): each step's arguments
// are fresh, and the synchronous API runs on them first.
test(`the walk through a worker with transfer: true (${STEPS / 2} steps, another seed)`, (t) => walk(t, moving, SEED + 1, STEPS / 2));

async function walk(t, worker, SEED, STEPS) {
  // Baselines after one call of each kind has run (first-use allocations of the runtime).
  const warm = { data: new Float32Array(8).fill(0.5), dims: [2, 4] };
  for (const f of [sync, worker]) {
    await f.exactAttention(warm, warm, warm);
    await outcome(() => f.exactAttention(warm, warm, { data: new Float32Array(8).fill(NaN), dims: [2, 4] }));
  }
  const base = { sync: sync.memory().usedBytes, worker: (await worker.memory()).usedBytes };
  const c = chooser(SEED);
  const violations = [];
  const guarded = strict(worker, violations);
  const objects = { sync: { maps: [], states: [], matrices: [] }, worker: { maps: [], states: [], matrices: [] } };
  const tally = { value: 0, TypeError: 0, RangeError: 0 };
  for (let step = 0; step < STEPS; step++) {
    const { label, run } = nextCall(c, step, objects.sync);
    const where = `${label} (FAVOR_FUZZ_SEED=${SEED})`;
    epoch++;
    const expected = await outcome(() => run(sync, objects.sync));
    // Bad arguments are refused with a TypeError or RangeError, never an abort of the module.
    assert.ok(!expected.error || expected.error instanceof TypeError || expected.error instanceof RangeError,
      `${where}: the synchronous call failed with ${expected.error?.constructor?.name}: ${expected.error?.message}`);
    epoch++;
    const actual = await within(outcome(() => run(guarded, objects.worker)), 20_000, where);
    assert.deepEqual(violations, [], `${where}: threw synchronously or returned no Promise`);
    assertSameOutcome(actual, expected, where);
    assert.equal(objects.worker.maps.length, objects.sync.maps.length, `${where}: maps created`);
    assert.equal(objects.worker.states.length, objects.sync.states.length, `${where}: states created`);
    assert.equal(objects.worker.matrices.length, objects.sync.matrices.length, `${where}: packed matrices created`);
    tally[expected.error ? expected.error.constructor.name : 'value']++;
  }
  t.diagnostic(`${STEPS} steps (seed ${SEED}): ${tally.value} results, ${tally.TypeError} TypeErrors, ${tally.RangeError} RangeErrors; `
    + `${objects.sync.maps.length} maps, ${objects.sync.states.length} states and ${objects.sync.matrices.length} packed matrices made`);
  assert.ok(tally.value >= STEPS / 5 && tally.TypeError >= STEPS / 20 && tally.RangeError >= STEPS / 20, `a mix of outcomes: ${JSON.stringify(tally)}`);
  // Live twins still agree, then everything is disposed: bytes in use back at both baselines.
  for (let i = 0; i < objects.sync.maps.length; i++) {
    assertSameOutcome(await outcome(() => objects.worker.maps[i].projection), await outcome(() => objects.sync.maps[i].projection), `map ${i} at the end`);
  }
  for (const side of ['sync', 'worker']) {
    for (const o of [...objects[side].states, ...objects[side].maps, ...objects[side].matrices]) await o.dispose();
  }
  assert.equal(sync.memory().usedBytes, base.sync, 'synchronous bytes in use');
  assert.equal((await worker.memory()).usedBytes, base.worker, 'worker bytes in use');
}
