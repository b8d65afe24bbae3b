// loadFavor({ worker: true }): the same API with every call run in a worker and returning a
// Promise. Inputs are copied to the worker (or transferred with { transfer: true }: the caller's
// arrays are then detached); outputs are transferred back. Feature maps, causal states and packed
// matrices live in the worker behind proxies with dispose(); errors reject as the synchronous API
// throws them.
// No call throws synchronously or stays pending forever: if the worker ends or fails, every
// pending call rejects, and later ones too.
import { watchSilence } from './load-watch.js';
import { OBJECTS, OPERATIONS, optionsIndex } from './operations.js';
import { writeOut } from './out.js';
import { isTypedArray } from './validate.js';
import { encodeArgs } from './worker-messages.js';

const ERRORS = { TypeError, RangeError };
const disposeSymbol = Symbol.dispose ?? Symbol.for('Symbol.dispose');

// Runs a call with the arguments the table names (the API ignores any others: they never
// travel, so never fail to clone or get moved). A caller's options.out stays on this side: the
// worker gets an array of the same length to compute into (so it checks out as the synchronous
// API does, with the same errors), moves it back, and it is copied into out here. out's own
// buffer is never moved, even with transfer: true and out one of the inputs' arrays, so that the
// result always has somewhere to go. run(sent, output) sends (output: encodeArgs' { options, out });
// everything here, the caller's getters and Proxies included, runs inside the Promise: no call
// throws synchronously.
function forward(spec, args, run) {
  try {
    const sent = args.slice(0, spec.args.length);
    const at = spec.out ? optionsIndex(spec) : -1;
    const options = sent[at];
    const out = options !== null && typeof options === 'object' ? options.out : undefined;  // (inherited too, as the API reads it)
    if (!isTypedArray(out, Float32Array)) return run(sent);  // none, or one the worker rejects as the synchronous API does
    return run(sent, { options, out }).then((result) => writeOut(result.data, result.dims, out));
  } catch (e) {
    return Promise.reject(e);
  }
}

const WORKER_SCRIPT_HELP = 'its script, favor-attention/dist/favor-worker.js, must be served with the page '
  + '(bundlers that understand new Worker(new URL(..., import.meta.url)) emit it, e.g. Vite and webpack) '
  + 'and allowed by its Content-Security-Policy (worker-src); or load without worker: true';

/** The error for `new Worker(...)` throwing (a URL the page may not load, a CSP that forbids it). */
export function workerStartError(error) {
  return new Error(`loadFavor: the favor-attention worker could not be created (${error?.message ?? error}): ${WORKER_SCRIPT_HELP}`, { cause: error });
}

// A worker's error event or Error, as an Error that says what failed.
function failure(event, loading) {
  if (event instanceof Error) return loading ? new Error(`loadFavor: the favor-attention worker failed while loading: ${event.message}`, { cause: event }) : event;
  const detail = event?.message;  // an ErrorEvent for an uncaught exception; a plain Event when the script did not load
  if (loading) {
    return new Error(detail ? `loadFavor: the favor-attention worker failed while loading: ${detail}`
      : `loadFavor: the favor-attention worker did not start: ${WORKER_SCRIPT_HELP}`);
  }
  return new Error(`the favor-attention worker failed${detail ? `: ${detail}` : ''}; this instance has ended`);
}

// Why an instance ended: the error for calls pending then, and for later calls.
const DISPOSED = {
  pending: () => new Error('dispose: the favor instance was disposed while this call ran'),
  later: (op) => new TypeError(`${op}: this favor instance has been disposed (its worker has ended)`),
};
const failed = (error) => ({ pending: () => error, later: (op) => new Error(`${op}: ${error.message}`, { cause: error }) });

/**
 * The messaging with one worker: send() and end(). Built in a scope of its own: the
 * FinalizationRegistry callbacks and the worker's listeners hold it, and nothing in it may
 * hold the API object (or that object could never be collected).
 */
