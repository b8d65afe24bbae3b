// Browser entry: finds the .wasm next to this package's files (bundlers see the literal
// new URL(..., import.meta.url) and emit the file), overridable by wasmUrl, wasmBinary or locateFile.
import { checkLoadOptions, checkWasmBinary, chooseSimd, createApi } from './api.js';

export { version } from './api.js';

export async function loadFavor(options) {
  const o = checkLoadOptions(options);
  const simd = chooseSimd(o.simd);
  const wasmBinary = checkWasmBinary(o.wasmBinary);
  if (o.locateFile !== undefined && typeof o.locateFile !== 'function') {
    throw new TypeError('locateFile: expected a function (fileName) => URL');
  }
  if (o.wasmUrl !== undefined && typeof o.wasmUrl !== 'string' && !(o.wasmUrl instanceof URL)) {
    throw new TypeError('wasmUrl: expected a URL or a string');
  }
  const defaultUrl = simd
    ? new URL('../dist/favor-simd.wasm', import.meta.url)
    : new URL('../dist/favor-scalar.wasm', import.meta.url);
  const locateFile = (file) => String(o.locateFile ? o.locateFile(file) : (o.wasmUrl ?? defaultUrl));
  const { default: createModule } = await (simd ? import('../dist/favor-simd.js') : import('../dist/favor-scalar.js'));
  const Module = await createModule(wasmBinary ? { wasmBinary } : { locateFile }).catch((error) => {
    const where = wasmBinary ? 'the wasmBinary given' : locateFile(simd ? 'favor-simd.wasm' : 'favor-scalar.wasm');
    throw new Error(`loadFavor: could not load ${where}: ${error?.message ?? error}`, { cause: error });
  });
  return createApi(Module, { simd });
}
