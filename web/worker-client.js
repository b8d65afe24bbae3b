// loadFavor({ worker: true }): the same API with every call run in a worker and returning a
// Promise. Inputs are copied to the worker (or transferred with { transfer: true }: the caller's
// arrays are then detached); outputs are transferred back. Feature maps and causal states live in
// the worker behind proxies with dispose(); errors reject as the synchronous API throws them.
const ERRORS = { TypeError, RangeError };
const disposeSymbol = Symbol.dispose ?? Symbol.for('Symbol.dispose');

export async function createWorkerApi(worker, { loadOptions, transfer, listen, terminate }) {
  let nextId = 1, ended = false;
  const waiting = new Map();
  listen((msg) => {
    const w = waiting.get(msg.id);
    if (!w) return;
    waiting.delete(msg.id);
    if (msg.error) {
      const e = new (ERRORS[msg.error.name] ?? Error)(msg.error.message);
      if (msg.error.code) e.code = msg.error.code;
      w.reject(e);
    } else {
      w.resolve(msg.value);
    }
  }, (error) => {
    for (const w of waiting.values()) w.reject(error);
    waiting.clear();
  });

  // Buffers of the tensors in args, for transfer.
  const buffers = (args, list = []) => {
    for (const a of args) {
      if (a && typeof a === 'object') {
        if (ArrayBuffer.isView(a.data) && !list.includes(a.data.buffer)) list.push(a.data.buffer);
        else if (!ArrayBuffer.isView(a) && !Array.isArray(a)) buffers(Object.values(a), list);
      }
    }
    return list;
  };
  const encode = (value) => {
    if (value instanceof WorkerObject) return { __handle: value.handleId('featureMap') };
    if (value && typeof value === 'object' && !ArrayBuffer.isView(value) && !Array.isArray(value) && !('data' in value)) {
      return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, encode(v)]));
    }
    return value;
  };
  function send(op, args = [], target) {
    if (ended) return Promise.reject(new Error(`${op}: this favor instance has been disposed (its worker has ended)`));
    let encoded;
    try {
      encoded = args.map(encode);
    } catch (e) {
      return Promise.reject(e);
    }
    const id = nextId++;
    return new Promise((resolve, reject) => {
      waiting.set(id, { resolve, reject });
      worker.postMessage({ id, op, target, args: encoded }, transfer ? buffers(args) : []);
    });
  }

  class WorkerObject {
    #id;
    #name;
    constructor(id, name) {
      this.#id = id;
      this.#name = name;
    }
    handleId(name = this.#name) {
      if (!this.#id) throw new TypeError(`${name}: this ${this.#name === 'state' ? 'causal state' : 'feature map'} has been disposed`);
      return this.#id;
    }
    call(op, ...args) {
      try {
        return send(op, args, this.handleId());
      } catch (e) {
        return Promise.reject(e);
      }
    }
    get disposed() { return !this.#id; }
    dispose() {
      if (!this.#id) return Promise.resolve();
      const id = this.#id;
      this.#id = 0;
      return ended ? Promise.resolve() : send('dispose', [], id);
    }
    [disposeSymbol]() { this.dispose(); }
  }

  class FeatureMap extends WorkerObject {
    constructor({ __handle, props }) {
      super(__handle, 'featureMap');
      Object.assign(this, props);
    }
    get projection() { return this.call('get', 'projection'); }
    async redraw(seed) {
      await this.call('redraw', seed);
      return this;
    }
  }

  class CausalState extends WorkerObject {
    constructor({ __handle, props }) {
      super(__handle, 'state');
      this.method = props.method;
    }
    get length() { return this.call('get', 'length'); }
    get stateBytes() { return this.call('get', 'stateBytes'); }
    append(q, k, v, options) { return this.call('append', q, k, v, options); }
    async reset() {
      await this.call('reset');
      return this;
    }
  }

  const { info } = await send('load', [loadOptions]);
  // The worker validates every argument as the synchronous API does.
  const call = (op) => (...args) => send(op, args);
  const api = {
    info,
    memory: () => send('memory'),
    dispose() {
      if (ended) return;
      ended = true;
      terminate();
      for (const w of waiting.values()) w.reject(new Error('dispose: the favor instance was disposed while this call ran'));
      waiting.clear();
    },
    createFeatureMap: async (options) => new FeatureMap(await send('createFeatureMap', [options])),
    createCausalState: async (options) => new CausalState(await send('createCausalState', [options])),
    codebookFromFeatureMap: (featureMap, options) => send('codebookFromFeatureMap', [featureMap, options]),
  };
  for (const op of ['exactAttention', 'attentionMatrix', 'favorAttention', 'favorAttentionMatrix', 'codebookAttention',
    'codebookAttentionMatrix', 'kmeans', 'randomCodebook', 'compare', 'outputRelativeError', 'matmul']) api[op] = call(op);
  return api;
}
