// Browser entry: finds the .wasm next to this package's files (bundlers see the literal
// new URL(..., import.meta.url) and emit the file), overridable by wasmUrl, wasmBinary or locateFile.
// The pthreads build is used only on cross-origin isolated pages (SharedArrayBuffer).
import { createApi } from './api.js';
import { namedCall, typeError } from './errors.js';
import { checkLoadOptions, checkWasmBinary, chooseBuild, chooseThreads, printErr, threadedStartup } from './load.js';
import { createWorkerApi, workerStartError } from './worker-client.js';

export { version } from './api.js';

function threadsBlocker() {
  if (globalThis.crossOriginIsolated !== true) return 'not cross-origin isolated (serve the page with COOP/COEP headers)';
  if (typeof SharedArrayBuffer === 'undefined') return 'SharedArrayBuffer unavailable';
  return undefined;
}

export const loadFavor = namedCall('loadFavor', async (options) => {
  const o = checkLoadOptions(options);
  if (o.worker) return loadInWorker(o);
  const build = chooseBuild(o.simd);
  const simd = build !== 'scalar';
  const cores = globalThis.navigator?.hardwareConcurrency ?? 1;
  const { threads, threadsReason } = chooseThreads(o, { simd, cores, blocker: threadsBlocker() });
  const wasmBinary = checkWasmBinary(o.wasmBinary);
  if (o.locateFile !== undefined && typeof o.locateFile !== 'function') {
    throw typeError('locateFile: expected a function (fileName) => URL');
  }
  if (o.wasmUrl !== undefined && typeof o.wasmUrl !== 'string' && !(o.wasmUrl instanceof URL)) {
    throw typeError('wasmUrl: expected a URL or a string');
  }
  if (threads > 1) return loadThreaded(o, { build, threads, cores, wasmBinary });
  // Literal URLs: bundlers emit the files they name.
  const defaultUrl = build === 'relaxed' ? new URL('../dist/favor-relaxed.wasm', import.meta.url)
    : build === 'simd' ? new URL('../dist/favor-simd.wasm', import.meta.url)
      : new URL('../dist/favor-scalar.wasm', import.meta.url);
  const wasmFile = `favor-${build}.wasm`;
  // The glue asks for its own .wasm by name; every single-thread module runs on the SIMD build's
  // glue (the builds' glue differs only in its file name).
  const locateFile = () => String(o.locateFile ? o.locateFile(wasmFile) : (o.wasmUrl ?? defaultUrl));
  const { default: createModule } = await import('../dist/favor-simd.js');
  const Module = await createModule(wasmBinary ? { wasmBinary } : { locateFile }).catch((error) => {
    const where = wasmBinary ? 'the wasmBinary given' : locateFile();
    throw new Error(`loadFavor: could not load ${where}: ${error?.message ?? error}`, { cause: error });
  });
  return createApi(Module, { threadsReason, tileRows: o.tileRows });
});

// { worker: true }: the module in a dedicated Web Worker (a module worker), the API returning
// Promises; the page's thread never blocks on a call.
async function loadInWorker(o) {
  const { worker, transfer, ...loadOptions } = o;
  if (loadOptions.wasmUrl !== undefined) loadOptions.wasmUrl = new URL(loadOptions.wasmUrl, globalThis.location?.href).href;
  const start = () => {
    let thread;
    try {
      // The literal form bundlers recognize (Vite, webpack) and emit with the app; the file is
      // self-contained (scripts/bundle-worker.mjs), so any worker format they choose holds it.
      thread = new Worker(new URL('../dist/favor-worker.js', import.meta.url), { type: 'module' });
    } catch (error) {
      throw workerStartError(error);
    }
    return {
      worker: thread,
      listen: (onMessage, onError) => {
        thread.onmessage = (event) => onMessage(event.data);
        thread.onerror = (event) => onError(event);
      },
      terminate: () => thread.terminate(),
    };
  };
  return createWorkerApi(start, { loadOptions, transfer });
}

