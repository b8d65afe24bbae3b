// scripts/relax-wasm.mjs, the post-link step of the relaxed-SIMD build: it decodes the code
// section instruction by instruction and rewrites only real f32x4 fma opcodes (0xfd 175 ->
// 0xfd 261). Hand-made modules hide the same three bytes (fd af 01) in places a blind byte
// replacement would corrupt: a v128.const immediate, an i32.const immediate and a custom section.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { test } from 'node:test';

import { relaxWasm, validates, vectorConstants } from '../../scripts/relax-wasm.mjs';
import { uleb, wasmSection } from './helpers.mjs';

const FMA_BYTES = [0xfd, 0xaf, 0x01];
const MADD_BYTES = [0xfd, 0x85, 0x02];


// One function () -> result whose body is `instructions` (then end), and an optional custom section.
function module(instructions, { result = 0x7b, custom } = {}) {
  const body = [0, ...instructions, 0x0b];
  return new Uint8Array([
    0, 0x61, 0x73, 0x6d, 1, 0, 0, 0,
    ...wasmSection(1, [1, 0x60, 0, 1, result]),
    ...wasmSection(3, [1, 0]),
    ...wasmSection(10, [1, ...uleb(body.length), ...body]),
    ...(custom ? wasmSection(0, [4, ...Buffer.from('note'), ...custom]) : []),
  ]);
}
// v128.const whose 16 immediate bytes contain fd af 01 (not an instruction).
const v128WithPattern = [0xfd, 12, ...FMA_BYTES, ...new Array(13).fill(7)];

function indexOfBytes(bytes, pattern, from = 0) {
  for (let i = from; i + pattern.length <= bytes.length; i++) {
    if (pattern.every((b, j) => bytes[i + j] === b)) return i;
  }
  return -1;
}

test('rewrites a real f32x4 fma, and not the same bytes inside a v128.const immediate', () => {
  const bytes = module([...v128WithPattern, ...v128WithPattern, ...v128WithPattern, ...FMA_BYTES]);
  const before = Uint8Array.from(bytes);
  const fmaAt = indexOfBytes(bytes, FMA_BYTES, bytes.length - 4 - FMA_BYTES.length);
  assert.deepEqual(relaxWasm(bytes), { rewritten: 1, relaxedMadd: 1, functions: 1 });
  assert.deepEqual(Array.from(bytes.subarray(fmaAt, fmaAt + 3)), MADD_BYTES);
  // everything but the opcode is untouched: the three immediates still hold fd af 01
  for (let i = 0; i < bytes.length; i++) if (i < fmaAt + 1 || i > fmaAt + 2) assert.equal(bytes[i], before[i], `byte ${i}`);
  assert.equal(validates(bytes), true, 'the rewritten module validates (relaxed SIMD enabled)');
  // a second pass finds nothing left to rewrite and counts the madd
  assert.deepEqual(relaxWasm(bytes), { rewritten: 0, relaxedMadd: 1, functions: 1 });
});

test('leaves fd af 01 alone in an i32.const immediate and in a custom section', () => {
  // i32.const with the LEB128 bytes fd af 01 (a valid 3-byte number), returned as i32
  const bytes = module([0x41, ...FMA_BYTES], { result: 0x7f, custom: FMA_BYTES });
  const before = Uint8Array.from(bytes);
  assert.deepEqual(relaxWasm(bytes), { rewritten: 0, relaxedMadd: 0, functions: 1 });
  assert.deepEqual(bytes, before);
});

test('a padded (non-minimal) opcode LEB keeps its length', () => {
  const bytes = module([...v128WithPattern, ...v128WithPattern, ...v128WithPattern, 0xfd, 0xaf, 0x81, 0x00]);
  const size = bytes.length;
  assert.equal(relaxWasm(bytes).rewritten, 1);
  assert.equal(bytes.length, size);
  assert.deepEqual(Array.from(bytes.subarray(size - 5, size - 1)), [0xfd, 0x85, 0x82, 0x00]);
  assert.equal(validates(bytes), true);
});

test('refuses what it cannot rewrite or decode', () => {
  const v = [...v128WithPattern, ...v128WithPattern, ...v128WithPattern];
  assert.throws(() => relaxWasm(module([...v, 0xfd, 0xb0, 0x01])), /pre-standard f32x4\.relaxed_fms \(0xfd 176\) has no rewrite/);
  assert.throws(() => relaxWasm(module([...v128WithPattern, 0xfd, 0xa2, 0x01])), /i8x16\.relaxed_swizzle/);
  assert.throws(() => relaxWasm(module([0xfd, ...uleb(400)])), /unknown SIMD opcode 400/);
  assert.throws(() => relaxWasm(module([0xf5])), /unknown opcode 0xf5/);
  // a body whose size ends it inside the v128.const immediate
  const short = module([...v128WithPattern]);
  const bodySizeAt = short.length - 1 - 16 - 2 - 1 - 1;  // before: locals, fd 0c, 16 bytes, end
  short[bodySizeAt] -= 5;
  assert.throws(() => relaxWasm(short), /unexpected end/);
  assert.throws(() => relaxWasm(module([...v128WithPattern]).subarray(0, -5)), /unexpected end/);
  assert.throws(() => relaxWasm(new Uint8Array([1, 2, 3, 4, 5, 6, 7, 8])), /not a WebAssembly module/);
});

