// loadFavor: every option (default, simd true/false, wasmBinary, wasmUrl as a path and as file:
// URLs, locateFile), the info object, the exported version, and bad options.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { test } from 'node:test';

import { loadFavor, version } from 'favor-attention';

import { RELAXED_SIMD_SUPPORTED, SIMD_SUPPORTED, assertBelow, normalTensor } from './helpers.mjs';
import * as ref from './reference.mjs';

const pkg = JSON.parse(await readFile(new URL('../../package.json', import.meta.url), 'utf8'));
const simdWasm = new URL('../../dist/favor-simd.wasm', import.meta.url);
const scalarWasm = new URL('../../dist/favor-scalar.wasm', import.meta.url);

// Small inputs for a "does this instance compute correctly" check.
const q = normalTensor([2, 33, 8], 1);
const k = normalTensor([2, 40, 8], 2);
const v = normalTensor([2, 40, 5], 3);
const expected = ref.exactAttention(q, k, v);

// A float32 computation of softmax attention with |scores| <~ 5 is within ~1e-6 of float64;
// 1e-5 relative to the largest output leaves a 10x margin and still catches any real mistake.
function assertWorks(favor, what) {
  const out = favor.exactAttention(q, k, v);
  assert.deepEqual(out.dims, [2, 33, 5]);
  assertBelow(ref.maxRelError(out.data, expected.data), 1e-5, what);
  return out;
}

test('the package self-reference resolves to the Node entry and exports version', () => {
  assert.equal(version, pkg.version);
  assert.equal(typeof loadFavor, 'function');
});

test('loadFavor() with defaults: info reflects the environment, version matches package.json', async () => {
  const favor = await loadFavor();
  assert.equal(favor.info.version, pkg.version);
  assert.equal(favor.info.simd, SIMD_SUPPORTED, 'default simd should follow WebAssembly.validate of a SIMD module');
  assert.equal(favor.info.threads, Math.min(availableParallelism(), 64), 'threads: the cores, at most 64');
  assert.ok(Object.isFrozen(favor.info), 'info is read-only');
  assertWorks(favor, 'default instance');
});

test("loadFavor({ simd: 'auto' }) is the default", async () => {
  const favor = await loadFavor({ simd: 'auto' });
  assert.equal(favor.info.simd, SIMD_SUPPORTED);
  assertWorks(favor, "simd: 'auto'");
});

test('simd: true and simd: false load different builds that agree within float tolerance', async (t) => {
  if (!SIMD_SUPPORTED) {
    await assert.rejects(loadFavor({ simd: true }), (e) => e instanceof RangeError && /simd/.test(e.message));
    t.skip('this engine has no wasm SIMD');
    return;
  }
  const [simd, scalar] = await Promise.all([loadFavor({ simd: true }), loadFavor({ simd: false })]);
  assert.equal(simd.info.simd, true);
  assert.equal(scalar.info.simd, false);
  const a = assertWorks(simd, 'simd build');
  const b = assertWorks(scalar, 'scalar build');
  // Both are float32 computations of the same formula, only summation order differs: 1e-5.
  assertBelow(ref.maxRelError(a.data, b.data), 1e-5, 'simd vs scalar exactAttention');
  const opts = (f) => ({ featureMap: f.createFeatureMap({ dim: 8, features: 32, seed: 3 }) });
  const fa = simd.favorAttention(q, k, v, opts(simd));
  const fb = scalar.favorAttention(q, k, v, opts(scalar));
  assertBelow(ref.maxRelError(fa.data, fb.data), 1e-5, 'simd vs scalar favorAttention');
});

test('wasmBinary: bytes read by the caller, as a Buffer, a Uint8Array and an ArrayBuffer', async () => {
  const bytes = await readFile(scalarWasm);
  const u8 = new Uint8Array(bytes);
  for (const [label, binary] of [['Buffer', bytes], ['Uint8Array', u8], ['ArrayBuffer', u8.slice().buffer]]) {
    const favor = await loadFavor({ wasmBinary: binary, simd: false });
    assert.equal(favor.info.simd, false);
    assertWorks(favor, `wasmBinary ${label}`);
  }
  if (SIMD_SUPPORTED) {
    const favor = await loadFavor({ wasmBinary: await readFile(simdWasm), simd: true });
    assert.equal(favor.info.simd, true);
    assertWorks(favor, 'wasmBinary simd');
  }
});

