// The relaxed-SIMD build (favor-relaxed.wasm: vector multiply-adds as f32x4.relaxed_madd): which
// build each `simd` option loads in this engine, and, where the engine runs relaxed SIMD (Node >= 22;
// `npm test` runs this suite in Node 22 too), that every kernel family returns the plain SIMD
// build's results to float32 rounding, both within the float64 reference's tolerance, threads
// included, with the projection W bit for bit the same.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { before, test } from 'node:test';

import { loadFavor } from 'favor-attention';

import { RELAXED_SIMD_SUPPORTED, SIMD_SUPPORTED, assertBelow, assertBitIdentical, maxRelDiff, normalTensor } from './helpers.mjs';
import * as ref from './reference.mjs';

const relaxedWasm = new URL('../../dist/favor-relaxed.wasm', import.meta.url);

// f32x4.extract_lane 0 of relaxed_madd(1 + 2^-23, 1 - 2^-23, -1): -2^-46 where the engine fuses
// (one rounding), 0 where it multiplies and adds (the product rounds to 1).
function maddIsFused() {
  const lanes = (x) => [0xfd, 12, ...new Uint8Array(new Float32Array([x, x, x, x]).buffer)];
  const body = [0, ...lanes(1 + 2 ** -23), ...lanes(1 - 2 ** -23), ...lanes(-1), 0xfd, 133, 2, 0xfd, 31, 0, 0x0b];
  const bytes = new Uint8Array([0, 0x61, 0x73, 0x6d, 1, 0, 0, 0, 1, 5, 1, 0x60, 0, 1, 0x7d, 3, 2, 1, 0,
    7, 5, 1, 1, 0x66, 0, 0, 10, body.length + 2, 1, body.length, ...body]);
  return new WebAssembly.Instance(new WebAssembly.Module(bytes)).exports.f() !== 0;
}

const builds = {};
before(async () => {
  if (!RELAXED_SIMD_SUPPORTED) return;
  [builds.relaxed, builds.fixed, builds.relaxed2] = await Promise.all([
    loadFavor({ simd: 'relaxed', threads: 1 }), loadFavor({ simd: 'fixed', threads: 1 }), loadFavor({ simd: 'relaxed', threads: 2 })]);
});

test('simd options pick the build this engine can run', async () => {
  const auto = await loadFavor({ threads: 1 });
  assert.equal(auto.info.relaxedSimd, RELAXED_SIMD_SUPPORTED, "'auto' is the relaxed build exactly where relaxed SIMD validates");
  assert.equal(auto.info.simd, SIMD_SUPPORTED);
  assert.equal((await loadFavor({ simd: true, threads: 1 })).info.relaxedSimd, RELAXED_SIMD_SUPPORTED);
  const fixed = await loadFavor({ simd: 'fixed', threads: 1 });
  assert.deepEqual([fixed.info.simd, fixed.info.relaxedSimd], [true, false]);
  const scalar = await loadFavor({ simd: false });
  assert.deepEqual([scalar.info.simd, scalar.info.relaxedSimd], [false, false]);
  if (RELAXED_SIMD_SUPPORTED) {
    const relaxed = await loadFavor({ simd: 'relaxed', threads: 1 });
    assert.deepEqual([relaxed.info.simd, relaxed.info.relaxedSimd], [true, true]);
  } else {
    await assert.rejects(loadFavor({ simd: 'relaxed' }), {
      name: 'RangeError',
      message: "loadFavor: simd: 'relaxed' was requested but this engine does not validate relaxed SIMD (f32x4.relaxed_madd: Chromium >= 114, Firefox >= 146, Node >= 22)",
    });
  }
});

test('info.relaxedSimd comes from the module: a wasmBinary of the relaxed build says so, or fails to instantiate', async () => {
  const wasmBinary = await readFile(relaxedWasm);
  if (RELAXED_SIMD_SUPPORTED) {
    assert.equal((await loadFavor({ wasmBinary })).info.relaxedSimd, true);
    assert.equal((await loadFavor({ wasmUrl: relaxedWasm })).info.relaxedSimd, true);
  } else {
    await assert.rejects(loadFavor({ wasmBinary }), /could not instantiate the wasmBinary given/);
  }
});

// Both builds compute the same sums; the relaxed one rounds each vector product into its sum
// once instead of twice. Their difference is a few float32 roundings of the output's scale
// (measured ~3e-7 relative): 1e-5 relative to the largest output is the same bound the suite
// uses between the SIMD and scalar builds, and 30x the measured difference.
const TOL = 1e-5;

function check(what, relaxedOut, fixedOut, reference) {
  assert.deepEqual(relaxedOut.dims, fixedOut.dims, what);
  assertBelow(maxRelDiff(relaxedOut.data, fixedOut.data), TOL, `${what}: relaxed vs fixed`);
  if (reference) assertBelow(ref.maxRelError(relaxedOut.data, reference.data), TOL, `${what}: relaxed vs float64`);
}

