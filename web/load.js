// What loadFavor decides before it instantiates a module, shared by web/node.js and
// web/browser.js: its options checked, which build the engine validates (wasm feature probes),
// how many threads, the GEMM's tile rows for this engine (version sniffing), and how long the
// threaded build may take to start.
import { rangeError, typeError } from './errors.js';
import { checkBoolean, checkInteger, checkOptions, describe } from './validate.js';

// A 1-function module with a memory, using memory.copy (0xfc 0x0a) and two SIMD instructions:
// validates only where wasm SIMD and bulk memory exist, both of which the SIMD builds use. (Every
// engine with SIMD has bulk memory; the probe makes sure, so that such an engine takes scalar.)
const SIMD_PROBE = new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0, 1, 5, 1, 96, 0, 1, 123, 3, 2, 1, 0, 5, 3, 1, 0, 0,
  10, 20, 1, 18, 0, 65, 0, 65, 0, 65, 0, 252, 10, 0, 0, 65, 0, 253, 15, 253, 98, 11]);
// () -> v128: f32x4.relaxed_madd (0xfd 0x85 0x02) of three v128.const zeros, the instruction the
// relaxed build is made for. Code section: 61 bytes, one body of 59.
const ZERO_V128 = [253, 12, ...new Array(16).fill(0)];
const RELAXED_PROBE = new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0, 1, 5, 1, 96, 0, 1, 123, 3, 2, 1, 0,
  10, 61, 1, 59, 0, ...ZERO_V128, ...ZERO_V128, ...ZERO_V128, 253, 133, 2, 11]);

const SIMD_CHOICES = "'auto', 'relaxed', 'fixed', true or false";

// Which build: 'relaxed' (SIMD with fused multiply-adds), 'simd' or 'scalar'.
//   'auto' / undefined: the best this engine validates; true: a SIMD build (relaxed where it
//   validates), an error without SIMD; 'relaxed': the relaxed build or an error; 'fixed': the
//   plain SIMD build, whose results are the same bits on every machine; false: the scalar build.
export function chooseBuild(option) {
  if (option !== undefined && typeof option !== 'boolean' && option !== 'auto' && option !== 'relaxed' && option !== 'fixed') {
    if (typeof option === 'string') throw rangeError(`simd: expected ${SIMD_CHOICES}, got '${option}'`);
    throw typeError(`simd: expected ${SIMD_CHOICES}, got ${describe(option)}`);
  }
  if (option === false) return 'scalar';
  const simd = WebAssembly.validate(SIMD_PROBE);
  const relaxed = simd && WebAssembly.validate(RELAXED_PROBE);
  if (option === 'relaxed' && !relaxed) {
    throw rangeError("simd: 'relaxed' was requested but this engine does not validate relaxed SIMD (f32x4.relaxed_madd: Chromium >= 114, Firefox >= 146, Node >= 22)");
  }
  if ((option === true || option === 'fixed') && !simd) {
    throw rangeError(`simd: ${option === true ? 'true' : "'fixed'"} was requested but this engine does not support WebAssembly SIMD (with bulk memory)`);
  }
  if (option === 'fixed') return 'simd';
  return relaxed ? 'relaxed' : simd ? 'simd' : 'scalar';
}

const TILE_ROWS = [2, 4, 6];  // loadFavor's tileRows besides 'auto' (chooseTileRows)

export function checkLoadOptions(options) {
  const o = checkOptions(options, 'loadFavor options', ['wasmUrl', 'wasmBinary', 'simd', 'locateFile', 'threads', 'loadTimeout', 'worker', 'transfer', 'tileRows']);
  checkBoolean(o.worker, 'worker');
  checkBoolean(o.transfer, 'transfer');
  if (o.transfer && !o.worker) throw rangeError('transfer: only with worker: true (inputs move to the worker)');
  if (o.worker && o.locateFile !== undefined) throw typeError('locateFile: a function cannot be sent to the worker; pass wasmUrl or wasmBinary');
  if (o.threads !== undefined && o.threads !== 'auto') {
    if (typeof o.threads !== 'number') throw typeError(`threads: expected 'auto' or an integer >= 1, got ${describe(o.threads)}`);
    checkInteger(o.threads, 'threads', 1, MAX_THREADS);
  }
  if (o.loadTimeout !== undefined) checkInteger(o.loadTimeout, 'loadTimeout', 1, MAX_TIMEOUT_MS);
  if (o.tileRows !== undefined && o.tileRows !== 'auto' && !TILE_ROWS.includes(o.tileRows)) {
    const error = typeof o.tileRows === 'number' || typeof o.tileRows === 'string' ? rangeError : typeError;
    throw error(`tileRows: expected 'auto', 2, 4 or 6, got ${typeof o.tileRows === 'string' ? `'${o.tileRows}'` : describe(o.tileRows)}`);
  }
  return o;
}