// The pthreads glue is loaded as a plain file, not bundled: its workers import the very same
// URL (mainScriptUrlOrBlob). The workers themselves are not started from a file URL: bundlers
// rewrite such a file (Vite's build inlines a small one as a data: URL, whose opaque origin
// cannot import the glue; Vite's dev server adds an `import` to it, a SyntaxError in a classic
// worker), and the pool then waits forever for workers that never load. They run a same-origin
// blob: copy of the worker script instead.
async function loadThreaded(o, { build, threads, cores, wasmBinary }) {
  const wasmFile = `favor-${build}-threads.wasm`;
  const defaults = {
    'favor-simd-threads.js': new URL('../dist/favor-simd-threads.js', import.meta.url),
    [wasmFile]: build === 'relaxed' ? new URL('../dist/favor-relaxed-threads.wasm', import.meta.url)
      : new URL('../dist/favor-simd-threads.wasm', import.meta.url),
  };
  // Both threaded modules run on the SIMD threads glue, which asks for its own .wasm by name.
  const locateFile = (name) => {
    const file = name.endsWith('.wasm') ? wasmFile : name;
    return String(file.endsWith('.worker.js') ? pthreadWorkerUrl()
      : o.locateFile ? o.locateFile(file)
        : file.endsWith('.wasm') && o.wasmUrl !== undefined ? o.wasmUrl : defaults[file]);
  };
  const glue = new URL(locateFile('favor-simd-threads.js'), globalThis.location?.href).href;
  let Module;
  try {
    const { default: createModule } = await import(/* @vite-ignore */ /* webpackIgnore: true */ glue);
    // The factory fills in this very object (PThread included) while the pool starts.
    const moduleArg = {
      ...(wasmBinary ? { wasmBinary } : {}), locateFile, mainScriptUrlOrBlob: glue, favorPoolSize: threads - 1, printErr,
    };
    Module = await threadedStartup(createModule(moduleArg), o, threads, () => moduleArg.PThread?.terminateAllThreads());
  } catch (error) {
    if (error?.code === 'FAVOR_LOAD_TIMEOUT') throw error;
    const where = wasmBinary ? 'the wasmBinary given' : locateFile(wasmFile);
    throw new Error(`loadFavor: could not load ${where} (threads: ${threads}): ${error?.message ?? error}`, { cause: error });
  }
  Module.setMaxThreads(threads);
  // The workers end as they are: Emscripten's terminateAllThreads() would also free their stacks
  // and thread-local memory to the heap while the pool's helpers may still be spinning on them.
  const terminate = () => {
    for (const worker of [...Module.PThread.runningWorkers, ...Module.PThread.unusedWorkers]) worker.terminate();
  };
  return createApi(Module, { threads, cores, terminate, tileRows: o.tileRows });
}

// dist/favor-simd-threads.worker.js as Emscripten 3.1.6 writes it, verbatim (a test checks it
// against the build): it imports the glue from the absolute URL in its 'load' message.
const PTHREAD_WORKER_SOURCE = "\"use strict\";var Module={};var initializedJS=false;function threadPrintErr(){var text=Array.prototype.slice.call(arguments).join(\" \");console.error(text)}function threadAlert(){var text=Array.prototype.slice.call(arguments).join(\" \");postMessage({cmd:\"alert\",text:text,threadId:Module[\"_pthread_self\"]()})}var err=threadPrintErr;self.alert=threadAlert;Module[\"instantiateWasm\"]=((info,receiveInstance)=>{var instance=new WebAssembly.Instance(Module[\"wasmModule\"],info);receiveInstance(instance);Module[\"wasmModule\"]=null;return instance.exports});self.onmessage=(e=>{try{if(e.data.cmd===\"load\"){Module[\"wasmModule\"]=e.data.wasmModule;Module[\"wasmMemory\"]=e.data.wasmMemory;Module[\"buffer\"]=Module[\"wasmMemory\"].buffer;Module[\"ENVIRONMENT_IS_PTHREAD\"]=true;(e.data.urlOrBlob?import(e.data.urlOrBlob):import(\"./favor-simd-threads.js\")).then(function(exports){return exports.default(Module)}).then(function(instance){Module=instance})}else if(e.data.cmd===\"run\"){Module[\"__performance_now_clock_drift\"]=performance.now()-e.data.time;Module[\"__emscripten_thread_init\"](e.data.threadInfoStruct,0,0,1);Module[\"establishStackSpace\"]();Module[\"PThread\"].receiveObjectTransfer(e.data);Module[\"PThread\"].threadInit();if(!initializedJS){Module[\"___embind_register_native_and_builtin_types\"]();initializedJS=true}try{var result=Module[\"invokeEntryPoint\"](e.data.start_routine,e.data.arg);if(Module[\"keepRuntimeAlive\"]()){Module[\"PThread\"].setExitStatus(result)}else{Module[\"__emscripten_thread_exit\"](result)}}catch(ex){if(ex!=\"unwind\"){if(ex instanceof Module[\"ExitStatus\"]){if(Module[\"keepRuntimeAlive\"]()){}else{Module[\"__emscripten_thread_exit\"](ex.status)}}else{throw ex}}}}else if(e.data.cmd===\"cancel\"){if(Module[\"_pthread_self\"]()){Module[\"__emscripten_thread_exit\"](-1)}}else if(e.data.target===\"setimmediate\"){}else if(e.data.cmd===\"processThreadQueue\"){if(Module[\"_pthread_self\"]()){Module[\"_emscripten_current_thread_process_queued_calls\"]()}}else if(e.data.cmd===\"processProxyingQueue\"){if(Module[\"_pthread_self\"]()){Module[\"_emscripten_proxy_execute_queue\"](e.data.queue)}}else{err(\"worker.js received unknown command \"+e.data.cmd);err(e.data)}}catch(ex){err(\"worker.js onmessage() captured an uncaught exception: \"+ex);if(ex&&ex.stack)err(ex.stack);if(Module[\"__emscripten_thread_crashed\"]){Module[\"__emscripten_thread_crashed\"]()}throw ex}});\n";

let pthreadWorker;
function pthreadWorkerUrl() {
  pthreadWorker ??= URL.createObjectURL(new Blob([PTHREAD_WORKER_SOURCE], { type: 'text/javascript' }));
  return pthreadWorker;
}
