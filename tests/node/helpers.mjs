// Shared helpers for the Node suite: a seeded generator for test inputs, tensor builders and
// assertion helpers. Test inputs are deterministic so that a failure reproduces exactly.
import assert from 'node:assert/strict';

// What this engine validates: wasm SIMD (i8x16.splat; i8x16.popcnt) with bulk memory
// (memory.copy: the SIMD builds use both) and relaxed SIMD (f32x4.relaxed_madd of three zero
// vectors), one-function modules written here apart from web/load.js's probes so that a wrong
// probe there fails the tests that expect a build.
const BULK_MEMORY = WebAssembly.validate(new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0, 1, 4, 1, 96, 0, 0, 3, 2, 1, 0, 5, 3, 1, 0, 0,
  10, 14, 1, 12, 0, 65, 0, 65, 0, 65, 0, 252, 10, 0, 0, 11]));
export const SIMD_SUPPORTED = BULK_MEMORY && WebAssembly.validate(new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0, 1, 5, 1, 96, 0, 1, 123, 3, 2, 1, 0, 10, 10, 1, 8, 0, 65, 0, 253, 15, 253, 98, 11]));
const V128_ZERO = [253, 12, ...new Array(16).fill(0)];
export const RELAXED_SIMD_SUPPORTED = WebAssembly.validate(new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0, 1, 5, 1, 96, 0, 1, 123, 3, 2, 1, 0,
  10, 61, 1, 59, 0, ...V128_ZERO, ...V128_ZERO, ...V128_ZERO, 253, 133, 2, 11]));

/** The GEMM tile rows loadFavor's tileRows 'auto' gives the relaxed build in this Node (6 from V8 13.6, else 2). */
export const RELAXED_TILE_ROWS = (() => {
  const [major, minor] = process.versions.v8.split('.').map(Number);
  return major > 13 || (major === 13 && minor >= 6) ? 6 : 2;
})();
/** ... and the build 'auto' loads here (the plain SIMD build takes 2 rows; the scalar build 4). */
export const AUTO_TILE_ROWS = RELAXED_SIMD_SUPPORTED ? RELAXED_TILE_ROWS : 2;

/** An unsigned LEB128, as wasm writes its counts and sizes; for modules written byte by byte. */
export function uleb(n) {
  const out = [];
  do {
    let byte = n & 0x7f;
    n >>>= 7;
    if (n) byte |= 0x80;
    out.push(byte);
  } while (n);
  return out;
}

/** A wasm section: its id, its size and its bytes. */
export const wasmSection = (id, bytes) => [id, ...uleb(bytes.length), ...bytes];

/** mulberry32: a small seeded uniform generator in [0, 1). */
export function rng(seed) {
  let a = seed >>> 0;
  const uniform = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const normal = () => {
    // Box-Muller
    let u = 0;
    while (u === 0) u = uniform();
    return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * uniform());
  };
  return { uniform, normal };
}

/** A tensor of `dims` whose entries all equal `fill`. */
export function filledTensor(dims, fill = 0.1) {
  return { data: new Float32Array(dims.reduce((a, b) => a * b, 1)).fill(fill), dims };
}

/** A copy of tensor t with entry `index` set to `value` (a NaN, an Infinity, ...). */
export function withValue(t, index, value) {
  const data = t.data.slice();
  data[index] = value;
  return { data, dims: [...t.dims] };
}

/** A float32 tensor of N(0, std^2) entries. */
export function normalTensor(dims, seed, std = 1) {
  const g = rng(seed);
  const n = dims.reduce((a, b) => a * b, 1);
  const data = new Float32Array(n);
  for (let i = 0; i < n; i++) data[i] = g.normal() * std;
  return { data, dims: [...dims] };
}

/** A float32 tensor of U(lo, hi) entries. */
export function uniformTensor(dims, seed, lo, hi) {
  const g = rng(seed);
  const n = dims.reduce((a, b) => a * b, 1);
  const data = new Float32Array(n);
  for (let i = 0; i < n; i++) data[i] = lo + (hi - lo) * g.uniform();
  return { data, dims: [...dims] };
}