test('wasmBinary takes precedence: no file is read (a bogus wasmUrl is ignored)', async () => {
  const favor = await loadFavor({ wasmBinary: await readFile(scalarWasm), simd: false, wasmUrl: '/nonexistent/x.wasm' });
  assertWorks(favor, 'wasmBinary + bogus wasmUrl');
});

test('wasmUrl: a path string, a file: URL string and a URL object', async () => {
  const path = fileURLToPath(scalarWasm);
  for (const [label, wasmUrl] of [['path', path], ['file: string', pathToFileURL(path).href], ['URL', pathToFileURL(path)]]) {
    const favor = await loadFavor({ wasmUrl, simd: false });
    assertWorks(favor, `wasmUrl ${label}`);
  }
});

test('wasmUrl is really used: a missing file rejects with ENOENT, naming the file and the option', async () => {
  await assert.rejects(loadFavor({ wasmUrl: '/nonexistent/favor-scalar.wasm', simd: false }), (e) => e.code === 'ENOENT'
    && /^loadFavor: could not read \/nonexistent\/favor-scalar\.wasm \(wasmUrl\): ENOENT/.test(e.message));
  await assert.rejects(loadFavor({ wasmUrl: new URL('file:///nonexistent/favor-simd.wasm') }), (e) => e.code === 'ENOENT'
    && /^loadFavor: could not read \/nonexistent\/favor-simd\.wasm \(wasmUrl\)/.test(e.message));
});

test('a file that is no wasm module: the error names the file given, not the build\'s own', async () => {
  const notWasm = fileURLToPath(new URL('../../package.json', import.meta.url));
  await assert.rejects(loadFavor({ wasmUrl: notWasm }), (e) => e.constructor === Error
    && e.message.startsWith(`loadFavor: could not instantiate ${notWasm}: `));
});

// The build comes from the module loaded, not from the simd option (which then picks only the glue).
test('info.simd, info.relaxedSimd and the auto tile describe the module given by wasmUrl or wasmBinary', async (t) => {
  if (!SIMD_SUPPORTED) return t.skip('this engine has no wasm SIMD');
  const scalarByUrl = await loadFavor({ wasmUrl: scalarWasm });
  assert.deepEqual([scalarByUrl.info.simd, scalarByUrl.info.relaxedSimd, scalarByUrl.info.tileRows], [false, false, 4]);
  const scalarBytes = await loadFavor({ wasmBinary: await readFile(scalarWasm) });
  assert.deepEqual([scalarBytes.info.simd, scalarBytes.info.relaxedSimd, scalarBytes.info.tileRows], [false, false, 4]);
  const simdAsScalar = await loadFavor({ wasmUrl: simdWasm, simd: false });
  assert.deepEqual([simdAsScalar.info.simd, simdAsScalar.info.relaxedSimd, simdAsScalar.info.tileRows], [true, false, 2]);
  // the scalar build and the plain SIMD build's 'fixed' results are the same bits (api.md)
  assert.deepEqual(assertWorks(scalarByUrl, 'scalar by wasmUrl').data, assertWorks(simdAsScalar, 'simd as scalar').data);
});

test('locateFile: receives the module file name, may return a path or a URL', async () => {
  const seen = [];
  const favor = await loadFavor({
    simd: false,
    locateFile: (name) => {
      seen.push(name);
      return fileURLToPath(new URL(`../../dist/${name}`, import.meta.url));
    },
  });
  assert.deepEqual(seen, ['favor-scalar.wasm']);
  assertWorks(favor, 'locateFile path');
  if (SIMD_SUPPORTED) {
    const names = [];
    const f2 = await loadFavor({ simd: true, threads: 1, locateFile: (name) => (names.push(name), new URL(`../../dist/${name}`, import.meta.url)) });
    assert.deepEqual(names, [RELAXED_SIMD_SUPPORTED ? 'favor-relaxed.wasm' : 'favor-simd.wasm']);
    assertWorks(f2, 'locateFile URL');
    const threaded = [];
    const f4 = await loadFavor({ threads: 2, locateFile: (name) => (threaded.push(name), new URL(`../../dist/${name}`, import.meta.url)) });
    assert.deepEqual(threaded, [RELAXED_SIMD_SUPPORTED ? 'favor-relaxed-threads.wasm' : 'favor-simd-threads.wasm']);
    assertWorks(f4, 'locateFile, threads: 2');
    f4.dispose();
  }
  // locateFile wins over wasmUrl
  const f3 = await loadFavor({ simd: false, wasmUrl: '/nonexistent.wasm', locateFile: (name) => fileURLToPath(new URL(`../../dist/${name}`, import.meta.url)) });
  assertWorks(f3, 'locateFile over wasmUrl');
  // and is really used
  await assert.rejects(loadFavor({ simd: false, locateFile: () => '/nonexistent/dir/x.wasm' }), (e) => e.code === 'ENOENT');
});

