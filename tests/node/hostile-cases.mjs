// Hostile and oversized arguments, one table for the synchronous API and the worker API
// (misuse.test.mjs and worker-misuse.test.mjs run its failing rows with theirs; hostile.test.mjs
// runs every row in both APIs, with and without transfer, and checks memory). Not a test file.
//
// A row: [label, (favor, objects) => call, outcome]. objects = { map, state, packed }: a head-dim 8
// feature map, an exact causal state and a packed [8, 3] b, made fresh for the row in the API it
// runs in. outcome: [ErrorClass, pattern of the message], or 'value' (the call succeeds, and the
// worker's result equals the synchronous one bit for bit). Every row builds its own arguments at
// each run: getters count their reads, and a worker with transfer: true moves them.
import { normalTensor } from './helpers.mjs';

// Fixtures whose data is a fresh copy at every read: a worker with transfer: true moves what it
// is given, and the same fixture serves every row.
const copying = (t) => ({ get data() { return t.data.slice(); }, dims: t.dims });
const q = copying(normalTensor([4, 8], 1)), k = copying(normalTensor([6, 8], 2)), v = copying(normalTensor([6, 3], 3));
const b = copying(normalTensor([8, 3], 4));
const fresh = (t) => ({ data: t.data.slice(), dims: [...t.dims] });

// One array of this many floats (1.44 GB, never written: its pages stay untouched) passed as q, k
// and v sums to 4.32 GB of input, past the 4 GiB a 32-bit malloc size can express.
export const HUGE_FLOATS = 360_000_000;
const huge = () => {
  const t = { data: new Float32Array(HUGE_FLOATS), dims: [HUGE_FLOATS / 8, 8] };
  return [t, t, t];
};

// A tensor whose data is a getter: right at its first read, `later` at every read after it.
function dataThenOther(t, later) {
  let reads = 0;
  return { get data() { return reads++ === 0 ? t.data : later; }, dims: t.dims };
}

// A tensor whose dims are a getter: right at the first read, then other dims of the same count.
function dimsThenOther(t, later) {
  let reads = 0;
  return { data: t.data, get dims() { return reads++ === 0 ? [...t.dims] : later; } };
}

// A Float32Array that says it has `length` values (an own property) but holds `real`.
function lyingLength(real, length) {
  const data = new Float32Array(real).fill(0.25);
  Object.defineProperty(data, 'length', { value: length });
  return data;
}

const throwing = (message) => () => { throw new TypeError(message); };