test('every kernel family: the relaxed build equals the plain SIMD build to float32 rounding', (t) => {
  if (!RELAXED_SIMD_SUPPORTED) return t.skip('this engine does not run relaxed SIMD (Node >= 22 does)');
  const { relaxed, fixed } = builds;
  // shapes past every tile edge: 65 queries, 129 keys, d = 64, dv = 13 (vector columns and a scalar tail)
  const q = normalTensor([2, 65, 64], 1, 0.5), k = normalTensor([2, 129, 64], 2, 0.5), v = normalTensor([2, 129, 13], 3);
  const qc = normalTensor([2, 129, 64], 4, 0.5);
  check('exactAttention', relaxed.exactAttention(q, k, v), fixed.exactAttention(q, k, v), ref.exactAttention(q, k, v));
  check('exactAttention causal', relaxed.exactAttention(qc, k, v, { causal: true }), fixed.exactAttention(qc, k, v, { causal: true }),
    ref.exactAttention(qc, k, v, { causal: true }));
  check('attentionMatrix', relaxed.attentionMatrix(q, k), fixed.attentionMatrix(q, k), ref.attentionMatrix(q, k));
  for (const kernel of ['positive', 'hyperbolic', 'trigonometric', 'relu', 'oprf']) {
    const options = { dim: 64, features: 96, kernel, seed: 11 };
    const [rm, fm] = [relaxed.createFeatureMap(options), fixed.createFeatureMap(options)];
    assertBitIdentical(rm.projection.data, fm.projection.data, `${kernel}: W`);
    for (const causal of [false, true]) {
      const qq = causal ? qc : q;
      check(`favorAttention ${kernel} causal=${causal}`, relaxed.favorAttention(qq, k, v, { featureMap: rm, causal }),
        fixed.favorAttention(qq, k, v, { featureMap: fm, causal }));
      check(`favorAttentionMatrix ${kernel} causal=${causal}`, relaxed.favorAttentionMatrix(qq, k, { featureMap: rm, causal }),
        fixed.favorAttentionMatrix(qq, k, { featureMap: fm, causal }));
    }
    rm.dispose(), fm.dispose();
  }
  const codebook = fixed.kmeans(k, { clusters: 12, seed: 5 });
  for (const assignment of ['hard', 'soft']) {
    check(`codebookAttention ${assignment}`, relaxed.codebookAttention(qc, k, v, { codebook, assignment, causal: true }),
      fixed.codebookAttention(qc, k, v, { codebook, assignment, causal: true }));
  }
  const w = normalTensor([40, 64], 6);
  check('matmul', relaxed.matmul(q, w, { transposeB: true }), fixed.matmul(q, w, { transposeB: true }));
});

test('causal states: prefill then token-by-token decode, relaxed vs plain SIMD', (t) => {
  if (!RELAXED_SIMD_SUPPORTED) return t.skip('this engine does not run relaxed SIMD (Node >= 22 does)');
  const { relaxed, fixed } = builds;
  const q = normalTensor([4, 40, 32], 7, 0.5), k = normalTensor([2, 40, 32], 8, 0.5), v = normalTensor([2, 40, 32], 9);
  const rows = (x, a, b) => ({ data: x.data.filter((_, i) => { const r = Math.floor(i / 32) % 40; return r >= a && r < b; }), dims: [x.dims[0], b - a, 32] });
  for (const method of ['exact', 'favor']) {
    const make = (favor) => favor.createCausalState(method === 'favor'
      ? { method, featureMap: favor.createFeatureMap({ dim: 32, features: 64, seed: 3 }) } : { method });
    const [rs, fs] = [make(relaxed), make(fixed)];
    check(`${method} prefill`, rs.append(rows(q, 0, 30), rows(k, 0, 30), rows(v, 0, 30)), fs.append(rows(q, 0, 30), rows(k, 0, 30), rows(v, 0, 30)));
    for (let i = 30; i < 40; i++) check(`${method} token ${i}`, rs.append(rows(q, i, i + 1), rows(k, i, i + 1), rows(v, i, i + 1)),
      fs.append(rows(q, i, i + 1), rows(k, i, i + 1), rows(v, i, i + 1)));
    rs.dispose(), fs.dispose();
  }
});

test('the relaxed build fuses where this machine does, and its threads give the same bits', (t) => {
  if (!RELAXED_SIMD_SUPPORTED) return t.skip('this engine does not run relaxed SIMD (Node >= 22 does)');
  const q = normalTensor([3, 300, 64], 12, 0.5), k = normalTensor([3, 300, 64], 13, 0.5), v = normalTensor([3, 300, 64], 14);
  const one = builds.relaxed.exactAttention(q, k, v, { causal: true });
  assertBitIdentical(builds.relaxed2.exactAttention(q, k, v, { causal: true }).data, one.data, 'exact, 2 threads vs 1');
  const options = { dim: 64, features: 128, seed: 1 };
  const [m1, m2] = [builds.relaxed.createFeatureMap(options), builds.relaxed2.createFeatureMap(options)];
  assertBitIdentical(builds.relaxed2.favorAttention(q, k, v, { featureMap: m2 }).data,
    builds.relaxed.favorAttention(q, k, v, { featureMap: m1 }).data, 'FAVOR+, 2 threads vs 1');
  m1.dispose(), m2.dispose();
  const plain = builds.fixed.exactAttention(q, k, v, { causal: true });
  const differing = one.data.filter((x, i) => x !== plain.data[i]).length;
  if (maddIsFused()) {
    // One rounding fewer per product: most of 57,600 outputs move by an ulp or so.
    assert.ok(differing > one.data.length / 10, `fused here, yet only ${differing} of ${one.data.length} outputs differ from the plain build`);
  } else {
    assertBitIdentical(one.data, plain.data, 'unfused relaxed_madd is a multiply and an add: the plain build\'s bits');
  }
});
