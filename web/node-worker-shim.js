// Emscripten 3.1.6's pthread glue is browser code: it starts its pool with `new Worker(url)`
// and talks to each worker through onmessage/postMessage; the worker script expects `self`,
// `postMessage` and `onmessage`. This maps both sides onto node:worker_threads. The global
// Worker exists only while the glue starts its pool (withWorkerGlobal). Once the pool has
// loaded, the caller unref()s the workers so that they never keep Node running after the
// user's script is done (while loading they must stay ref'd: their replies resolve the load).
import { Worker as ThreadWorker } from 'node:worker_threads';

// Runs inside each worker thread (CommonJS, evaluated): browser worker globals, then the
// Emscripten worker script itself, evaluated indirectly so that its import() works.
const BOOTSTRAP = `
const { parentPort, workerData } = require('node:worker_threads');
const { readFileSync } = require('node:fs');
const { fileURLToPath } = require('node:url');
globalThis.self = globalThis;
globalThis.location = { href: workerData.url };
globalThis.importScripts = () => { throw new Error('importScripts is not available'); };
globalThis.postMessage = (data, transfer) => parentPort.postMessage(data, transfer);
parentPort.on('message', (data) => globalThis.onmessage?.({ data }));
(0, eval)(readFileSync(fileURLToPath(workerData.url), 'utf8'));
`;

class NodeWorker {
  static created = [];
  #thread;

  constructor(url) {
    // No inherited flags: BOOTSTRAP is CommonJS (--input-type=module of node -e would break it)
    // and workers reject per-process flags such as --expose-gc.
    this.#thread = new ThreadWorker(BOOTSTRAP, { eval: true, execArgv: [], workerData: { url: String(url) } });
    this.#thread.on('message', (data) => this.onmessage?.({ data }));
    this.#thread.on('error', (error) => this.onerror?.(error));
    NodeWorker.created.push(this);
  }

  unref() { this.#thread.unref(); }

  postMessage(data, transfer) { this.#thread.postMessage(data, transfer); }

  terminate() { return this.#thread.terminate(); }
}

// Calls fn() with globalThis.Worker = NodeWorker, then puts back what was there. Returns
// fn's result and the workers created meanwhile.
export function withWorkerGlobal(fn) {
  const saved = Object.getOwnPropertyDescriptor(globalThis, 'Worker');
  globalThis.Worker = NodeWorker;
  const first = NodeWorker.created.length;
  try {
    return { result: fn(), workers: NodeWorker.created.splice(first) };
  } finally {
    if (saved) Object.defineProperty(globalThis, 'Worker', saved);
    else delete globalThis.Worker;
  }
}