// The GEMM's register tile (gemm.hpp). 6 rows x 2 vectors keep 12 accumulators in registers,
// which only the relaxed build's fused multiply-adds leave room for, and only in an engine whose
// register allocator keeps them there: FAVOR+ at L = 4096 took 0.93-0.94x the time of 4 rows in
// Node 24 and 26 and Chromium 156 (V8 13.6-15.6), but 1.5x in Node 22 (V8 12.4, which spills
// them) and 1.25-1.6x in Firefox 153 (SpiderMonkey spills them too). Elsewhere 2 rows x 4 vectors
// (8 accumulators, as 4 x 2, but half the broadcasts of A per load of B): 0.93-0.97x the time of
// 4 x 2 in Node 22 and 26, Chromium and Firefox, relaxed or not (0.99x in Firefox's relaxed build).
// In the scalar build, where a "vector" is one float, 4 rows (2 rows took 1.12x). So 'auto' takes
// 6 rows for the relaxed build on V8 >= 13.6 (Node >= 24, Chromium >= 136), 4 in the scalar build,
// else 2. The bits are the same whichever runs.
export function chooseTileRows(option, { simd, relaxed }) {
  if (TILE_ROWS.includes(option)) return option;
  if (!simd) return 4;
  if (!relaxed) return 2;
  const v8 = globalThis.process?.versions?.v8;
  if (typeof v8 === 'string') {
    const [major, minor] = v8.split('.').map(Number);
    return major > 13 || (major === 13 && minor >= 6) ? 6 : 2;
  }
  const nav = globalThis.navigator;
  const brand = nav?.userAgentData?.brands?.find((b) => b.brand === 'Chromium')?.version;
  const chromium = Number(brand ?? /\bChrome\/(\d+)/.exec(nav?.userAgent ?? '')?.[1]);
  return chromium >= 136 ? 6 : 2;
}

const MAX_TIMEOUT_MS = 2 ** 31 - 1;  // setTimeout's limit
const DEFAULT_LOAD_TIMEOUT_MS = 30000;

// The threaded build resolves only once its pool of workers has loaded, and Emscripten 3.1.6
// neither rejects nor reports when a worker cannot load (a Content-Security-Policy without
// worker-src blob:, a blocked or missing script): it waits forever. This rejects instead after
// loadTimeout ms and calls stop() to end the workers that did start.
export function threadedStartup(started, o, threads, stop) {
  const ms = o.loadTimeout ?? DEFAULT_LOAD_TIMEOUT_MS;
  let timer;
  const expired = new Promise((resolve, reject) => {
    timer = setTimeout(() => {
      started.catch(() => {});  // settles later, or never: nobody waits for it any more
      stop();
      const error = new Error(`loadFavor: the threaded build (threads: ${threads}) did not start within ${ms} ms (loadTimeout): `
        + 'its workers did not load — in a browser, check the console and that a Content-Security-Policy allows '
        + 'worker-src blob:; or load with { threads: 1 }');
      error.code = 'FAVOR_LOAD_TIMEOUT';
      reject(error);
    }, ms);
  });
  return Promise.race([started, expired]).finally(() => clearTimeout(timer));
}

const MAX_THREADS = 64;

// How many threads to use: { threads, threadsReason? }, the reason saying why only one.
// blocker: why this environment cannot run the threaded build, if it cannot. 'auto' starts one
// thread per core: each call then uses as many of them as its work is worth (the core's
// threads_for_work), so small calls do not wake them all.
export function chooseThreads(o, { simd, cores, blocker }) {
  const requested = o.threads ?? 'auto';
  const one = (threadsReason) => ({ threads: 1, threadsReason });
  if (requested === 1) return one('requested');
  if (blocker) return one(blocker);
  if (!simd) return one('the threaded build needs WebAssembly SIMD');
  if (requested !== 'auto') return { threads: requested };
  // A given .wasm is one of the builds, most likely a single-threaded one: keep to it.
  if (o.wasmBinary !== undefined) return one('wasmBinary given (pass threads: n if it is a -threads.wasm)');
  if (o.wasmUrl !== undefined) return one('wasmUrl given (pass threads: n if it is a -threads.wasm)');
  const threads = Math.min(Math.max(1, cores | 0), MAX_THREADS);
  return threads > 1 ? { threads } : one('one CPU core');
}

// Emscripten warns on stderr at every blocking join on the main thread. The join is short
// (the caller takes a share of the work), so the warning is noise here.
export function printErr(text) {
  if (!String(text).startsWith('Blocking on the main thread')) console.error(text);
}

export function checkWasmBinary(binary) {
  if (binary === undefined) return undefined;
  if (!(binary instanceof ArrayBuffer || ArrayBuffer.isView(binary))) {
    throw typeError(`wasmBinary: expected an ArrayBuffer or Uint8Array, got ${describe(binary)}`);
  }
  // The module's magic bytes '\0asm': anything else would only fail inside the Emscripten glue.
  const bytes = binary instanceof ArrayBuffer ? new Uint8Array(binary, 0, Math.min(4, binary.byteLength))
    : new Uint8Array(binary.buffer, binary.byteOffset, Math.min(4, binary.byteLength));
  if (bytes.length < 4 || bytes[0] !== 0 || bytes[1] !== 0x61 || bytes[2] !== 0x73 || bytes[3] !== 0x6d) {
    throw typeError(`wasmBinary: expected the bytes of a WebAssembly module (starting with \\0asm), got [${Array.from(bytes).join(', ')}${binary.byteLength > 4 ? ', ...' : ''}]`);
  }
  return binary;
}