function connect({ worker, listen, terminate, keepAlive = () => {} }, transfer) {
  const waiting = new Map();
  const link = { ended: null, finished: null, loading: true, orphaned: false, watch: null, send, end };
  let nextId = 1;

  function end(reason) {
    if (link.ended) return link.finished;
    link.ended = reason;
    keepAlive(true);  // until the worker has ended: whoever awaits dispose() is waiting for it
    link.finished = Promise.resolve(terminate()).then(() => undefined, () => undefined);
    for (const w of waiting.values()) w.reject(reason.pending());
    waiting.clear();
    return link.finished;
  }

  listen((msg) => {
    link.watch?.heard();
    const w = waiting.get(msg?.id);
    if (!w) return;
    waiting.delete(msg.id);
    if (waiting.size === 0) keepAlive(false);
    if (msg.error) {
      const e = new (ERRORS[msg.error.name] ?? Error)(msg.error.message);
      if (msg.error.code !== undefined) e.code = msg.error.code;
      w.reject(e);
    } else {
      w.resolve(msg.value);
    }
    if (link.orphaned && waiting.size === 0) end(DISPOSED);
  }, (event) => end(failed(failure(event, link.loading))));

  const handleOf = (value) => (value instanceof WorkerObject ? handleFor(value, link) : undefined);

  // A buffer that cannot be moved (one marked untransferable in Node, a WebAssembly memory's)
  // fails the whole postMessage before anything is detached; the message then goes again with
  // every buffer copied by structured clone, as if transfer were off.
  function post(message, transferList) {
    try {
      worker.postMessage(message, transferList);
    } catch (e) {
      if (transferList.length === 0) throw e;
      worker.postMessage(message, []);
    }
  }

  // target: the id of the object a method runs on, or a function returning it (read after the
  // arguments, whose getters may have disposed that object; it throws if they have). output:
  // the call's options.out, sent as an array of its length and never moved (encodeArgs).
  function send(op, args = [], target, { transferInputs = transfer, output } = {}) {
    if (link.ended) return Promise.reject(link.ended.later(op));
    let message, targetId;
    try {
      message = encodeArgs(args, { transfer: transferInputs, handleOf, output });
      targetId = typeof target === 'function' ? target() : target;
    } catch (e) {
      return Promise.reject(e);
    }
    const id = nextId++;
    return new Promise((resolve, reject) => {
      try {
        post({ id, op, target: targetId, args: message.args }, message.transferList);
      } catch (e) {
        // Not cloneable (encodeArgs makes functions, symbols and classes cloneable; a Proxy
        // of an array, say, is not).
        reject(new TypeError(`${op}: an argument cannot be sent to the worker: ${e?.message ?? e}`));
        return;
      }
      waiting.set(id, { resolve, reject });
      if (waiting.size === 1) keepAlive(true);
    });
  }

  // An instance whose API object was collected (and so every proxy it made): end its worker
  // once its pending calls have settled (their callers still wait for them).
  link.orphan = () => {
    link.orphaned = true;
    if (waiting.size === 0) end(DISPOSED);
  };
  return link;
}

const instances = new FinalizationRegistry((link) => link.orphan());

// Proxies dropped without dispose(): their objects in the worker are freed once they are
// garbage-collected, as the synchronous API's FinalizationRegistry frees its feature maps.
const orphans = new FinalizationRegistry(({ link, id }) => {
  if (!link.ended) link.send('dispose', [], id).catch(() => {});
});

// handleFor(proxy, link): { id, kind } (id 0 once disposed) when the proxy belongs to `link`'s
// instance; callOn(proxy, op, args, options): a call on its object in the worker, rejected at once
// if it was disposed. Set in WorkerObject's static block: no member of a proxy a caller can reach.
let handleFor, callOn;

/** An object living in a worker (OBJECTS in operations.js); it works only with the instance that made it. */
class WorkerObject {
  #link;
  #id;
  #kind;
  #owner;  // the API object: keeps the instance (and its worker) alive while a proxy lives

  static {
    handleFor = (proxy, link) => (link === proxy.#link ? { id: proxy.#id, kind: proxy.#kind } : undefined);
    callOn = (proxy, op, args, options) => proxy.#call(op, args, options);
  }

  /** made: the worker's answer to the call that made it, { id, props } (props: its settings) */
  constructor(link, { id, props }, kind, owner) {
    this.#link = link;
    this.#id = id;
    this.#kind = kind;
    this.#owner = owner;
    orphans.register(this, { link, id }, this);
    Object.assign(this, props);
  }

  #call(op, args, options) {
    if (!this.#id) return Promise.reject(this.#disposedError(op));
    return this.#link.send(op, args, () => {
      if (!this.#id) throw this.#disposedError(op);  // by a getter of one of the arguments
      return this.#id;
    }, options);
  }