export const HOSTILE_CASES = [
  // ---- sizes past 4 GiB: refused before anything is allocated or copied ----
  ['inputs past 4 GiB: exactAttention of one 1.44 GB array as q, k and v', (f) => f.exactAttention(...huge()), [RangeError, /^exactAttention: out of memory: \d+ bytes of input do not fit/]],
  ['inputs past 4 GiB: favorAttention', (f, { map }) => f.favorAttention(...huge(), { featureMap: map }), [RangeError, /^favorAttention: out of memory/]],
  ['inputs past 4 GiB: append', (f, { state }) => state.append(...huge()), [RangeError, /^append: out of memory/]],
  ['dims whose product is 2^32 (0 in 32 bits)', (f) => f.exactAttention({ data: new Float32Array(1), dims: [65536, 65536] }, k, v),
    [RangeError, /^exactAttention: q: data has 1 values but dims \[65536,65536\] need 4294967296$/]],
  ['mask dims whose product is 2^32', (f) => f.exactAttention(q, k, v, { keyMask: { data: new Uint8Array(6), dims: [65536, 65536] } }),
    [RangeError, /^exactAttention: keyMask: data has 6 values but dims \[65536,65536\] need 4294967296$/]],
  ['an output of 2^32 floats (0 in 32 bits)', (f) => f.attentionMatrix(normalTensor([65536, 1], 5), normalTensor([65536, 1], 6)),
    [RangeError, /^attentionMatrix: output: dims \[65536, 65536\] hold more elements than can be addressed$/]],
  ['a matmul output of 2^32 floats', (f) => f.matmul(normalTensor([65536, 1], 5), normalTensor([1, 65536], 6)),
    [RangeError, /^matmul: output: dims \[65536, 65536\]/]],

  // ---- typed arrays that lie about themselves ----
  ['q.data with an own length property (24, holding 4096)', (f) => f.exactAttention({ data: lyingLength(4096, 24), dims: [4, 6] }, k, v),
    [RangeError, /^exactAttention: q: data has 4096 values but dims \[4,6\] need 24$/]],
  ['q.data an object made from Float32Array.prototype', (f) => f.exactAttention({ data: Object.create(Float32Array.prototype, { length: { value: 32 } }), dims: [4, 8] }, k, v),
    [TypeError, /^exactAttention: q\.data: expected a Float32Array, got an object \(Float32Array\)$/]],
  ['out an object made from Float32Array.prototype', (f) => f.exactAttention(q, k, v, { out: Object.create(Float32Array.prototype, { length: { value: 12 } }) }),
    [TypeError, /^exactAttention: out: expected a Float32Array to write the output into, got an object \(Float32Array\)$/]],
  ['out with an own length property (12, holding 1)', (f) => f.exactAttention(q, k, v, { out: lyingLength(1, 12) }),
    [RangeError, /^exactAttention: out: expected a Float32Array of 12 floats .* got one of 1$/]],
  ['a Buffer as q.data', (f) => f.exactAttention({ data: Buffer.alloc(128), dims: [4, 8] }, k, v), [TypeError, /^exactAttention: q\.data: expected a Float32Array, got a Buffer$/]],
  ['a pooled Buffer mask of the wrong length', (f) => f.exactAttention(q, k, v, { keyMask: { data: Buffer.from([1, 0, 1]), dims: [6] } }),
    [RangeError, /^exactAttention: keyMask: data has 3 values but dims \[6\] need 6$/]],

  // ---- getters that dispose what the call uses, or throw ----
  ['a getter disposes the state during append', (f, { state }) => {
    const t = fresh(normalTensor([1, 8], 7));
    return state.append(t, { get data() { state.dispose(); return t.data; }, dims: [1, 8] }, fresh(normalTensor([1, 3], 8)));
  }, [TypeError, /^append: state: this causal state has been disposed$/]],
  ['a getter disposes the feature map during favorAttention', (f, { map }) => f.favorAttention(fresh(q), fresh(k), fresh(v), {
    featureMap: map, get chunk() { map.dispose(); return 2; },
  }), [TypeError, /^favorAttention: featureMap: this feature map has been disposed$/]],
  ['a getter disposes the packed matrix during matmul', (f, { packed }) => f.matmul(fresh(q), packed, {
    get bias() { packed.dispose(); return undefined; },
  }), [TypeError, /^matmul: b: this packed matrix has been disposed$/]],
  ['an options.out getter throws', (f) => f.exactAttention(fresh(q), fresh(k), fresh(v), { get out() { return throwing('out: a hostile getter')(); } }),
    [TypeError, /^out: a hostile getter$/]],
  ['append options.out getter throws', (f, { state }) => state.append(fresh(normalTensor([1, 8], 7)), fresh(normalTensor([1, 8], 8)), fresh(normalTensor([1, 3], 9)), {
    get out() { return throwing('out: a hostile getter')(); },
  }), [TypeError, /^out: a hostile getter$/]],
  ['options a Proxy whose traps throw', (f) => f.matmul(fresh(q), fresh(b), new Proxy({}, {
    ownKeys: throwing('options: a hostile Proxy'), getOwnPropertyDescriptor: throwing('options: a hostile Proxy'), get: throwing('options: a hostile Proxy'),
  })), [TypeError, /^options: a hostile Proxy$/]],

  // ---- arguments read once: the checked value is the one computed on ----
  ['q.data a getter: 32 values, then 1 Mi at every later read', (f) => f.exactAttention(dataThenOther(fresh(q), new Float32Array(1 << 20).fill(1)), fresh(k), fresh(v)), 'value'],
  ['q.dims a getter: [4, 8], then [2, 16]', (f) => f.exactAttention(dimsThenOther(fresh(q), [2, 16]), fresh(k), fresh(v)), 'value'],
  ['keyMask.data a getter: 6 values, then 1 Mi', (f) => f.exactAttention(fresh(q), fresh(k), fresh(v), {
    keyMask: dataThenOther({ data: Uint8Array.from([1, 0, 1, 1, 0, 1]), dims: [6] }, new Uint8Array(1 << 20).fill(1)),
  }), 'value'],
  ['k.dims a Proxy answering [6, 8] once, then [48, 1]', (f) => {
    let reads = 0;
    const dims = new Proxy([6, 8], { get: (target, key) => (typeof key === 'string' && /^\d+$/.test(key) && reads++ >= 2 ? [48, 1][key] : target[key]) });
    return f.exactAttention(fresh(q), { data: k.data.slice(), dims }, fresh(v));
  }, 'value'],
  ['append: v.data a getter, then 1 Mi', (f, { state }) => state.append(fresh(normalTensor([1, 8], 7)), fresh(normalTensor([1, 8], 8)),
    dataThenOther(fresh(normalTensor([1, 3], 9)), new Float32Array(1 << 20))), 'value'],

  // ---- Node Buffers: every typed array the synchronous API accepts works in the worker ----
  ['keyMask a Buffer.alloc', (f) => f.exactAttention(fresh(q), fresh(k), fresh(v), { keyMask: { data: Buffer.alloc(6, 1), dims: [6] } }), 'value'],
  ['keyMask a pooled Buffer.from', (f) => f.exactAttention(fresh(q), fresh(k), fresh(v), { keyMask: { data: Buffer.from([1, 0, 1, 1, 0, 1]), dims: [6] } }), 'value'],
  ['keyMask a Buffer view into a larger Buffer', (f) => f.exactAttention(fresh(q), fresh(k), fresh(v), {
    keyMask: { data: Buffer.alloc(64, 1).subarray(5, 11), dims: [6] },
  }), 'value'],
  ['q.data a subclass of Float32Array', (f) => {
    class Floats extends Float32Array {}
    return f.exactAttention({ data: Floats.from(q.data), dims: [4, 8] }, fresh(k), fresh(v));
  }, 'value'],
  ['matmul: out is a\'s own array', (f) => {
    const a = fresh(normalTensor([4, 3], 10));
    return f.matmul(a, fresh(normalTensor([3, 3], 11)), { out: a.data });
  }, 'value'],
  ['append: out is v\'s own array', (f, { state }) => {
    const vv = fresh(normalTensor([1, 3], 9));
    return state.append(fresh(normalTensor([1, 8], 7)), fresh(normalTensor([1, 8], 8)), vv, { out: vv.data });
  }, 'value'],
];

