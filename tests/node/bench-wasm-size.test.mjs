// bench/wasm-size.mjs reads each function's size and name from a wasm module: on a module written
// here byte by byte (an import before the functions, so that indices are offset, and a name
// section), and on a built module, whose bodies must fill its code section exactly.
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { test } from 'node:test';

import { functionSizes } from '../../bench/wasm-size.mjs';
import { uleb, wasmSection } from './helpers.mjs';

const str = (s) => [...uleb(s.length), ...new TextEncoder().encode(s)];

test('a module written by hand: each defined function its body\'s bytes and its name', () => {
  const type = wasmSection(1, [1, 0x60, 0, 0]);                          // () -> ()
  const imports = wasmSection(2, [2, ...str('env'), ...str('f'), 0, 0,   // an imported function
    ...str('env'), ...str('memory'), 2, 1, 1, 2]);                       // and a memory, limits 1..2
  const functions = wasmSection(3, [3, 0, 0, 0]);
  const long = [0, ...Array(200).fill(0x01), 0x0b];                      // 200 nops: a body past 127 bytes
  const code = wasmSection(10, [3, ...uleb(2), 0, 0x0b, ...uleb(long.length), ...long, ...uleb(3), 0, 0x01, 0x0b]);
  const names = wasmSection(0, [...str('name'), 1, ...uleb(1 + 1 + 6 + 1 + 8), 2, 1, ...str('small'), 2, ...str('longer!')]);
  const bytes = new Uint8Array([0, 0x61, 0x73, 0x6d, 1, 0, 0, 0, ...type, ...imports, ...functions, ...code, ...names]);
  assert.deepEqual(functionSizes(bytes), [
    { index: 1, name: 'small', bytes: 2 },
    { index: 2, name: 'longer!', bytes: long.length },
    { index: 3, name: null, bytes: 3 },
  ]);
  assert.throws(() => functionSizes(new Uint8Array([1, 2, 3, 4])), TypeError);
});

const built = new URL('../../dist/favor-simd.wasm', import.meta.url);

test('a built module: the bodies and their length prefixes fill its code section', { skip: !existsSync(built) && 'no dist/ build' }, () => {
  const bytes = readFileSync(built);
  // The code section's size, from the section headers alone.
  let codeSize = null;
  for (let at = 8; at < bytes.length;) {
    const id = bytes[at];
    let size = 0, shift = 0, p = at + 1, byte;
    do { byte = bytes[p++]; size += (byte & 0x7f) * 2 ** shift; shift += 7; } while (byte & 0x80);
    if (id === 10) codeSize = size;
    at = p + size;
  }
  const functions = functionSizes(bytes);
  assert.ok(functions.length > 100, `${functions.length} functions`);
  const filled = uleb(functions.length).length + functions.reduce((s, f) => s + uleb(f.bytes).length + f.bytes, 0);
  assert.equal(filled, codeSize);
  assert.ok(functions.every((f, i) => i === 0 || f.index === functions[i - 1].index + 1), 'consecutive indices');
});
