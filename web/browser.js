// Browser entry: finds the .wasm next to this package's files (bundlers see the literal
// new URL(..., import.meta.url) and emit the file), overridable by wasmUrl, wasmBinary or locateFile.
// The pthreads build is used only on cross-origin isolated pages (SharedArrayBuffer).
import { checkLoadOptions, checkWasmBinary, chooseSimd, chooseThreads, createApi, printErr } from './api.js';

export { version } from './api.js';

function threadsBlocker() {
  if (globalThis.crossOriginIsolated !== true) return 'not cross-origin isolated (serve the page with COOP/COEP headers)';
  if (typeof SharedArrayBuffer === 'undefined') return 'SharedArrayBuffer unavailable';
  return undefined;
}

export async function loadFavor(options) {
  const o = checkLoadOptions(options);
  const simd = chooseSimd(o.simd);
  // 'auto' stays on one thread in browsers for now: the threaded build loads without a bundler
  // but hangs in Vite apps (open issue); threads: n opts in on isolated pages.
  const { threads, threadsReason } = o.threads === undefined || o.threads === 'auto'
    ? { threads: 1, threadsReason: threadsBlocker() ?? "threads: 'auto' uses one thread in browsers (pass threads: n)" }
    : chooseThreads(o, { simd, cores: globalThis.navigator?.hardwareConcurrency ?? 1, blocker: threadsBlocker() });
  const wasmBinary = checkWasmBinary(o.wasmBinary);
  if (o.locateFile !== undefined && typeof o.locateFile !== 'function') {
    throw new TypeError('locateFile: expected a function (fileName) => URL');
  }
  if (o.wasmUrl !== undefined && typeof o.wasmUrl !== 'string' && !(o.wasmUrl instanceof URL)) {
    throw new TypeError('wasmUrl: expected a URL or a string');
  }
  if (threads > 1) return loadThreaded(o, { simd, threads, wasmBinary });
  const defaultUrl = simd
    ? new URL('../dist/favor-simd.wasm', import.meta.url)
    : new URL('../dist/favor-scalar.wasm', import.meta.url);
  const locateFile = (file) => String(o.locateFile ? o.locateFile(file) : (o.wasmUrl ?? defaultUrl));
  const { default: createModule } = await (simd ? import('../dist/favor-simd.js') : import('../dist/favor-scalar.js'));
  const Module = await createModule(wasmBinary ? { wasmBinary } : { locateFile }).catch((error) => {
    const where = wasmBinary ? 'the wasmBinary given' : locateFile(simd ? 'favor-simd.wasm' : 'favor-scalar.wasm');
    throw new Error(`loadFavor: could not load ${where}: ${error?.message ?? error}`, { cause: error });
  });
  return createApi(Module, { simd, threadsReason });
}

// The pthreads glue is loaded as a plain file, not bundled: its workers import the very same
// URL (mainScriptUrlOrBlob), and a bundler must not rewrite its `new Worker(...)`.
async function loadThreaded(o, { simd, threads, wasmBinary }) {
  const defaults = {
    'favor-simd-threads.js': new URL('../dist/favor-simd-threads.js', import.meta.url),
    'favor-simd-threads.worker.js': new URL('../dist/favor-simd-threads.worker.js', import.meta.url),
    'favor-simd-threads.wasm': new URL('../dist/favor-simd-threads.wasm', import.meta.url),
  };
  const locateFile = (file) => String(o.locateFile ? o.locateFile(file)
    : file.endsWith('.wasm') && o.wasmUrl !== undefined ? o.wasmUrl : defaults[file]);
  const glue = new URL(locateFile('favor-simd-threads.js'), globalThis.location?.href).href;
  let Module;
  try {
    const { default: createModule } = await import(/* @vite-ignore */ /* webpackIgnore: true */ glue);
    Module = await createModule({
      ...(wasmBinary ? { wasmBinary } : {}), locateFile, mainScriptUrlOrBlob: glue, favorPoolSize: threads - 1, printErr,
    });
  } catch (error) {
    const where = wasmBinary ? 'the wasmBinary given' : locateFile('favor-simd-threads.wasm');
    throw new Error(`loadFavor: could not load ${where} (threads: ${threads}): ${error?.message ?? error}`, { cause: error });
  }
  Module.setMaxThreads(threads);
  const terminate = () => Module.PThread.terminateAllThreads();
  return createApi(Module, { simd, threads, terminate });
}
