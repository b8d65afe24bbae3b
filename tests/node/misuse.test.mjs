// Misuse, table-driven: every function and option rejects bad arguments with a TypeError (wrong
// kind of value) or RangeError (right kind, bad value) whose message starts with the call and
// names the argument, and the same instance computes correctly afterwards (no leaked shadow
// stack, heap or state).
import assert from 'node:assert/strict';
import { before, test } from 'node:test';

import { readFile } from 'node:fs/promises';

import { loadFavor } from 'favor-attention';

import { assertBelow, filledTensor, normalTensor, withValue } from './helpers.mjs';
import { failingRows, syncRun } from './hostile-cases.mjs';
import { OBJECTS, OPERATIONS } from '../../web/operations.js';
import * as ref from './reference.mjs';

let favor, other;
before(async () => {
  [favor, other] = await Promise.all([loadFavor(), loadFavor()]);
});

// Valid fixtures: q [4, 8], k [6, 8], v [6, 3]; square ones for causal; a head-dim 8 map.
const q = normalTensor([4, 8], 1), k = normalTensor([6, 8], 2), v = normalTensor([6, 3], 3);
const qs = normalTensor([6, 8], 4);
const q3 = normalTensor([2, 4, 8], 5), k3 = normalTensor([2, 6, 8], 6), v3 = normalTensor([2, 6, 3], 7);
const expectedExact = ref.exactAttention(q3, k3, v3);


// Correctness in the same instance: exactAttention (float64 reference, 1e-5 as in
// exact.test.mjs) and favorAttention with a fresh map (1e-4 as in favor.test.mjs).
function assertInstanceWorks(label) {
  assertBelow(ref.maxRelError(favor.exactAttention(q3, k3, v3).data, expectedExact.data), 1e-5, `exactAttention after ${label}`);
  const map = favor.createFeatureMap({ dim: 8, features: 16, kernel: 'oprf', seed: 3 });
  const expected = ref.favorAttention('oprf', map.projection, q3, k3, v3);
  assertBelow(ref.maxRelError(favor.favorAttention(q3, k3, v3, { featureMap: map, chunk: 3 }).data, expected.data), 1e-4, `favorAttention after ${label}`);
  map.dispose();
}

// The calls and methods an error may name first; a getter of a disposed object names the object.
const CALLS = [...Object.keys(OPERATIONS), ...Object.values(OBJECTS).flatMap((o) => Object.keys(o.methods))];
function assertStartsWithCall(message, call) {
  const [, name] = /^(\w+): /.exec(message) ?? [];
  if (Object.hasOwn(OBJECTS, name) && /^\w+: this [\w ]+ has been disposed$/.test(message)) return;
  assert.ok(CALLS.includes(name) && call.toString().includes(`${name}(`), `the message starts with the call the case makes: ${message}`);
}