// The objects of a row, made in the API it runs in, and disposed after it (rows dispose some
// themselves: disposing again is a no-op).
const OBJECT_OPTIONS = { map: { dim: 8, features: 8, seed: 1 }, state: { method: 'exact' } };

/** A row's call on the synchronous API: (favor) => its result, or throws. */
export const syncRun = (call) => (f) => {
  const objects = { map: f.createFeatureMap(OBJECT_OPTIONS.map), state: f.createCausalState(OBJECT_OPTIONS.state), packed: f.packMatrix(fresh(b)) };
  try {
    return call(f, objects);
  } finally {
    for (const o of Object.values(objects)) o.dispose();
  }
};

/** A row's call on the worker API: (favor) => a Promise of its result. */
export const asyncRun = (call) => async (f) => {
  const objects = { map: await f.createFeatureMap(OBJECT_OPTIONS.map), state: await f.createCausalState(OBJECT_OPTIONS.state), packed: await f.packMatrix(fresh(b)) };
  try {
    return await call(f, objects);
  } finally {
    await Promise.all(Object.values(objects).map((o) => o.dispose()));
  }
};

/** The failing rows: [label, call, ErrorClass, pattern], call made by syncRun or asyncRun. */
export const failingRows = (run) => HOSTILE_CASES.filter(([, , outcome]) => outcome !== 'value')
  .map(([label, call, [type, pattern]]) => [`hostile: ${label}`, run(call), type, pattern]);