test('two instances are independent', async () => {
  const [a, b] = await Promise.all([loadFavor(), loadFavor()]);
  const ma = a.createFeatureMap({ dim: 8, features: 4 });
  a.exactAttention(q, k, v);
  ma.dispose();
  assertWorks(b, 'second instance');
  // a feature map belongs to its instance
  const mb = b.createFeatureMap({ dim: 8, features: 4 });
  assert.throws(() => a.favorAttention(q, k, v, { featureMap: mb }), (e) => e instanceof TypeError && /featureMap/.test(e.message));
});

// Bad options: [label, options, error class, message pattern]. All reject (loadFavor is async).
const badOptions = [
  ['options a number', 42, TypeError, /options/],
  ['options a string', 'simd', TypeError, /options/],
  ['options null', null, TypeError, /options/],
  ['options an array', [], TypeError, /options/],
  ['unknown key', { wasmURL: 'x' }, TypeError, /wasmURL/],
  ['unknown key', { thread: 2 }, TypeError, /thread/],
  ['threads 0', { threads: 0 }, RangeError, /threads/],
  ['threads a string', { threads: '2' }, TypeError, /threads/],
  ['simd a string', { simd: 'yes' }, RangeError, /simd: expected 'auto', 'relaxed', 'fixed', true or false, got 'yes'/],
  ['simd a number', { simd: 1 }, TypeError, /simd: expected 'auto', 'relaxed', 'fixed', true or false, got number 1/],
  ['simd a number', { simd: 1 }, TypeError, /simd/],
  ['wasmBinary a string', { wasmBinary: 'AGFzbQ==' }, TypeError, /wasmBinary/],
  ['wasmBinary an Array', { wasmBinary: [0, 97, 115, 109] }, TypeError, /wasmBinary/],
  ['wasmUrl a number', { wasmUrl: 42 }, TypeError, /wasmUrl/],
  ['wasmUrl an object', { wasmUrl: { href: 'file:///x' } }, TypeError, /wasmUrl/],
  ['locateFile a string', { locateFile: 'dist/' }, TypeError, /locateFile/],
  ['loadTimeout a string', { loadTimeout: '100' }, TypeError, /loadTimeout/],
  ['loadTimeout 0', { loadTimeout: 0 }, RangeError, /loadTimeout/],
  ['loadTimeout fractional', { loadTimeout: 1.5 }, RangeError, /loadTimeout/],
  ['loadTimeout NaN', { loadTimeout: NaN }, RangeError, /loadTimeout/],
  ['loadTimeout beyond setTimeout', { loadTimeout: 2 ** 31 }, RangeError, /loadTimeout/],
  ['tileRows 5', { tileRows: 5 }, RangeError, /^loadFavor: tileRows: expected 'auto', 2, 4 or 6, got number 5$/],
  ['tileRows a string', { tileRows: '6' }, RangeError, /^loadFavor: tileRows: expected 'auto', 2, 4 or 6, got '6'$/],
  ['tileRows null', { tileRows: null }, TypeError, /^loadFavor: tileRows: expected 'auto', 2, 4 or 6, got null$/],
  ['tileRows true', { tileRows: true }, TypeError, /^loadFavor: tileRows: /],
];

for (const [label, options, type, pattern] of badOptions) {
  test(`loadFavor rejects bad options: ${label}`, async () => {
    await assert.rejects(loadFavor(options), (e) => {
      assert.ok(e instanceof type, `expected ${type.name}, got ${e?.constructor?.name}: ${e?.message}`);
      assert.match(e.message, pattern);
      assert.match(e.message, /^loadFavor: /);
      return true;
    });
  });
}

// Regression (fixed): when locateFile returns something that is not a path or URL,
// the TypeError names `wasmUrl` (an option the caller did not pass) instead of `locateFile`.
test('loadFavor: locateFile returning a non-path rejects with a TypeError naming locateFile', async () => {
  await assert.rejects(loadFavor({ locateFile: () => 42 }), (e) => {
    assert.ok(e instanceof TypeError, `expected TypeError, got ${e?.constructor?.name}`);
    assert.match(e.message, /locateFile/);
    return true;
  });
});
