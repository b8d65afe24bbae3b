// Shared helpers for the Node suite: a seeded generator for test inputs, tensor builders and
// assertion helpers. Test inputs are deterministic so that a failure reproduces exactly.
import assert from 'node:assert/strict';

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
