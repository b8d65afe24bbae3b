// Node entry: reads the .wasm from disk (Emscripten 3.1.6's ES6 glue cannot fetch in Node).
// With more than one thread it loads the pthreads build through web/node-worker-shim.js.
import { readFile } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';

import { createApi } from './api.js';
import { namedCall, typeError } from './errors.js';
import { checkLoadOptions, checkWasmBinary, chooseBuild, chooseThreads, printErr, threadedStartup } from './load.js';
import { withWorkerGlobal } from './node-worker-shim.js';
import { createWorkerApi } from './worker-client.js';

export { version } from './api.js';

export const loadFavor = namedCall('loadFavor', async (options) => {
  const o = checkLoadOptions(options);
  if (o.worker) return loadInWorker(o);
  const build = chooseBuild(o.simd);
  const simd = build !== 'scalar';
  const cores = availableParallelism();
  const { threads, threadsReason } = chooseThreads(o, {
    simd, cores,
    blocker: typeof SharedArrayBuffer === 'undefined' ? 'SharedArrayBuffer unavailable' : undefined,
  });
  const name = `favor-${build}${threads > 1 ? '-threads' : ''}`;
  let wasmBinary = checkWasmBinary(o.wasmBinary);
  let where = 'the wasmBinary given';  // for an error: what was instantiated
  if (!wasmBinary) {
    let location = new URL(`../dist/${name}.wasm`, import.meta.url);
    let source = null;  // the option that gave the location, if one did
    if (o.locateFile !== undefined) {
      if (typeof o.locateFile !== 'function') throw typeError('locateFile: expected a function (fileName) => path or URL');
      location = o.locateFile(`${name}.wasm`);
      source = 'locateFile';
    } else if (o.wasmUrl !== undefined) {
      location = o.wasmUrl;
      source = 'wasmUrl';
    }
    if (typeof location !== 'string' && !(location instanceof URL)) {
      throw typeError(`${source}: expected a path, a file: URL string or a URL, got ${typeof location}`);
    }
    const path = location instanceof URL || location.startsWith('file:') ? fileURLToPath(location) : location;
    where = path;
    try {
      wasmBinary = await readFile(path);
    } catch (error) {
      throw Object.assign(new Error(`loadFavor: could not read ${path}${source ? ` (${source})` : ''}: ${error?.message ?? error}`, { cause: error }), { code: error?.code });
    }
  }
  const fail = (error) => {
    throw new Error(`loadFavor: could not instantiate ${where}: ${error?.message ?? error}`, { cause: error });
  };
  if (threads === 1) {
    // Every single-thread module runs on the SIMD build's glue (the builds' glue differs only in
    // its file name).
    const { default: createModule } = await import('../dist/favor-simd.js');
    const Module = await createModule({ wasmBinary }).catch(fail);
    return createApi(Module, { threadsReason, tileRows: o.tileRows });
  }
  // The workers import the glue from mainScriptUrlOrBlob; the pool (threads - 1 workers, the
  // caller being the last thread) is started by the factory itself, hence the Worker global.
  const glue = new URL('../dist/favor-simd-threads.js', import.meta.url);
  const { default: createModule } = await import('../dist/favor-simd-threads.js');
  const { result, workers } = withWorkerGlobal(() => createModule({
    wasmBinary, mainScriptUrlOrBlob: glue.href, favorPoolSize: threads - 1, printErr,
  }));
  const stop = () => Promise.all(workers.map((w) => w.terminate()));
  let Module;
  try {
    Module = await threadedStartup(result, o, threads, stop);
  } catch (error) {
    if (error?.code === 'FAVOR_LOAD_TIMEOUT') throw error;  // its workers are already ended
    await stop();
    fail(error);
  }
  for (const worker of workers) worker.unref();  // loaded: from now on they never keep Node alive
  Module.setMaxThreads(threads);
  const terminate = () => { for (const worker of workers) worker.terminate(); };
  return createApi(Module, { threads, cores, terminate, tileRows: o.tileRows });
});

// { worker: true }: the module in a worker_threads worker, the API returning Promises.
async function loadInWorker(o) {
  const { Worker } = await import('node:worker_threads');
  const { worker, transfer, ...loadOptions } = o;
  if (loadOptions.wasmUrl instanceof URL) loadOptions.wasmUrl = loadOptions.wasmUrl.href;
  const start = () => {
    // No inherited flags (as the pthreads workers): some break a worker (--input-type of node -e).
    const thread = new Worker(new URL('./favor-worker-node.js', import.meta.url), { execArgv: [] });
    return {
      worker: thread,
      listen: (onMessage, onError) => {
        thread.on('message', onMessage);
        thread.on('error', onError);
        thread.on('exit', () => onError(new Error('the favor-attention worker has ended')));
      },
      terminate: () => thread.terminate(),
      // Like a pending timer: a call in flight keeps Node running; an idle worker never does.
      keepAlive: (busy) => (busy ? thread.ref() : thread.unref()),
    };
  };
  return createWorkerApi(start, { loadOptions, transfer });
}
