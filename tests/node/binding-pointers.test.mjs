// The bindings refuse a bad tensor pointer from JS as an internal error instead of reading on:
// web/heap.js writes every pointer and the dims before its data, so a bad one is this package's
// bug, and it must surface as an Error naming it, with the instance still working and nothing
// leaked, never as a wasm abort (a pointer of 0 read its dims at -8). Driven through the raw
// module and web/heap.js's own call(), which lays the tensors out as the API does.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { after, before, test } from 'node:test';

import { createApi } from '../../web/api.js';
import { createHeap } from '../../web/heap.js';

import { normalTensor } from './helpers.mjs';
import * as ref from './reference.mjs';

let Module, heap, api, map;
before(async () => {
  const { default: createModule } = await import('../../dist/favor-simd.js');
  const wasmBinary = await readFile(new URL('../../dist/favor-simd.wasm', import.meta.url));
  Module = await createModule({ wasmBinary });
  heap = createHeap(Module);
  api = createApi(Module, { simd: true });
  map = new Module.FeatureMap();
  assert.equal(map.init(8, 16, 'positive', 'orthogonal', 1, 1e-6, NaN), undefined);
});

after(() => map.delete());

const q = { ...normalTensor([5, 8], 1), name: 'q' }, k = { ...normalTensor([7, 8], 2), name: 'k' };
const v = { ...normalTensor([7, 3], 3), name: 'v' }, codebook = { ...normalTensor([4, 8], 4), name: 'codebook' };
const NO = NaN;  // "not given" for scale and out's length

// Each raw entry that reads tensor pointers, called with the pointers heap.call made (q, k, v, codebook).
const ENTRIES = {
  exactAttention: (p) => Module.exactAttention(p[0], p[1], p[2], false, NO, 0, NO, false),
  attentionMatrix: (p) => Module.attentionMatrix(p[0], p[1], false, NO, 0, NO),
  favorAttention: (p) => Module.favorAttention(map, p[0], p[1], p[2], false, NO, 64, 0, NO, false),
  favorAttentionMatrix: (p) => Module.favorAttentionMatrix(map, p[0], p[1], false, NO, 0, NO),
  codebookAttention: (p) => Module.codebookAttention(p[3], p[0], p[1], p[2], 'hard', 1, false, NO, 64, 0, NO, false),
  codebookAttentionMatrix: (p) => Module.codebookAttentionMatrix(p[3], p[0], p[1], 'hard', 1, false, NO, 0, NO),
  compare: (p) => Module.compare(p[0], p[0]),
  outputRelativeError: (p) => Module.outputRelativeError(p[2], p[2]),
  matmul: (p) => Module.matmul(p[0], p[1], 0, true, NO),
  kmeans: (p) => Module.kmeans(p[1], 2, 3, 1),
};

// Runs an entry on the four tensors with `spoil` applied to its pointers (and the heap) first.
const callSpoiled = (name, spoil) => heap.call(name, [q, k, v, codebook], (...p) => ENTRIES[name](spoil(p)));

const isInternal = (pattern) => (e) => {
  assert.equal(e.constructor, Error, `${e.constructor.name}: ${e.message}`);
  assert.match(e.message, pattern);
  return true;
};

// Those that return a value rather than a tensor's pointer.
const VALUES = new Set(['compare', 'outputRelativeError']);

test('every entry runs on the pointers as laid out (the table above is right)', () => {
  for (const name of Object.keys(ENTRIES)) {
    const result = callSpoiled(name, (p) => p);
    if (VALUES.has(name)) assert.equal(typeof (result.mse ?? result.value), 'number', name);
    else assert.ok(heap.takeTensor(result).data.every(Number.isFinite), name);
  }
});