/** A deep copy of a tensor (data copied, dims copied). */
export function cloneTensor(t) {
  return { data: t.data.slice(), dims: [...t.dims] };
}

/** Asserts err <= tol with a readable message (and that err is a number, not NaN). */
export function assertBelow(err, tol, what) {
  assert.ok(typeof err === 'number' && err <= tol, `${what}: error ${err} exceeds tolerance ${tol}`);
}

/** Asserts two typed arrays hold exactly the same bits. */
export function assertBitIdentical(a, b, what) {
  assert.equal(a.length, b.length, `${what}: lengths differ`);
  const ua = new Uint32Array(a.buffer, a.byteOffset, a.length);
  const ub = new Uint32Array(b.buffer, b.byteOffset, b.length);
  for (let i = 0; i < ua.length; i++) {
    if (ua[i] !== ub[i]) assert.fail(`${what}: differ at ${i}: ${a[i]} vs ${b[i]}`);
  }
}

/** Asserts fn() throws an error of class `type` whose message matches `pattern`. */
export function assertThrowsNamed(fn, type, pattern, what = '') {
  let thrown;
  try {
    fn();
  } catch (e) {
    thrown = e;
  }
  assert.ok(thrown !== undefined, `${what}: expected a ${type.name}, nothing was thrown`);
  assert.ok(thrown instanceof type, `${what}: expected a ${type.name}, got ${thrown?.constructor?.name}: ${thrown?.message}`);
  assert.match(thrown.message, pattern, `${what}: message does not name the argument`);
  return thrown;
}

/** Float32 bit patterns of a Float32Array as 8-digit hex strings. */
export function hexBits(f32) {
  return Array.from(new Uint32Array(f32.buffer, f32.byteOffset, f32.length), (b) => b.toString(16).padStart(8, '0'));
}

/** Rows [a, b) of every head of a [..., rows, cols] tensor, as a new tensor. */
export function sliceRows(t, a, b) {
  const dims = t.dims, rows = dims[dims.length - 2], cols = dims[dims.length - 1];
  const heads = t.data.length / (rows * cols), n = b - a;
  const data = new Float32Array(heads * n * cols);
  for (let h = 0; h < heads; h++) data.set(t.data.subarray((h * rows + a) * cols, (h * rows + b) * cols), h * n * cols);
  return { data, dims: [...dims.slice(0, -2), n, cols] };
}

/** Tensors [..., n_i, cols] joined along their rows. */
export function concatRows(parts) {
  const dims = parts[0].dims, cols = dims[dims.length - 1];
  const heads = parts[0].data.length / (dims[dims.length - 2] * cols);
  const total = parts.reduce((s, p) => s + p.dims[p.dims.length - 2], 0);
  const data = new Float32Array(heads * total * cols);
  let at = 0;
  for (const p of parts) {
    const n = p.dims[p.dims.length - 2];
    for (let h = 0; h < heads; h++) data.set(p.data.subarray(h * n * cols, (h + 1) * n * cols), (h * total + at) * cols);
    at += n;
  }
  return { data, dims: [...dims.slice(0, -2), total, cols] };
}

/** Heads of [..., Hkv, S, c] repeated g times each: [..., Hkv g, S, c] (grouped-query by hand). */
export function repeatHeads(t, g) {
  const dims = t.dims, hkv = dims[dims.length - 3], block = dims[dims.length - 2] * dims[dims.length - 1];
  const outer = t.data.length / (hkv * block);
  const data = new Float32Array(t.data.length * g);
  for (let o = 0; o < outer; o++)
    for (let h = 0; h < hkv; h++)
      for (let r = 0; r < g; r++) data.set(t.data.subarray((o * hkv + h) * block, (o * hkv + h + 1) * block), ((o * hkv + h) * g + r) * block);
  return { data, dims: [...dims.slice(0, -3), hkv * g, ...dims.slice(-2)] };
}

/** max |a - b| / max |b| over two arrays of equal length. */
export function maxRelDiff(a, b) {
  let diff = 0, top = 0;
  for (let i = 0; i < b.length; i++) {
    diff = Math.max(diff, Math.abs(a[i] - b[i]));
    top = Math.max(top, Math.abs(b[i]));
  }
  return top === 0 ? diff : diff / top;
}