test('the built modules decode completely; only the relaxed ones hold relaxed_madd', async () => {
  const dist = (name) => new URL(`../../dist/${name}`, import.meta.url);
  for (const name of ['favor-simd.wasm', 'favor-scalar.wasm', 'favor-simd-threads.wasm']) {
    const { rewritten, relaxedMadd, functions } = relaxWasm(await readFile(dist(name)));
    assert.equal(rewritten + relaxedMadd, 0, name);
    assert.ok(functions > 300, `${name}: ${functions} functions decoded`);
  }
  for (const name of ['favor-relaxed.wasm', 'favor-relaxed-threads.wasm']) {
    const bytes = await readFile(dist(name));
    const { rewritten, relaxedMadd } = relaxWasm(bytes);
    assert.equal(rewritten, 0, `${name}: already rewritten at build time`);
    // GEMM tiles, exact-attention kernels and the exp polynomial: well over a hundred sites
    assert.ok(relaxedMadd >= 100, `${name}: ${relaxedMadd} f32x4.relaxed_madd`);
    assert.equal(validates(bytes), true, name);
  }
});

test('the relaxed and scalar modules run on the SIMD glue: the builds write the same glue but for the file name', async (t) => {
  const built = new URL('../../build/wasm-relaxed/favor-relaxed.js', import.meta.url);
  const own = await readFile(built, 'utf8').catch(() => null);
  if (own === null) return t.skip('build/wasm-relaxed is not here (run scripts/build-wasm.sh)');
  const simd = await readFile(new URL('../../dist/favor-simd.js', import.meta.url), 'utf8');
  assert.equal(own.replaceAll('favor-relaxed', 'favor-simd'), simd);
  const scalarOwn = await readFile(new URL('../../build/wasm-scalar/favor-scalar.js', import.meta.url), 'utf8');
  assert.equal(scalarOwn.replaceAll('favor-scalar', 'favor-simd'), simd);
  const threadsOwn = await readFile(new URL('../../build/wasm-relaxed-threads/favor-relaxed-threads.js', import.meta.url), 'utf8');
  const threadsSimd = await readFile(new URL('../../dist/favor-simd-threads.js', import.meta.url), 'utf8');
  assert.equal(threadsOwn.replaceAll('favor-relaxed', 'favor-simd'), threadsSimd);
});

// The exp's constants (src/favor/kernels/vector_math.cpp) are loaded from memory: V8 13-14 (Node 24, 26)
// rebuild a v128.const at each use inside a loop, which made the exp 1.6-1.7x slower there. A
// compiler that folded them back (a constant table in the header, or link-time optimization)
// would bring every one back as a v128.const splat.
const EXP_CONSTANTS = new Float32Array([1.3814615085721016e-3, 8.368710055947304e-3, 4.166838899254799e-2,
  1.666652113199234e-1, 4.999999403953552e-1, 12583039.0, 1.44269504088896341, 2.12194440e-4, -0.693359375, -87.33654]);  // (1 is common)
const expSplats = (bytes) => vectorConstants(bytes).filter((c) => c.every((x) => x === c[0]) && EXP_CONSTANTS.includes(c[0]));

test('vectorConstants finds the v128.const splats of a module, and only instructions', () => {
  const splat = (x) => [0xfd, 12, ...new Uint8Array(new Float32Array([x, x, x, x]).buffer)];
  const bytes = module([...splat(12583039.0), 0x1a, ...splat(0.25), 0x1a, ...splat(-87.33654)], { custom: [...splat(1.44269504088896341)] });
  assert.deepEqual(vectorConstants(bytes).map((c) => c[0]), [12583039.0, 0.25, Math.fround(-87.33654)]);
  assert.equal(expSplats(bytes).length, 2);
});

test('the built modules read the exp constants from memory: no v128.const splat of one', async () => {
  for (const name of ['favor-simd.wasm', 'favor-simd-threads.wasm', 'favor-relaxed.wasm', 'favor-relaxed-threads.wasm']) {
    const bytes = await readFile(new URL(`../../dist/${name}`, import.meta.url));
    assert.ok(vectorConstants(bytes).length > 100, `${name}: its other vector constants are found`);
    assert.deepEqual(expSplats(bytes).map((c) => c[0]), [], name);
  }
});