test('a pointer of 0, or one not on a float, is an internal Error naming it, for every entry', () => {
  const message = (name) => new RegExp(`^${name}: internal error: a tensor's heap pointer \\d+ is null or misaligned$`);
  for (const name of Object.keys(ENTRIES)) {
    for (const bad of [(x) => 0, (x) => x + 2, (x) => x + 7]) {
      // every pointer bad, and only the second one (k for all but the value measures)
      assert.throws(() => callSpoiled(name, (p) => p.map(bad)), isInternal(message(name)), `${name}, ${bad}`);
      if (!VALUES.has(name)) {
        assert.throws(() => callSpoiled(name, (p) => p.map((x, j) => (j === 1 ? bad(x) : x))), isInternal(message(name)), `${name}, k ${bad}`);
      }
    }
  }
});

test('dims before a pointer that no tensor has (a rank or dim not a whole number in range) are an internal Error', () => {
  const F64 = () => new Float64Array(Module.wasmMemory?.buffer ?? Module.HEAPF32.buffer);
  const headers = [
    ['rank NaN', (at) => { F64()[at - 1] = NaN; }],
    ['rank -1', (at) => { F64()[at - 1] = -1; }],
    ['rank 1.5', (at) => { F64()[at - 1] = 1.5; }],
    ['rank 65', (at) => { F64()[at - 1] = 65; }],
    ['rank 1e300', (at) => { F64()[at - 1] = 1e300; }],
    ['a dim of -1', (at) => { F64()[at - 2] = -1; }],
    ['a dim of 2.5', (at) => { F64()[at - 3] = 2.5; }],
    ['a dim of Infinity', (at) => { F64()[at - 2] = Infinity; }],
    ['a dim of 2^53', (at) => { F64()[at - 2] = 2 ** 53; }],
  ];
  for (const name of ['exactAttention', 'favorAttention', 'matmul', 'compare']) {
    for (const [what, write] of headers) {
      const spoil = (p) => { write(p[0] >>> 3); return p; };  // q's, read first by every entry here
      assert.throws(() => callSpoiled(name, spoil),
        isInternal(new RegExp(`^${name}: internal error: the tensor at heap pointer \\d+ has no valid dims before it$`)), `${name}, ${what}`);
    }
  }
});

test('after them the instance works, and they leak nothing', () => {
  const expected = ref.exactAttention(q, k, v);
  const round = () => {
    for (const name of Object.keys(ENTRIES)) assert.throws(() => callSpoiled(name, (p) => p.map(() => 0)), Error);
  };
  round();
  const used = Module.heapUsed();
  for (let i = 0; i < 200; i++) round();
  assert.equal(Module.heapUsed(), used);
  const got = api.exactAttention(q, k, v);
  assert.ok(ref.maxRelError(got.data, expected.data) < 1e-5);
});

test('initProjection reads the projection\'s dims from before its data, and refuses a bad pointer or a rank that is not 2', () => {
  const w = { ...normalTensor([6, 8], 5), name: 'projection' }, cube = { ...normalTensor([2, 3, 8], 6), name: 'projection' };
  const made = new Module.FeatureMap();
  try {
    assert.equal(heap.call('createFeatureMap', [w], (p) => made.initProjection(p, 'positive', 'orthogonal', 1e-6, NaN)), undefined);
    assert.deepEqual([made.features(), made.dim()], [6, 8]);
    assert.deepEqual(Array.from(made.projection()), Array.from(w.data));
    for (const bad of [() => 0, (x) => x + 2]) {
      assert.throws(() => heap.call('createFeatureMap', [w], (p) => made.initProjection(bad(p), 'positive', 'orthogonal', 1e-6, NaN)),
        isInternal(/^createFeatureMap: internal error: a tensor's heap pointer \d+ is null or misaligned$/));
    }
    assert.throws(() => heap.call('createFeatureMap', [cube], (p) => made.initProjection(p, 'positive', 'orthogonal', 1e-6, NaN)),
      isInternal(/^createFeatureMap: internal error: the projection is not a matrix$/));
    // the map made first is still the one in place
    assert.deepEqual([made.features(), made.dim()], [6, 8]);
  } finally {
    made.delete();
  }
});
