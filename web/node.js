// Node entry: reads the .wasm from disk (Emscripten 3.1.6's ES6 glue cannot fetch in Node).
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';

import { checkLoadOptions, checkWasmBinary, chooseSimd, createApi } from './api.js';

export { version } from './api.js';

export async function loadFavor(options) {
  const o = checkLoadOptions(options);
  const simd = chooseSimd(o.simd);
  const name = simd ? 'favor-simd' : 'favor-scalar';
  let wasmBinary = checkWasmBinary(o.wasmBinary);
  if (!wasmBinary) {
    let location = new URL(`../dist/${name}.wasm`, import.meta.url);
    let source = 'wasmUrl';
    if (o.locateFile !== undefined) {
      if (typeof o.locateFile !== 'function') throw new TypeError('locateFile: expected a function (fileName) => path or URL');
      location = o.locateFile(`${name}.wasm`);
      source = 'locateFile';
    } else if (o.wasmUrl !== undefined) {
      location = o.wasmUrl;
    }
    if (typeof location !== 'string' && !(location instanceof URL)) {
      throw new TypeError(`${source}: expected a path, a file: URL string or a URL, got ${typeof location}`);
    }
    const path = location instanceof URL || location.startsWith('file:') ? fileURLToPath(location) : location;
    wasmBinary = await readFile(path);
  }
  const { default: createModule } = await (simd ? import('../dist/favor-simd.js') : import('../dist/favor-scalar.js'));
  const Module = await createModule({ wasmBinary }).catch((error) => {
    throw new Error(`loadFavor: could not instantiate ${o.wasmBinary ? 'the wasmBinary given' : `${name}.wasm`}: ${error?.message ?? error}`, { cause: error });
  });
  return createApi(Module, { simd });
}