// [label, (favor, map) => call, error class, pattern the message must match]
const cases = [
  // ---- tensors (exactAttention) ----
  ['q is a Float32Array, not a tensor', (f) => f.exactAttention(q.data, k, v), TypeError, /\bq\b/],
  ['q is null', (f) => f.exactAttention(null, k, v), TypeError, /\bq\b/],
  ['q missing', (f) => f.exactAttention(undefined, k, v), TypeError, /\bq\b/],
  // The calls returning the matrix take no v; a null v is refused like any other non-tensor.
  ['v is null', (f) => f.exactAttention(q, k, null), TypeError, /^exactAttention: v: expected a tensor .*, got null$/],
  ['v missing', (f) => f.exactAttention(q, k), TypeError, /^exactAttention: v: expected a tensor .*, got undefined$/],
  ['favorAttention: v is null', (f, map) => f.favorAttention(q, k, null, { featureMap: map }), TypeError, /^favorAttention: v: .*got null$/],
  ['codebookAttention: v is null', (f) => f.codebookAttention(q, k, null, { codebook: filledTensor([3, 8]) }), TypeError, /^codebookAttention: v: .*got null$/],
  ['q.data is a Float64Array', (f) => f.exactAttention({ data: Float64Array.from(q.data), dims: [4, 8] }, k, v), TypeError, /q\.data/],
  ['k.data is a plain Array', (f) => f.exactAttention(q, { data: Array.from(k.data), dims: [6, 8] }, v), TypeError, /k\.data/],
  ['v.data is missing', (f) => f.exactAttention(q, k, { dims: [6, 3] }), TypeError, /v\.data/],
  ['v.dims is not an array', (f) => f.exactAttention(q, k, { data: v.data, dims: '6,3' }), TypeError, /v\.dims/],
  ['q.dims is an Int32Array', (f) => f.exactAttention({ data: q.data, dims: new Int32Array([4, 8]) }, k, v), TypeError, /q\.dims/],
  ['q.dims rank 1', (f) => f.exactAttention({ data: q.data, dims: [32] }, k, v), RangeError, /q\.dims/],
  ['q.dims rank 0', (f) => f.exactAttention({ data: new Float32Array(0), dims: [] }, k, v), RangeError, /q\.dims/],
  ['q.dims with a 0', (f) => f.exactAttention({ data: new Float32Array(0), dims: [0, 8] }, k, v), RangeError, /q\.dims/],
  ['q.dims not integers', (f) => f.exactAttention({ data: q.data, dims: [2.5, 12.8] }, k, v), RangeError, /q\.dims/],
  ['q.dims negative', (f) => f.exactAttention({ data: q.data, dims: [-4, -8] }, k, v), RangeError, /q\.dims/],
  ['k.dims holds a string', (f) => f.exactAttention(q, { data: k.data, dims: ['6', 8] }, v), TypeError, /k\.dims/],
  ['q data length does not match dims', (f) => f.exactAttention({ data: q.data, dims: [5, 8] }, k, v), RangeError, /\bq\b/],
  ['v data length does not match dims', (f) => f.exactAttention(q, k, { data: v.data.subarray(1), dims: [6, 3] }), RangeError, /\bv\b/],
  ['NaN in q', (f) => f.exactAttention(withValue(q, 5, NaN), k, v), RangeError, /\bq\b/],
  ['+Infinity in k', (f) => f.exactAttention(q, withValue(k, 47, Infinity), v), RangeError, /\bk\b/],
  ['-Infinity in v', (f) => f.exactAttention(q, k, withValue(v, 0, -Infinity)), RangeError, /\bv\b/],
  ['d of k differs from q', (f) => f.exactAttention(q, filledTensor([6, 7]), v), RangeError, /\bk\b/],
  ['S of v differs from k', (f) => f.exactAttention(q, k, filledTensor([5, 3])), RangeError, /\bv\b/],
  ['leading dims of k differ from q', (f) => f.exactAttention(q3, filledTensor([3, 6, 8]), v3), RangeError, /\bk\b/],
  ['leading dims of v differ from q', (f) => f.exactAttention(q3, k3, filledTensor([1, 6, 3])), RangeError, /\bv\b/],
  ['rank of k differs from q', (f) => f.exactAttention(q3, k, v3), RangeError, /\bk\b/],
  ['causal with L > S', (f) => f.exactAttention(filledTensor([8, 8]), k, v, { causal: true }), RangeError, /causal/],
  ['causal is a string', (f) => f.exactAttention(qs, k, v, { causal: 'yes' }), TypeError, /causal/],
  ['causal is 1', (f) => f.exactAttention(qs, k, v, { causal: 1 }), TypeError, /causal/],
  ['scale 0', (f) => f.exactAttention(q, k, v, { scale: 0 }), RangeError, /scale/],
  ['scale negative', (f) => f.exactAttention(q, k, v, { scale: -0.5 }), RangeError, /scale/],
  ['scale NaN', (f) => f.exactAttention(q, k, v, { scale: NaN }), RangeError, /scale/],
  ['scale Infinity', (f) => f.exactAttention(q, k, v, { scale: Infinity }), RangeError, /scale/],
  ['scale a string', (f) => f.exactAttention(q, k, v, { scale: '0.5' }), TypeError, /scale/],
  ['scale null', (f) => f.exactAttention(q, k, v, { scale: null }), TypeError, /scale/],
  ['unknown option key', (f) => f.exactAttention(q, k, v, { Causal: true }), TypeError, /Causal/],
  ['exactAttention does not take chunk', (f) => f.exactAttention(q, k, v, { chunk: 8 }), TypeError, /chunk/],
  ['options a number', (f) => f.exactAttention(q, k, v, 5), TypeError, /options/],
  ['options an array', (f) => f.exactAttention(q, k, v, [true]), TypeError, /options/],
  ['options null', (f) => f.exactAttention(q, k, v, null), TypeError, /options/],

  // ---- attentionMatrix ----
  ['attentionMatrix: q not a tensor', (f) => f.attentionMatrix([1, 2], k), TypeError, /\bq\b/],
  ['attentionMatrix: NaN in k', (f) => f.attentionMatrix(q, withValue(k, 3, NaN)), RangeError, /\bk\b/],
  ['attentionMatrix: d mismatch', (f) => f.attentionMatrix(q, filledTensor([6, 4])), RangeError, /\bk\b/],
  ['attentionMatrix: causal with L > S', (f) => f.attentionMatrix(filledTensor([8, 8]), k, { causal: true }), RangeError, /causal/],
  ['attentionMatrix: scale -1', (f) => f.attentionMatrix(q, k, { scale: -1 }), RangeError, /scale/],
  ['attentionMatrix: does not take featureMap', (f, map) => f.attentionMatrix(q, k, { featureMap: map }), TypeError, /featureMap/],
  ['attentionMatrix: options a string', (f) => f.attentionMatrix(q, k, 'causal'), TypeError, /options/],
  // 40000 x 40000 floats = 6.4 GB: more than the 4 GB heap (and the 2 GiB single allocation)
  ['attentionMatrix: L = S = 40000 is too large for memory', (f) => f.attentionMatrix(filledTensor([40000, 1]), filledTensor([40000, 1])), RangeError, /output|memory/],
  ['attentionMatrix: [16, 12000, 12000] is too large for memory', (f) => f.attentionMatrix(filledTensor([16, 12000, 1]), filledTensor([16, 12000, 1])), RangeError, /output|memory/],

  // ---- createFeatureMap ----
  ['createFeatureMap: no options', (f) => f.createFeatureMap(), TypeError, /createFeatureMap|options/],
  ['createFeatureMap: options null', (f) => f.createFeatureMap(null), TypeError, /options/],
  ['createFeatureMap: options a number', (f) => f.createFeatureMap(64), TypeError, /options/],
  ['createFeatureMap: unknown key', (f) => f.createFeatureMap({ dim: 8, features: 8, numFeatures: 16 }), TypeError, /numFeatures/],
  ['createFeatureMap: dim missing', (f) => f.createFeatureMap({ features: 8 }), TypeError, /dim/],
  ['createFeatureMap: features missing', (f) => f.createFeatureMap({ dim: 8 }), TypeError, /features/],
  ['createFeatureMap: features 0', (f) => f.createFeatureMap({ dim: 8, features: 0 }), RangeError, /features/],
  ['createFeatureMap: features negative', (f) => f.createFeatureMap({ dim: 8, features: -4 }), RangeError, /features/],
  ['createFeatureMap: features non-integer', (f) => f.createFeatureMap({ dim: 8, features: 2.5 }), RangeError, /features/],
  ['createFeatureMap: features NaN', (f) => f.createFeatureMap({ dim: 8, features: NaN }), RangeError, /features/],
  ['createFeatureMap: features a string', (f) => f.createFeatureMap({ dim: 8, features: '8' }), TypeError, /features/],
  ['createFeatureMap: features too large (2^25)', (f) => f.createFeatureMap({ dim: 8, features: 2 ** 25 }), RangeError, /features/],
  ['createFeatureMap: W too large for one allocation (2^24 x 64)', (f) => f.createFeatureMap({ dim: 64, features: 2 ** 24 }), RangeError, /features/],
  ['createFeatureMap: dim 0', (f) => f.createFeatureMap({ dim: 0, features: 8 }), RangeError, /dim/],
  ['createFeatureMap: dim Infinity', (f) => f.createFeatureMap({ dim: Infinity, features: 8 }), RangeError, /dim/],
  ['createFeatureMap: unknown kernel', (f) => f.createFeatureMap({ dim: 8, features: 8, kernel: 'softmax' }), RangeError, /kernel/],
  ['createFeatureMap: kernel not a string', (f) => f.createFeatureMap({ dim: 8, features: 8, kernel: 1 }), TypeError, /kernel/],
  ['createFeatureMap: kernel in capitals', (f) => f.createFeatureMap({ dim: 8, features: 8, kernel: 'Positive' }), RangeError, /kernel/],
  ['createFeatureMap: unknown sampling', (f) => f.createFeatureMap({ dim: 8, features: 8, sampling: 'qmc' }), RangeError,
    /^createFeatureMap: sampling: expected one of 'iid', 'orthogonal', 'orthogonal-fixed', 'simplex', 'structured', got 'qmc'$/],
  ['createFeatureMap: sampling not a string', (f) => f.createFeatureMap({ dim: 8, features: 8, sampling: true }), TypeError,
    /^createFeatureMap: sampling: expected one of 'iid', 'orthogonal', 'orthogonal-fixed', 'simplex', 'structured', got /],
  ['createFeatureMap: sampling in C++ spelling', (f) => f.createFeatureMap({ dim: 8, features: 8, sampling: 'orthogonal_fixed' }), RangeError, /^createFeatureMap: sampling: .*'simplex', 'structured', got 'orthogonal_fixed'$/],
  ['createFeatureMap: sampling misspelt', (f) => f.createFeatureMap({ dim: 8, features: 8, sampling: 'Simplex' }), RangeError, /^createFeatureMap: sampling: .*got 'Simplex'$/],
  ['createFeatureMap: seed negative', (f) => f.createFeatureMap({ dim: 8, features: 8, seed: -1 }), RangeError, /seed/],
  ['createFeatureMap: seed non-integer', (f) => f.createFeatureMap({ dim: 8, features: 8, seed: 1.5 }), RangeError, /seed/],
  ['createFeatureMap: seed 2^53 (not exactly representable)', (f) => f.createFeatureMap({ dim: 8, features: 8, seed: 2 ** 53 }), RangeError, /seed/],
  ['createFeatureMap: seed a string', (f) => f.createFeatureMap({ dim: 8, features: 8, seed: '1' }), TypeError, /seed/],
  ['createFeatureMap: seed a BigInt', (f) => f.createFeatureMap({ dim: 8, features: 8, seed: 1n }), TypeError, /seed/],
  ['createFeatureMap: epsilon negative', (f) => f.createFeatureMap({ dim: 8, features: 8, kernel: 'relu', epsilon: -1e-3 }), RangeError, /epsilon/],
  ['createFeatureMap: epsilon NaN', (f) => f.createFeatureMap({ dim: 8, features: 8, kernel: 'relu', epsilon: NaN }), RangeError, /epsilon/],
  ['createFeatureMap: projection rank 3', (f) => f.createFeatureMap({ projection: filledTensor([2, 4, 8]) }), RangeError, /projection/],
  ['createFeatureMap: projection rank 1', (f) => f.createFeatureMap({ projection: { data: new Float32Array(8), dims: [8] } }), RangeError, /projection/],
  ['createFeatureMap: projection data a Float64Array', (f) => f.createFeatureMap({ projection: { data: new Float64Array(16), dims: [2, 8] } }), TypeError, /projection\.data/],
  ['createFeatureMap: projection not a tensor', (f) => f.createFeatureMap({ projection: new Float32Array(16) }), TypeError, /projection/],
  ['createFeatureMap: projection length mismatch', (f) => f.createFeatureMap({ projection: { data: new Float32Array(15), dims: [2, 8] } }), RangeError, /projection/],
  ['createFeatureMap: NaN in projection', (f) => f.createFeatureMap({ projection: withValue(filledTensor([4, 8]), 9, NaN) }), RangeError, /projection/],
  ['createFeatureMap: Infinity in projection', (f) => f.createFeatureMap({ projection: withValue(filledTensor([4, 8]), 31, -Infinity) }), RangeError, /projection/],
  ['createFeatureMap: features disagrees with projection', (f) => f.createFeatureMap({ projection: filledTensor([4, 8]), features: 5 }), RangeError, /features/],
  ['createFeatureMap: dim disagrees with projection', (f) => f.createFeatureMap({ projection: filledTensor([4, 8]), dim: 4 }), RangeError, /dim/],

  // ---- favorAttention ----
  ['favorAttention: no options (featureMap required)', (f) => f.favorAttention(q, k, v), TypeError, /featureMap/],
  ['favorAttention: featureMap missing', (f) => f.favorAttention(q, k, v, { causal: false }), TypeError, /featureMap/],
  ['favorAttention: featureMap a plain object', (f) => f.favorAttention(q, k, v, { featureMap: { dim: 8, features: 8 } }), TypeError, /featureMap/],
  ['favorAttention: featureMap null', (f) => f.favorAttention(q, k, v, { featureMap: null }), TypeError, /featureMap/],
  ['favorAttention: featureMap from another instance', (f) => f.favorAttention(q, k, v, { featureMap: other.createFeatureMap({ dim: 8, features: 8 }) }), TypeError, /featureMap/],
  ['favorAttention: featureMap disposed', (f) => {
    const map = f.createFeatureMap({ dim: 8, features: 8 });
    map.dispose();
    return f.favorAttention(q, k, v, { featureMap: map });
  }, TypeError, /featureMap/],
  ['favorAttention: q d differs from the map dim', (f) => f.favorAttention(filledTensor([4, 6]), filledTensor([6, 6]), v, { featureMap: f.createFeatureMap({ dim: 8, features: 8 }) }), RangeError, /\bq\b/],
  ['favorAttention: chunk 0', (f, map) => f.favorAttention(q, k, v, { featureMap: map, chunk: 0 }), RangeError, /chunk/],
  ['favorAttention: chunk non-integer', (f, map) => f.favorAttention(q, k, v, { featureMap: map, chunk: 1.5 }), RangeError, /chunk/],
  ['favorAttention: chunk above 2^20', (f, map) => f.favorAttention(q, k, v, { featureMap: map, chunk: 2 ** 20 + 1 }), RangeError, /chunk/],
  ['favorAttention: chunk a string', (f, map) => f.favorAttention(q, k, v, { featureMap: map, chunk: '64' }), TypeError, /chunk/],
  ['favorAttention: NaN in v', (f, map) => f.favorAttention(q, k, withValue(v, 17, NaN), { featureMap: map }), RangeError, /\bv\b/],
  ['favorAttention: Infinity in q', (f, map) => f.favorAttention(withValue(q, 0, Infinity), k, v, { featureMap: map }), RangeError, /\bq\b/],
  ['favorAttention: leading dims mismatch', (f, map) => f.favorAttention(q3, filledTensor([2, 6, 8]), filledTensor([3, 6, 3]), { featureMap: map }), RangeError, /\bv\b/],
  ['favorAttention: causal with L > S', (f, map) => f.favorAttention(filledTensor([8, 8]), k, v, { featureMap: map, causal: true }), RangeError, /causal/],
  ['favorAttention: scale NaN', (f, map) => f.favorAttention(q, k, v, { featureMap: map, scale: NaN }), RangeError, /scale/],
  ['favorAttention: unknown option', (f, map) => f.favorAttention(q, k, v, { featureMap: map, features: 8 }), TypeError, /features/],
  ['favorAttention: v.data a Float64Array', (f, map) => f.favorAttention(q, k, { data: new Float64Array(18), dims: [6, 3] }, { featureMap: map }), TypeError, /v\.data/],

  // ---- favorAttentionMatrix ----
  ['favorAttentionMatrix: featureMap missing', (f) => f.favorAttentionMatrix(q, k, {}), TypeError, /featureMap/],
  ['favorAttentionMatrix: featureMap a string', (f) => f.favorAttentionMatrix(q, k, { featureMap: 'positive' }), TypeError, /featureMap/],
  ['favorAttentionMatrix: does not take chunk', (f, map) => f.favorAttentionMatrix(q, k, { featureMap: map, chunk: 8 }), TypeError, /chunk/],
  ['favorAttentionMatrix: -Infinity in k', (f, map) => f.favorAttentionMatrix(q, withValue(k, 2, -Infinity), { featureMap: map }), RangeError, /\bk\b/],
  ['favorAttentionMatrix: d mismatch with the map', (f, map) => f.favorAttentionMatrix(filledTensor([4, 5]), filledTensor([6, 5]), { featureMap: map }), RangeError, /\bq\b/],
  ['favorAttentionMatrix: causal with L > S', (f, map) => f.favorAttentionMatrix(filledTensor([8, 8]), k, { featureMap: map, causal: true }), RangeError, /causal/],
  ['favorAttentionMatrix: scale 0', (f, map) => f.favorAttentionMatrix(q, k, { featureMap: map, scale: 0 }), RangeError, /scale/],
  ['favorAttentionMatrix: too large for memory', (f, map) => f.favorAttentionMatrix(filledTensor([40000, 8]), filledTensor([40000, 8]), { featureMap: map }), RangeError, /output|memory/],

  // ---- FeatureMap.redraw ----
  ['redraw: seed negative', (f, map) => map.redraw(-1), RangeError, /seed/],
  ['redraw: seed non-integer', (f, map) => map.redraw(0.5), RangeError, /seed/],
  ['redraw: seed NaN', (f, map) => map.redraw(NaN), RangeError, /seed/],
  ['redraw: seed missing', (f, map) => map.redraw(), TypeError, /seed/],
  ['redraw: seed a string', (f, map) => map.redraw('7'), TypeError, /seed/],

  // ---- compare ----
  ['compare: dims differ', (f) => f.compare(filledTensor([4, 6]), filledTensor([6, 4])), RangeError, /approx/],
  ['compare: leading dims differ', (f) => f.compare(filledTensor([2, 4, 6]), filledTensor([1, 8, 6])), RangeError, /approx/],
  ['compare: exact not a tensor', (f) => f.compare(new Float32Array(4), filledTensor([2, 2])), TypeError, /^compare: exact: expected a tensor/],
  ['compare: approx data a Float64Array', (f) => f.compare(filledTensor([2, 2]), { data: new Float64Array(4), dims: [2, 2] }), TypeError, /^compare: approx\.data: /],
  ['compare: exact rank 1', (f) => f.compare({ data: new Float32Array(4), dims: [4] }, filledTensor([2, 2])), RangeError, /^compare: exact\.dims: /],
  ['compare: NaN in exact', (f) => f.compare(withValue(filledTensor([3, 3]), 4, NaN), filledTensor([3, 3])), RangeError, /^compare: exact: /],
  ['compare: approx of other dims', (f) => f.compare(filledTensor([2, 2]), filledTensor([2, 3])), RangeError, /^compare: approx: expected dims \[2, 2\] \(as exact\)/],
  ['compare: approx missing', (f) => f.compare(filledTensor([3, 3])), TypeError, /^compare: approx: /],

  // ---- outputRelativeError ----
  ['outputRelativeError: dims differ', (f) => f.outputRelativeError(filledTensor([4, 3]), filledTensor([3, 4])), RangeError, /approx/],
  ['outputRelativeError: exact.data a plain Array', (f) => f.outputRelativeError({ data: [1, 2, 3, 4], dims: [2, 2] }, filledTensor([2, 2])), TypeError, /exact\.data/],
  ['outputRelativeError: approx null', (f) => f.outputRelativeError(filledTensor([2, 2]), null), TypeError, /approx/],
  ['outputRelativeError: Infinity in exact', (f) => f.outputRelativeError(withValue(filledTensor([2, 2]), 1, Infinity), filledTensor([2, 2])), RangeError, /exact/],

  // ---- codebookAttention / codebookAttentionMatrix (codebook [c, d] or per head [..., c, d]) ----
  ['codebookAttention: codebook missing', (f) => f.codebookAttention(q, k, v, {}), TypeError, /codebook/],
  ['codebookAttention: codebook a Float32Array', (f) => f.codebookAttention(q, k, v, { codebook: new Float32Array(8) }), TypeError, /codebook/],
  ['codebookAttention: codebook.data a Float64Array', (f) => f.codebookAttention(q, k, v, { codebook: { data: new Float64Array(16), dims: [2, 8] } }), TypeError, /codebook\.data/],
  ['codebookAttention: codebook d differs from q', (f) => f.codebookAttention(q, k, v, { codebook: filledTensor([3, 7]) }), RangeError, /codebook/],
  ['codebookAttention: codebook dims with a 0', (f) => f.codebookAttention(q, k, v, { codebook: { data: new Float32Array(0), dims: [0, 8] } }), RangeError, /codebook\.dims/],
  ['codebookAttention: per-head codebook batch differs from q (mismatched batches)', (f) => f.codebookAttention(q3, k3, v3, { codebook: filledTensor([3, 4, 8]) }), RangeError, /codebook/],
  ['codebookAttention: k batch differs from q (mismatched batches)', (f) => f.codebookAttention(q3, filledTensor([3, 6, 8]), v3, { codebook: filledTensor([4, 8]) }), RangeError, /\bk\b/],
  ['codebookAttention: NaN in codebook', (f) => f.codebookAttention(q, k, v, { codebook: withValue(filledTensor([3, 8]), 4, NaN) }), RangeError, /codebook/],
  ['codebookAttention: -Infinity in v', (f) => f.codebookAttention(q, k, withValue(v, 2, -Infinity), { codebook: filledTensor([3, 8]) }), RangeError, /\bv\b/],
  ['codebookAttention: unknown assignment', (f) => f.codebookAttention(q, k, v, { codebook: filledTensor([3, 8]), assignment: 'nearest' }), RangeError, /assignment/],
  ['codebookAttention: assignment not a string', (f) => f.codebookAttention(q, k, v, { codebook: filledTensor([3, 8]), assignment: 0 }), TypeError, /assignment/],
  ['codebookAttention: temperature 0', (f) => f.codebookAttention(q, k, v, { codebook: filledTensor([3, 8]), assignment: 'soft', temperature: 0 }), RangeError, /temperature/],
  ['codebookAttention: temperature negative', (f) => f.codebookAttention(q, k, v, { codebook: filledTensor([3, 8]), assignment: 'soft', temperature: -1 }), RangeError, /temperature/],
  ['codebookAttention: temperature Infinity', (f) => f.codebookAttention(q, k, v, { codebook: filledTensor([3, 8]), assignment: 'soft', temperature: Infinity }), RangeError, /temperature/],
  ['codebookAttention: temperature a string', (f) => f.codebookAttention(q, k, v, { codebook: filledTensor([3, 8]), temperature: '1' }), TypeError, /temperature/],
  ['codebookAttention: chunk 0', (f) => f.codebookAttention(q, k, v, { codebook: filledTensor([3, 8]), chunk: 0 }), RangeError, /chunk/],
  ['codebookAttention: chunk -Infinity', (f) => f.codebookAttention(q, k, v, { codebook: filledTensor([3, 8]), chunk: -Infinity }), RangeError, /chunk/],
  ['codebookAttention: causal with L > S', (f) => f.codebookAttention(filledTensor([8, 8]), k, v, { codebook: filledTensor([3, 8]), causal: true }), RangeError, /causal/],
  ['codebookAttention: scale -Infinity', (f) => f.codebookAttention(q, k, v, { codebook: filledTensor([3, 8]), scale: -Infinity }), RangeError, /scale/],
  ['codebookAttention: unknown option', (f) => f.codebookAttention(q, k, v, { codebook: filledTensor([3, 8]), clusters: 3 }), TypeError, /clusters/],
  ['codebookAttentionMatrix: codebook null', (f) => f.codebookAttentionMatrix(q, k, { codebook: null }), TypeError, /codebook/],
  ['codebookAttentionMatrix: does not take chunk', (f) => f.codebookAttentionMatrix(q, k, { codebook: filledTensor([3, 8]), chunk: 4 }), TypeError, /chunk/],
  ['codebookAttentionMatrix: +Infinity in q', (f) => f.codebookAttentionMatrix(withValue(q, 31, Infinity), k, { codebook: filledTensor([3, 8]) }), RangeError, /\bq\b/],
  ['codebookAttentionMatrix: d mismatch between q and k', (f) => f.codebookAttentionMatrix(q, filledTensor([6, 4]), { codebook: filledTensor([3, 8]) }), RangeError, /\bk\b/],
  ['codebookAttentionMatrix: too large for memory', (f) => f.codebookAttentionMatrix(filledTensor([40000, 1]), filledTensor([40000, 1]), { codebook: filledTensor([2, 1]) }), RangeError, /output|memory/],

  // ---- kmeans ----
  ['kmeans: k not a tensor', (f) => f.kmeans([1, 2, 3], { clusters: 2 }), TypeError, /\bk\b/],
  ['kmeans: options missing', (f) => f.kmeans(k), TypeError, /clusters/],
  ['kmeans: clusters 0', (f) => f.kmeans(k, { clusters: 0 }), RangeError, /clusters/],
  ['kmeans: clusters above the number of keys', (f) => f.kmeans(k, { clusters: 7 }), RangeError, /clusters/],
  ['kmeans: clusters non-integer', (f) => f.kmeans(k, { clusters: 2.5 }), RangeError, /clusters/],
  ['kmeans: clusters NaN', (f) => f.kmeans(k, { clusters: NaN }), RangeError, /clusters/],
  ['kmeans: clusters a string', (f) => f.kmeans(k, { clusters: '2' }), TypeError, /clusters/],
  ['kmeans: iterations negative', (f) => f.kmeans(k, { clusters: 2, iterations: -1 }), RangeError, /iterations/],
  ['kmeans: iterations Infinity', (f) => f.kmeans(k, { clusters: 2, iterations: Infinity }), RangeError, /iterations/],
  ['kmeans: seed non-integer', (f) => f.kmeans(k, { clusters: 2, seed: 0.5 }), RangeError, /seed/],
  ['kmeans: NaN in k', (f) => f.kmeans(withValue(k, 10, NaN), { clusters: 2 }), RangeError, /\bk\b/],
  ['kmeans: unknown option', (f) => f.kmeans(k, { clusters: 2, init: 'random' }), TypeError, /init/],

  // ---- randomCodebook ----
  ['randomCodebook: no options', (f) => f.randomCodebook(), TypeError, /clusters|dim/],
  ['randomCodebook: clusters 0', (f) => f.randomCodebook({ clusters: 0, dim: 4 }), RangeError, /clusters/],
  ['randomCodebook: dim non-integer', (f) => f.randomCodebook({ clusters: 2, dim: 2.5 }), RangeError, /dim/],
  ['randomCodebook: dim negative', (f) => f.randomCodebook({ clusters: 2, dim: -4 }), RangeError, /dim/],
  ['randomCodebook: sigma 0', (f) => f.randomCodebook({ clusters: 2, dim: 4, sigma: 0 }), RangeError, /sigma/],
  ['randomCodebook: sigma NaN', (f) => f.randomCodebook({ clusters: 2, dim: 4, sigma: NaN }), RangeError, /sigma/],
  ['randomCodebook: sigma Infinity', (f) => f.randomCodebook({ clusters: 2, dim: 4, sigma: Infinity }), RangeError, /sigma/],
  ['randomCodebook: seed 2^53', (f) => f.randomCodebook({ clusters: 2, dim: 4, seed: 2 ** 53 }), RangeError, /seed/],
  ['randomCodebook: too large for memory (2^24 x 2^20)', (f) => f.randomCodebook({ clusters: 2 ** 24, dim: 2 ** 20 }), RangeError, /output|memory/],

  // ---- codebookFromFeatureMap ----
  ['codebookFromFeatureMap: not a FeatureMap', (f) => f.codebookFromFeatureMap({ projection: filledTensor([2, 8]) }), TypeError, /featureMap/],
  ['codebookFromFeatureMap: a disposed FeatureMap', (f) => {
    const map = f.createFeatureMap({ dim: 8, features: 4 });
    map.dispose();
    return f.codebookFromFeatureMap(map);
  }, TypeError, /featureMap/],
  ['codebookFromFeatureMap: scale 0', (f, map) => f.codebookFromFeatureMap(map, { scale: 0 }), RangeError, /scale/],
  ['codebookFromFeatureMap: scale NaN', (f, map) => f.codebookFromFeatureMap(map, { scale: NaN }), RangeError, /scale/],

  // ---- a disposed FeatureMap's own methods and getters ----
  ['disposed FeatureMap: redraw', (f) => {
    const map = f.createFeatureMap({ dim: 8, features: 4 });
    map.dispose();
    return map.redraw(1);
  }, TypeError, /featureMap/],
  ['disposed FeatureMap: projection', (f) => {
    const map = f.createFeatureMap({ dim: 8, features: 4 });
    map[Symbol.dispose]();
    return map.projection;
  }, TypeError, /featureMap/],
  ['disposed FeatureMap: favorAttentionMatrix after a second dispose()', (f) => {
    const map = f.createFeatureMap({ dim: 8, features: 4 });
    map.dispose();
    map.dispose();  // a no-op
    return f.favorAttentionMatrix(q, k, { featureMap: map });
  }, TypeError, /featureMap/],
  // ---- keyMask (every attention call) ----
  ['keyMask a Float32Array tensor', (f) => f.exactAttention(q, k, v, { keyMask: { data: new Float32Array(6), dims: [6] } }), TypeError, /keyMask\.data/],
  ['keyMask a plain Uint8Array', (f) => f.exactAttention(q, k, v, { keyMask: new Uint8Array(6) }), TypeError, /keyMask/],
  ['keyMask null', (f) => f.attentionMatrix(q, k, { keyMask: null }), TypeError, /keyMask/],
  ['keyMask dims not an array', (f) => f.exactAttention(q, k, v, { keyMask: { data: new Uint8Array(6), dims: 6 } }), TypeError, /keyMask\.dims/],
  ['keyMask dims []', (f) => f.exactAttention(q, k, v, { keyMask: { data: new Uint8Array(1), dims: [] } }), RangeError, /keyMask\.dims/],
  ['keyMask length does not match its dims', (f) => f.exactAttention(q, k, v, { keyMask: { data: new Uint8Array(5), dims: [6] } }), RangeError, /keyMask/],
  ['keyMask last dim is not S', (f, map) => f.favorAttention(q, k, v, { featureMap: map, keyMask: { data: new Uint8Array(5).fill(1), dims: [5] } }), RangeError, /keyMask: expected dims \[\.\.\., 6\]/],
  ['keyMask does not broadcast against k', (f) => f.exactAttention(q3, k3, v3, { keyMask: { data: new Uint8Array(18).fill(1), dims: [3, 6] } }), RangeError, /keyMask.*broadcast/],
  ['keyMask has more leading dims than k', (f) => f.attentionMatrix(q, k, { keyMask: { data: new Uint8Array(12).fill(1), dims: [2, 6] } }), RangeError, /keyMask/],
  ['keyMask holds a 2', (f) => f.codebookAttention(q, k, v, { codebook: filledTensor([3, 8]), keyMask: { data: new Uint8Array([1, 1, 2, 1, 1, 1]), dims: [6] } }), RangeError, /keyMask: expected 0 .* or 1/],
  ['favorAttentionMatrix: keyMask of the wrong kind', (f, map) => f.favorAttentionMatrix(q, k, { featureMap: map, keyMask: [1, 1, 1, 1, 1, 1] }), TypeError, /keyMask/],
  ['codebookAttentionMatrix: keyMask dims wrong', (f) => f.codebookAttentionMatrix(q, k, { codebook: filledTensor([3, 8]), keyMask: { data: new Uint8Array(7), dims: [7] } }), RangeError, /keyMask/],

  // ---- grouped-query heads ----
  ['heads of k do not divide those of q', (f) => f.exactAttention(filledTensor([2, 4, 4, 8]), filledTensor([2, 3, 6, 8]), filledTensor([2, 3, 6, 3])), RangeError, /\bk: leading.*multiple/],
  ['favorAttention: k has more heads than q', (f, map) => f.favorAttention(filledTensor([2, 4, 8]), filledTensor([4, 6, 8]), filledTensor([4, 6, 3]), { featureMap: map }), RangeError, /\bk: leading/],
  ['codebook per head matches neither q nor k', (f) => f.codebookAttention(filledTensor([4, 4, 8]), filledTensor([2, 6, 8]), filledTensor([2, 6, 3]), { codebook: filledTensor([3, 3, 8]) }), RangeError, /codebook: leading/],

  // ---- matmul ----
  ['matmul: a not a tensor', (f) => f.matmul(q.data, filledTensor([8, 3])), TypeError, /\ba\b/],
  ['matmul: b rank 3', (f) => f.matmul(q, filledTensor([1, 8, 3])), RangeError, /\bb\b/],
  ['matmul: inner dims differ', (f) => f.matmul(q, filledTensor([7, 3])), RangeError, /\bb: expected \[8, m\]/],
  ['matmul: transposeB inner dims differ', (f) => f.matmul(q, filledTensor([3, 7]), { transposeB: true }), RangeError, /\bb: expected \[m, 8\]/],
  ['matmul: transposeB a string', (f) => f.matmul(q, filledTensor([8, 3]), { transposeB: 'yes' }), TypeError, /transposeB/],
  ['matmul: bias of the wrong length', (f) => f.matmul(q, filledTensor([8, 3]), { bias: { data: new Float32Array(4), dims: [4] } }), RangeError, /bias/],
  ['matmul: bias a Float64Array', (f) => f.matmul(q, filledTensor([8, 3]), { bias: { data: new Float64Array(3), dims: [3] } }), TypeError, /bias/],
  ['matmul: NaN in b', (f) => f.matmul(q, withValue(filledTensor([8, 3]), 4, NaN)), RangeError, /\bb\b/],
  ['matmul: unknown option', (f) => f.matmul(q, filledTensor([8, 3]), { transpose: true }), TypeError, /transpose/],
  // ---- packMatrix and matmul with a packed b ----
  ['packMatrix: b not a tensor', (f) => f.packMatrix(q.data), TypeError, /^packMatrix: b: expected a tensor/],
  ['packMatrix: b rank 3', (f) => f.packMatrix(filledTensor([1, 8, 3])), RangeError, /^packMatrix: b: expected dims \[k, m\]/],
  ['packMatrix: NaN in b', (f) => f.packMatrix(withValue(filledTensor([8, 3]), 2, NaN)), RangeError, /^packMatrix: b\b/],
  ['packMatrix: transposeB a number', (f) => f.packMatrix(filledTensor([8, 3]), { transposeB: 1 }), TypeError, /^packMatrix: transposeB/],
  ['matmul: transposeB with a packed b', (f) => f.matmul(q, f.packMatrix(filledTensor([8, 3])), { transposeB: false }), TypeError, /^matmul: transposeB: a packed b/],
  ['matmul: packed b of the wrong k', (f) => f.matmul(q, f.packMatrix(filledTensor([7, 3]))), RangeError, /^matmul: b: expected \[8, m\]/],
  ['matmul: a disposed packed b', (f) => {
    const packed = f.packMatrix(filledTensor([8, 3]));
    packed.dispose();
    return f.matmul(q, packed);
  }, TypeError, /^matmul: b: this packed matrix has been disposed$/],
  ['matmul: a packed b of another instance', () => favor.matmul(q, other.packMatrix(filledTensor([8, 3]))), TypeError, /another favor instance/],
  // ---- options.out ----
  ['out a Float64Array', (f) => f.exactAttention(q, k, v, { out: new Float64Array(12) }), TypeError, /^exactAttention: out: expected a Float32Array/],
  ['out a tensor, not its array', (f, map) => f.favorAttention(q, k, v, { featureMap: map, out: filledTensor([4, 3]) }), TypeError, /^favorAttention: out: expected a Float32Array/],
  ['out a plain Array', (f) => f.matmul(q, filledTensor([8, 3]), { out: [0, 0, 0] }), TypeError, /^matmul: out: expected a Float32Array/],
  ['out one float short', (f) => f.attentionMatrix(q, k, { out: new Float32Array(23) }), RangeError, /^attentionMatrix: out: expected a Float32Array of 24 floats \(the output's dims \[4, 6\]\), got one of 23$/],
  ['out detached', (f) => {
    const out = new Float32Array(12);
    structuredClone(out.buffer, { transfer: [out.buffer] });
    return f.exactAttention(q, k, v, { out });
  }, RangeError, /^exactAttention: out: .* got one of 0 \(empty or detached\)$/],
  ['out of the wrong length for a codebook matrix', (f) => f.codebookAttentionMatrix(q, k, { codebook: filledTensor([3, 8]), out: new Float32Array(25) }), RangeError, /out: expected a Float32Array of 24 floats/],
  ['out of the wrong length for an append', (f) => f.createCausalState({ method: 'exact' }).append(filledTensor([1, 8]), filledTensor([1, 8]), filledTensor([1, 3]), { out: new Float32Array(4) }), RangeError, /^append: out: expected a Float32Array of 3 floats/],

  // ---- createFeatureMap rho ----
  ['createFeatureMap: rho on a positive map', (f) => f.createFeatureMap({ dim: 8, features: 4, rho: 1 }), RangeError, /rho/],
  ['createFeatureMap: rho negative', (f) => f.createFeatureMap({ dim: 8, features: 4, kernel: 'oprf', rho: -1 }), RangeError, /rho/],
  ['createFeatureMap: rho a string', (f) => f.createFeatureMap({ dim: 8, features: 4, kernel: 'oprf', rho: '1' }), TypeError, /rho/],

  // ---- createFeatureMap fit (FAVOR#, OPRF) ----
  ['createFeatureMap: fit on a positive map', (f) => f.createFeatureMap({ dim: 8, features: 4, fit: { q, k } }), RangeError, /^createFeatureMap: fit: only the 'oprf', 'sderf', 'aderf' kernels/],
  ['createFeatureMap: fit and rho', (f) => f.createFeatureMap({ dim: 8, features: 4, kernel: 'oprf', rho: 1, fit: { q, k } }), RangeError, /fit: give either rho or fit/],
  ['createFeatureMap: fit not an object', (f) => f.createFeatureMap({ dim: 8, features: 4, kernel: 'sderf', fit: 3 }), TypeError, /^createFeatureMap: fit: expected an options object/],
  ['createFeatureMap: fit with an unknown key', (f) => f.createFeatureMap({ dim: 8, features: 4, kernel: 'sderf', fit: { q, k, keys: k } }), TypeError, /fit\.keys: unknown option/],
  ['createFeatureMap: fit.q missing', (f) => f.createFeatureMap({ dim: 8, features: 4, kernel: 'aderf', fit: { k } }), TypeError, /fit\.q: expected a tensor/],
  ['createFeatureMap: fit.k of another d', (f) => f.createFeatureMap({ dim: 8, features: 4, kernel: 'aderf', fit: { q, k: filledTensor([6, 5]) } }), RangeError, /^createFeatureMap: fit\.k: expected dims \[\.\.\., rows, 8\]/],
  ['createFeatureMap: fit.q with NaN', (f) => f.createFeatureMap({ dim: 8, features: 4, kernel: 'sderf', fit: { q: withValue(q, 3, NaN), k } }), RangeError, /^createFeatureMap: fit\.q: contains NaN/],
  ['createFeatureMap: fit.scale 0', (f) => f.createFeatureMap({ dim: 8, features: 4, kernel: 'sderf', fit: { q, k, scale: 0 } }), RangeError, /fit\.scale/],
  ['createFeatureMap: sderf with d over 256', (f) => f.createFeatureMap({ dim: 300, features: 4, kernel: 'sderf' }), RangeError, /^createFeatureMap: dim: the 'sderf' kernel takes d <= 256/],
  ['createCausalState: sderf map not fitted', (f) => f.createCausalState({ method: 'favor', featureMap: f.createFeatureMap({ dim: 8, features: 4, kernel: 'sderf' }) }), RangeError, /featureMap: a 'sderf' map that is not fitted/],

  // ---- createCausalState and append ----
  ['createCausalState: no options', (f) => f.createCausalState(), TypeError, /createCausalState/],
  ['createCausalState: method missing', (f) => f.createCausalState({}), TypeError, /method/],
  ['createCausalState: unknown method', (f) => f.createCausalState({ method: 'linear' }), RangeError, /method/],
  ['createCausalState: favor without featureMap', (f) => f.createCausalState({ method: 'favor' }), TypeError, /featureMap/],
  ['createCausalState: favor with a disposed map', (f) => {
    const m = f.createFeatureMap({ dim: 8, features: 4 });
    m.dispose();
    return f.createCausalState({ method: 'favor', featureMap: m });
  }, TypeError, /featureMap/],
  ['createCausalState: oprf map without rho', (f) => f.createCausalState({ method: 'favor', featureMap: f.createFeatureMap({ dim: 8, features: 4, kernel: 'oprf' }) }), RangeError, /featureMap.*rho/],
  ['createCausalState: codebook missing', (f) => f.createCausalState({ method: 'codebook' }), TypeError, /codebook/],
  ['createCausalState: codebook with NaN', (f) => f.createCausalState({ method: 'codebook', codebook: withValue(filledTensor([3, 8]), 2, NaN) }), RangeError, /codebook/],
  ['createCausalState: exact takes no featureMap', (f, map) => f.createCausalState({ method: 'exact', featureMap: map }), TypeError, /featureMap/],
  ['createCausalState: scale 0', (f) => f.createCausalState({ method: 'exact', scale: 0 }), RangeError, /scale/],
  ['createCausalState: chunk 0', (f, map) => f.createCausalState({ method: 'favor', featureMap: map, chunk: 0 }), RangeError, /chunk/],
  ['createCausalState: window 0', (f) => f.createCausalState({ method: 'exact', window: 0 }), RangeError, /^createCausalState: window: expected an integer in \[1, 9007199254740991\], got 0$/],
  ['createCausalState: window -1', (f) => f.createCausalState({ method: 'exact', window: -1 }), RangeError, /^createCausalState: window: expected an integer in \[1, /],
  ['createCausalState: window 1.5', (f) => f.createCausalState({ method: 'exact', window: 1.5 }), RangeError, /^createCausalState: window: expected an integer in \[1, .*got 1\.5$/],
  ['createCausalState: window a string', (f) => f.createCausalState({ method: 'exact', window: '8' }), TypeError, /^createCausalState: window: expected a number, got the string '8'$/],
  ['createCausalState: window NaN', (f) => f.createCausalState({ method: 'exact', window: NaN }), RangeError, /^createCausalState: window: expected a finite number, got NaN$/],
  ['createCausalState: window 2^53', (f) => f.createCausalState({ method: 'exact', window: 2 ** 53 }), RangeError, /^createCausalState: window: expected an integer in \[1, 9007199254740991\]/],
  ['createCausalState: favor window not a multiple of 4', (f, map) => f.createCausalState({ method: 'favor', featureMap: map, window: 6 }), RangeError, /^createCausalState: window: FAVOR\+'s window is in blocks of window \/ 4 positions: expected a multiple of 4, got 6$/],
  ['createCausalState: favor window 0', (f, map) => f.createCausalState({ method: 'favor', featureMap: map, window: 0 }), RangeError, /^createCausalState: window: expected an integer in \[1, 9007199254740991\], got 0$/],
  ['createCausalState: favor window a string', (f, map) => f.createCausalState({ method: 'favor', featureMap: map, window: '8' }), TypeError, /^createCausalState: window: expected a number, got the string '8'$/],
  ['createCausalState: favor takes no assignment', (f, map) => f.createCausalState({ method: 'favor', featureMap: map, window: 8, assignment: 'soft' }), TypeError, /^createCausalState: options\.assignment: not an option of method 'favor' \(its options: method, scale, featureMap, chunk, window\)$/],
  ['createCausalState: codebook takes no window', (f) => f.createCausalState({ method: 'codebook', codebook: filledTensor([3, 8]), window: 8 }), TypeError, /^createCausalState: options\.window: not an option of method 'codebook'/],
  ['append: leading dims differ from the first append', (f) => {
    const st = f.createCausalState({ method: 'exact' });
    st.append(filledTensor([2, 1, 8]), filledTensor([2, 1, 8]), filledTensor([2, 1, 3]));
    try { return st.append(filledTensor([3, 1, 8]), filledTensor([3, 1, 8]), filledTensor([3, 1, 3])); } finally { st.dispose(); }
  }, RangeError, /\bq: expected dims \[2, 1, 8\].*first append/],
  ['append: dv differs from the first append', (f, map) => {
    const st = f.createCausalState({ method: 'favor', featureMap: map });
    st.append(filledTensor([1, 8]), filledTensor([1, 8]), filledTensor([1, 3]));
    try { return st.append(filledTensor([1, 8]), filledTensor([1, 8]), filledTensor([1, 4])); } finally { st.dispose(); }
  }, RangeError, /\bv: expected dims/],
  ['append: fewer new keys than queries', (f) => f.createCausalState({ method: 'exact' }).append(filledTensor([3, 8]), filledTensor([2, 8]), filledTensor([2, 3])), RangeError, /causal|\bk\b/],
  ['append: d differs from the map', (f, map) => f.createCausalState({ method: 'favor', featureMap: map }).append(filledTensor([1, 7]), filledTensor([1, 7]), filledTensor([1, 3])), RangeError, /\bq: expected last dim d = 8/],
  ['append: NaN in v', (f) => f.createCausalState({ method: 'exact' }).append(filledTensor([1, 8]), filledTensor([1, 8]), withValue(filledTensor([1, 3]), 1, NaN)), RangeError, /\bv\b/],
  ['append: keyMask that does not broadcast', (f) => f.createCausalState({ method: 'exact' }).append(filledTensor([2, 2, 8]), filledTensor([2, 2, 8]), filledTensor([2, 2, 3]), { keyMask: { data: new Uint8Array(6), dims: [3, 2] } }), RangeError, /keyMask/],
  ['append: unknown option', (f) => f.createCausalState({ method: 'exact' }).append(filledTensor([1, 8]), filledTensor([1, 8]), filledTensor([1, 3]), { causal: true }), TypeError, /causal/],
  ['append: codebook per head does not match k', (f) => f.createCausalState({ method: 'codebook', codebook: filledTensor([3, 4, 8]) }).append(filledTensor([2, 1, 8]), filledTensor([2, 1, 8]), filledTensor([2, 1, 3])), RangeError, /codebook/],
  ['append on a disposed state', (f) => {
    const st = f.createCausalState({ method: 'exact' });
    st.dispose();
    return st.append(filledTensor([1, 8]), filledTensor([1, 8]), filledTensor([1, 3]));
  }, TypeError, /state.*disposed/],
  ['length of a disposed state', (f) => {
    const st = f.createCausalState({ method: 'exact' });
    st[Symbol.dispose]();
    return st.length;
  }, TypeError, /state.*disposed/],

  // ---- a later argument's getter detaches an earlier input (the worker copied it before: not shared) ----
  ['a getter detaches q.data after q was checked', (f) => {
    const data = q.data.slice();
    return f.exactAttention({ data, dims: [4, 8] }, { get data() { structuredClone(data.buffer, { transfer: [data.buffer] }); return k.data; }, dims: [6, 8] }, v);
  }, RangeError, /^exactAttention: q: data has 0 values but dims \[4,8\] need 32$/],
  ['a getter resizes a length-tracking q.data after q was checked', (f) => {
    const buffer = new ArrayBuffer(128, { maxByteLength: 1 << 20 });
    const data = new Float32Array(buffer);
    return f.exactAttention({ data, dims: [4, 8] }, k, v, { get causal() { buffer.resize(1 << 20); return false; } });
  }, RangeError, /^exactAttention: q: data has 262144 values but dims \[4,8\] need 32$/],

  // ---- hostile and oversized arguments (hostile-cases.mjs, shared with the worker's table) ----
];
const ownCases = cases.length;
// (their patterns name the call: an error a getter of the caller's throws passes unchanged)
cases.push(...failingRows(syncRun));

test(`the misuse table has at least 40 cases across every function (${cases.length})`, () => {
  assert.ok(cases.length >= 40);
  const text = cases.map(([, fn]) => fn.toString()).join('\n');
  for (const name of ['exactAttention', 'attentionMatrix', 'createFeatureMap', 'favorAttention', 'favorAttentionMatrix', 'redraw', 'compare', 'outputRelativeError',
    'codebookAttention', 'codebookAttentionMatrix', 'kmeans', 'randomCodebook', 'codebookFromFeatureMap',
    'createCausalState', 'append', 'matmul', 'packMatrix']) {
    assert.ok(text.includes(`${name}(`), `no misuse case calls ${name}`);
  }
});

for (const [index, [label, call, type, pattern]] of cases.entries()) {
  test(`misuse: ${label} -> ${type.name} ${pattern}`, () => {
    const map = favor.createFeatureMap({ dim: 8, features: 8, seed: 1 });
    let thrown;
    try {
      call(favor, map);
    } catch (e) {
      thrown = e;
    }
    assert.ok(thrown !== undefined, 'expected an error, the call returned normally');
    assert.ok(thrown instanceof type, `expected ${type.name}, got ${thrown?.constructor?.name}: ${thrown?.message}`);
    assert.match(thrown.message, pattern);
    if (index < ownCases) assertStartsWithCall(thrown.message, call);
    // the map used by the case is still usable unless the case disposed its own
    assert.equal(map.disposed, false);
    map.dispose();
    assertInstanceWorks(label);
  });
}

test('thousands of errors raised inside wasm leak neither the shadow stack nor the heap', () => {
  // Errors detected by the core (NaN values) unwind through the binding; unfreed input buffers
  // would leak 24 MiB per call here (q, k and v are 2 Mi floats each, plus an 8 MiB output),
  // so 200 calls would need > 4.8 GB and exceed the 4 GB heap; a leaked stack frame would
  // overflow the 5 MiB shadow stack within the 3000 small calls.
  const n = 1 << 21;
  const bigQ = { data: new Float32Array(n).fill(0.5), dims: [4096, 512, 1] };
  const bigK = { data: new Float32Array(n).fill(0.25), dims: [4096, 512, 1] };
  const bigV = { data: new Float32Array(n), dims: [4096, 512, 1] };
  bigQ.data[0] = NaN; // found at once: the cost is the copies, which is what could leak
  for (let i = 0; i < 200; i++) {
    assert.throws(() => favor.exactAttention(bigQ, bigK, bigV), (e) => e instanceof RangeError && /\bq\b/.test(e.message), `call ${i}`);
  }
  const badQ = withValue(q3, 0, NaN);
  const map = favor.createFeatureMap({ dim: 8, features: 8 });
  for (let i = 0; i < 1000; i++) {
    assert.throws(() => favor.exactAttention(badQ, k3, v3), RangeError);
    assert.throws(() => favor.favorAttention(badQ, k3, v3, { featureMap: map }), RangeError);
    assert.throws(() => favor.compare(withValue(filledTensor([2, 2]), 0, NaN), filledTensor([2, 2])), RangeError);
  }
  assertInstanceWorks('4000 errors');
});

// ---- loading: calls before load finishes, concurrent loads, bad loads next to good ones ----
// Each case returns { thrown, instances }: the error it provoked and every instance it loaded;
// the error must be a TypeError/RangeError naming the argument, and afterwards every instance
// (and the shared one) computes correctly.
const wasmBytes = await readFile(new URL('../../dist/favor-scalar.wasm', import.meta.url));

function catchSync(fn) {
  try {
    fn();
  } catch (e) {
    return e;
  }
  return undefined;
}

async function settle(promises) {
  const results = await Promise.allSettled(promises);
  return {
    thrown: results.find((r) => r.status === 'rejected')?.reason,
    instances: results.filter((r) => r.status === 'fulfilled').map((r) => r.value),
  };
}

const loadCases = [
  ['a method called on the pending promise (before load finishes)', async () => {
    const pending = loadFavor();
    const thrown = catchSync(() => pending.exactAttention(q, k, v));
    return { thrown, instances: [await pending] };
  }, TypeError, /exactAttention/],
  ['createFeatureMap called on the pending promise', async () => {
    const pending = loadFavor({ simd: false });
    const thrown = catchSync(() => pending.createFeatureMap({ dim: 8, features: 8 }));
    return { thrown, instances: [await pending] };
  }, TypeError, /createFeatureMap/],
  ['concurrent loads, one with simd: "yes"', () =>
    settle([loadFavor(), loadFavor({ simd: 'yes' }), loadFavor({ simd: false })]), RangeError, /simd/],
  ['concurrent loads, one with an unknown option', () =>
    settle([loadFavor({ simd: false }), loadFavor({ threadz: 4 }), loadFavor()]), TypeError, /threadz/],
  ['concurrent loads, one with wasmBinary that is not wasm', () =>
    settle([loadFavor({ wasmBinary: wasmBytes, simd: false }), loadFavor({ wasmBinary: new Uint8Array([1, 2, 3, 4]), simd: false }), loadFavor()]), TypeError, /wasmBinary/],
  ['concurrent loads, one with an empty wasmBinary', () =>
    settle([loadFavor({ wasmBinary: new ArrayBuffer(0) }), loadFavor({ wasmBinary: wasmBytes, simd: false })]), TypeError, /wasmBinary/],
  ['concurrent loads, one with wasmBinary a string', () =>
    settle([loadFavor(), loadFavor({ wasmBinary: 'AGFzbQ==' })]), TypeError, /wasmBinary/],
  ['eight concurrent loads, then a feature map of one used in another', async () => {
    const instances = await Promise.all(Array.from({ length: 8 }, (_, i) => loadFavor({ simd: i % 2 === 0 ? 'auto' : false })));
    const maps = instances.map((f, i) => f.createFeatureMap({ dim: 8, features: 8, seed: i }));
    instances.forEach((f, i) => f.favorAttention(q, k, v, { featureMap: maps[i] }));
    const thrown = catchSync(() => instances[3].favorAttention(q, k, v, { featureMap: maps[4] }));
    maps.forEach((m) => m.dispose());
    return { thrown, instances };
  }, TypeError, /featureMap/],
  ['a feature map made while another load is in flight, then passed to the new instance', async () => {
    const pending = loadFavor({ simd: false });
    const map = favor.createFeatureMap({ dim: 8, features: 8 });
    favor.favorAttention(q, k, v, { featureMap: map });
    const late = await pending;
    const thrown = catchSync(() => late.favorAttentionMatrix(q, k, { featureMap: map }));
    favor.favorAttention(q, k, v, { featureMap: map });  // still valid in its own instance
    map.dispose();
    return { thrown, instances: [late] };
  }, TypeError, /featureMap/],
];

test(`the load misuse table covers calls before load finishes and concurrent loads (${loadCases.length})`, () => {
  assert.ok(loadCases.length >= 6);
});

for (const [label, run, type, pattern] of loadCases) {
  test(`load misuse: ${label} -> ${type.name} ${pattern}`, async () => {
    const { thrown, instances } = await run();
    assert.ok(thrown !== undefined, 'expected an error');
    assert.ok(thrown instanceof type, `expected ${type.name}, got ${thrown?.constructor?.name}: ${thrown?.message}`);
    assert.match(thrown.message, pattern);
    assert.ok(instances.length >= 1, 'at least one instance loaded');
    for (const instance of instances) {
      assertBelow(ref.maxRelError(instance.exactAttention(q3, k3, v3).data, expectedExact.data), 1e-5, `a loaded instance after ${label}`);
    }
    assertInstanceWorks(label);
  });
}
