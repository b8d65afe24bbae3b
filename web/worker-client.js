// loadFavor({ worker: true }): the same API with every call run in a worker and returning a
// Promise. Inputs are copied to the worker (or transferred with { transfer: true }: the caller's
// arrays are then detached); outputs are transferred back. Feature maps and causal states live in
// the worker behind proxies with dispose(); errors reject as the synchronous API throws them.
// No call throws synchronously or stays pending forever: if the worker ends or fails, every
// pending call rejects, and later ones too.
import { encodeArgs } from './worker-messages.js';

const ERRORS = { TypeError, RangeError };
const disposeSymbol = Symbol.dispose ?? Symbol.for('Symbol.dispose');
const API_CALLS = ['exactAttention', 'attentionMatrix', 'favorAttention', 'favorAttentionMatrix', 'codebookAttention',
  'codebookAttentionMatrix', 'kmeans', 'randomCodebook', 'compare', 'outputRelativeError', 'matmul', 'codebookFromFeatureMap'];

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

export async function createWorkerApi(worker, { loadOptions, transfer, listen, terminate }) {
  // Shared with the FinalizationRegistry callbacks, which must not hold the API object itself.
  const link = { nextId: 1, waiting: new Map(), ended: null, loading: true, orphaned: false, finished: null };

  const end = (reason) => {
    if (link.ended) return link.finished;
    link.ended = reason;
    link.finished = Promise.resolve(terminate()).then(() => undefined, () => undefined);
    for (const w of link.waiting.values()) w.reject(reason.pending());
    link.waiting.clear();
    return link.finished;
  };

  listen((msg) => {
    const w = link.waiting.get(msg?.id);
    if (!w) return;
    link.waiting.delete(msg.id);
    if (msg.error) {
      const e = new (ERRORS[msg.error.name] ?? Error)(msg.error.message);
      if (msg.error.code !== undefined) e.code = msg.error.code;
      w.reject(e);
    } else {
      w.resolve(msg.value);
    }
    if (link.orphaned && link.waiting.size === 0) end(ORPHANED);
  }, (event) => {
    const error = failure(event, link.loading);
    end({ pending: () => error, later: (op) => new Error(`${op}: ${error.message}`, { cause: error }) });
  });
  link.end = end;

  function send(op, args = [], target, transferInputs = transfer) {
    if (link.ended) return Promise.reject(link.ended.later(op));
    let message;
    try {
      message = encodeArgs(args, { transfer: transferInputs, handleOf });
    } catch (e) {
      return Promise.reject(e);
    }
    const id = link.nextId++;
    return new Promise((resolve, reject) => {
      try {
        worker.postMessage({ id, op, target, args: message.args }, message.transferList);
      } catch (e) {
        // Not cloneable (encodeArgs makes functions, symbols and classes cloneable; a Proxy
        // of an array, say, is not).
        reject(new TypeError(`${op}: an argument cannot be sent to the worker: ${e?.message ?? e}`));
        return;
      }
      link.waiting.set(id, { resolve, reject });
    });
  }

  // Proxies dropped without dispose(): their objects in the worker are freed once they are
  // garbage-collected, as the synchronous API's FinalizationRegistry frees its feature maps.
  const orphans = new FinalizationRegistry((id) => {
    if (!link.ended) send('dispose', [], id).catch(() => {});
  });

  class WorkerObject {
    #id;
    #kind;
    #owner;  // keeps the API (and so the worker) alive while a proxy is

    constructor(id, kind, owner) {
      this.#id = id;
      this.#kind = kind;
      this.#owner = owner;
      orphans.register(this, id, this);
    }

    /** @internal { id, kind }, id 0 once disposed */
    handle() { return { id: this.#id, kind: this.#kind }; }

    /** @internal a call on this object in the worker, rejected at once if it was disposed */
    call(op, ...args) {
      if (!this.#id) {
        const what = this.#kind === 'state' ? 'causal state' : 'feature map';
        return Promise.reject(new TypeError(`${this.#kind}: this ${what} has been disposed`));
      }
      return send(op, args, this.#id);
    }

    get disposed() { return !this.#id; }

    /** Frees the object in the worker; resolves once it is freed. Idempotent. */
    dispose() {
      if (!this.#id) return Promise.resolve();
      const id = this.#id;
      this.#id = 0;
      orphans.unregister(this);
      return link.ended ? Promise.resolve() : send('dispose', [], id).then(() => undefined, () => undefined);
    }

    [disposeSymbol]() { this.dispose(); }
  }

  const handleOf = (value) => (value instanceof WorkerObject ? value.handle() : undefined);

  class FeatureMap extends WorkerObject {
    constructor({ id, props }, owner) {
      super(id, 'featureMap', owner);
      Object.assign(this, props);
    }

    get projection() { return this.call('projection'); }

    async redraw(seed) {
      await this.call('redraw', seed);
      return this;
    }
  }

  class CausalState extends WorkerObject {
    constructor({ id, props }, owner) {
      super(id, 'state', owner);
      this.method = props.method;
    }

    get length() { return this.call('length'); }

    get stateBytes() { return this.call('stateBytes'); }

    append(q, k, v, options) { return this.call('append', q, k, v, options); }

    async reset() {
      await this.call('reset');
      return this;
    }
  }

  let info;
  try {
    // The load options' own buffers (a wasmBinary) are copied, never moved.
    ({ info } = await send('load', [loadOptions], undefined, false));
  } catch (error) {
    await end({ pending: () => error, later: () => error });
    throw error;
  }
  link.loading = false;

  const api = {
    info: Object.freeze(info),
    memory: () => send('memory'),
    /** Ends the worker (pending calls reject); resolves once it has ended. */
    dispose: () => end(DISPOSED),
    createFeatureMap: async (options) => new FeatureMap(await send('createFeatureMap', [options]), api),
    createCausalState: async (options) => new CausalState(await send('createCausalState', [options]), api),
  };
  for (const op of API_CALLS) api[op] = (...args) => send(op, args);

  // An instance dropped without dispose() (and every proxy it made) ends its worker once
  // garbage-collected, after its pending calls have settled.
  instances.register(api, link);
  return api;
}

const DISPOSED = {
  pending: () => new Error('dispose: the favor instance was disposed while this call ran'),
  later: (op) => new TypeError(`${op}: this favor instance has been disposed (its worker has ended)`),
};
const ORPHANED = DISPOSED;  // nobody can call it any more

const instances = new FinalizationRegistry((link) => {
  link.orphaned = true;
  if (link.waiting.size === 0) link.end(ORPHANED);
});