  // As the synchronous API's: a method's error names the method first, a getter's the object.
  #disposedError(op) {
    const { what, methods } = OBJECTS[this.#kind];
    return new TypeError(`${Object.hasOwn(methods, op) ? `${op}: ` : ''}${this.#kind}: this ${what} has been disposed`);
  }

  get disposed() { return !this.#id; }

  /** Frees the object in the worker; resolves once it is freed. Idempotent. */
  dispose() {
    if (!this.#id) return Promise.resolve();
    const id = this.#id;
    this.#id = 0;
    orphans.unregister(this);
    return this.#link.ended ? Promise.resolve() : this.#link.send('dispose', [], id).then(() => undefined, () => undefined);
  }

  [disposeSymbol]() { this.dispose(); }
}

// The proxy class of each kind, named as the synchronous API's class (an argument's class name
// is how that API tells another instance's object), its getters and methods calls to the worker.
const PROXIES = {};
for (const [kind, { name, getters, methods }] of Object.entries(OBJECTS)) {
  const ProxyClass = { [name]: class extends WorkerObject {
    constructor(link, made, owner) { super(link, made, kind, owner); }
  } }[name];
  for (const getter of getters) {
    Object.defineProperty(ProxyClass.prototype, getter, { get() { return callOn(this, getter, []); }, configurable: true });
  }
  for (const [method, spec] of Object.entries(methods)) {
    const { [method]: value } = spec.returns === 'this'
      ? { async [method](...args) { await forward(spec, args, (sent, output) => callOn(this, method, sent, { output })); return this; } }
      : { [method](...args) { return forward(spec, args, (sent, output) => callOn(this, method, sent, { output })); } };
    Object.defineProperty(ProxyClass.prototype, method, { value, writable: true, configurable: true });
  }
  PROXIES[kind] = ProxyClass;
}

// A worker that freezes while it loads (load-watch.js) is ended after WORKER_SILENT_MS of
// silence and a new one started, LOAD_ATTEMPTS workers in all.
const LOAD_ATTEMPTS = 3;
const WORKER_SILENT_MS = 10_000;

function load(link, loadOptions, silentMs) {
  // The load options' own buffers (a wasmBinary) are copied, never moved.
  const loaded = link.send('load', [loadOptions], undefined, { transferInputs: false });
  const frozen = new Promise((resolve, reject) => {
    link.watch = watchSilence(() => {
      const error = new Error(`loadFavor: the favor-attention worker stopped answering while it loaded (${LOAD_ATTEMPTS} workers `
        + `in a row, each silent for ${silentMs / 1000} s): Firefox can block a worker for good while it starts the threads `
        + 'of the threaded build; load with { threads: 1 } to start none');
      error.code = 'FAVOR_WORKER_FROZEN';
      reject(error);
    }, silentMs);
  });
  return Promise.race([loaded, frozen]).finally(() => {
    link.watch.stop();
    link.watch = null;
  });
}

/**
 * The API over a worker that start() starts: { worker, listen, terminate, keepAlive? }.
 * listen(onMessage, onError) attaches the listeners; terminate() ends the worker (may return a
 * Promise); keepAlive(busy), in Node, lets the worker keep the process alive only while a call
 * is pending. A worker that freezes while loading is replaced (above); silentMs is for tests.
 */
export async function createWorkerApi(start, { loadOptions, transfer, silentMs = WORKER_SILENT_MS }) {
  let link, info;
  for (let attempt = 1; !info; attempt++) {
    link = connect(start(), transfer);
    try {
      ({ info } = await load(link, loadOptions, silentMs));
    } catch (error) {
      await link.end(failed(error));
      if (error.code !== 'FAVOR_WORKER_FROZEN' || attempt === LOAD_ATTEMPTS) throw error;
    }
  }
  link.loading = false;
  const send = (op, args, output) => link.send(op, args, undefined, { output });

  const api = {
    info: Object.freeze(info),
    /** Ends the worker (pending calls reject); resolves once it has ended. */
    dispose: () => link.end(DISPOSED),
  };
  for (const [op, spec] of Object.entries(OPERATIONS)) {
    const ProxyClass = PROXIES[spec.returns];
    api[op] = ProxyClass ? async (...args) => new ProxyClass(link, await forward(spec, args, (sent, output) => send(op, sent, output)), api)
      : (...args) => forward(spec, args, (sent, output) => send(op, sent, output));
  }
  // An instance dropped without dispose() (with every proxy it made) ends its worker once
  // garbage-collected, after its pending calls have settled.
  instances.register(api, link);
  return api;
}
