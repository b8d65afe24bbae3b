// The public API over an instantiated Emscripten module. Validates every argument in JS
// (types, dims, data length) before anything reaches wasm; the core validates the rest
// (shapes across q/k/v, finite values) and reports errors as values, turned into
// TypeError/RangeError here. Inputs are copied into the wasm heap once and freed after the
// call; outputs are copied out into fresh arrays that stay valid after later calls, or into the
// caller's options.out.

export const version = '0.1.0';

const KERNELS = ['positive', 'hyperbolic', 'trigonometric', 'relu', 'oprf'];
const SAMPLINGS = ['iid', 'orthogonal', 'orthogonal-fixed'];
const ASSIGNMENTS = ['hard', 'soft', 'gaussian'];
const STATE_METHODS = ['exact', 'favor', 'codebook'];
const ERROR_TYPES = { TypeError, RangeError };
const disposeSymbol = Symbol.dispose ?? Symbol.for('Symbol.dispose');

function describe(value) {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an Array';
  if (ArrayBuffer.isView(value)) return `a ${value.constructor.name}`;
  if (typeof value === 'object') return `an object (${value.constructor?.name ?? 'Object'})`;
  if (typeof value === 'string') return `the string '${value}'`;
  return `${typeof value} ${String(value)}`;
}

function checkOptions(options, name, allowed) {
  if (options === undefined) return {};
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw new TypeError(`${name}: expected an options object, got ${describe(options)}`);
  }
  for (const key of Object.keys(options)) {
    if (!allowed.includes(key)) {
      throw new TypeError(`${name}.${key}: unknown option (known: ${allowed.join(', ')})`);
    }
  }
  return options;
}

function checkBoolean(value, name) {
  if (value === undefined) return false;
  if (typeof value !== 'boolean') throw new TypeError(`${name}: expected a boolean, got ${describe(value)}`);
  return value;
}

function checkNumber(value, name) {
  if (typeof value !== 'number') throw new TypeError(`${name}: expected a number, got ${describe(value)}`);
  if (!Number.isFinite(value)) throw new RangeError(`${name}: expected a finite number, got ${value}`);
  return value;
}

function checkInteger(value, name, min, max = Number.MAX_SAFE_INTEGER) {
  checkNumber(value, name);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new RangeError(`${name}: expected an integer in [${min}, ${max}], got ${value}`);
  }
  return value;
}

function checkScale(value, name) {
  if (value === undefined) return NaN;  // the core's default, 1/sqrt(d)
  checkNumber(value, name);
  if (value <= 0) throw new RangeError(`${name}: expected a number > 0, got ${value}`);
  return value;
}

function checkChoice(value, name, choices, fallback) {
  if (value === undefined) return fallback;
  if (typeof value !== 'string') throw new TypeError(`${name}: expected one of '${choices.join("', '")}', got ${describe(value)}`);
  if (!choices.includes(value)) throw new RangeError(`${name}: expected one of '${choices.join("', '")}', got '${value}'`);
  return value;
}

export function checkTensor(tensor, name) {
  if (tensor === null || typeof tensor !== 'object' || ArrayBuffer.isView(tensor) || Array.isArray(tensor)) {
    throw new TypeError(`${name}: expected a tensor { data: Float32Array, dims: number[] }, got ${describe(tensor)}`);
  }
  const { data, dims } = tensor;
  if (!(data instanceof Float32Array)) {
    throw new TypeError(`${name}.data: expected a Float32Array, got ${describe(data)}`);
  }
  if (!Array.isArray(dims)) throw new TypeError(`${name}.dims: expected an array of integers, got ${describe(dims)}`);
  if (dims.length < 2) throw new RangeError(`${name}.dims: expected at least 2 dims ([..., rows, cols]), got [${dims}]`);
  let count = 1;
  for (const d of dims) {
    if (typeof d !== 'number') throw new TypeError(`${name}.dims: expected integers, got ${describe(d)}`);
    if (!Number.isInteger(d) || d < 1) throw new RangeError(`${name}.dims: expected integers >= 1, got [${dims}]`);
    count *= d;
  }
  if (data.length !== count) {
    throw new RangeError(`${name}: data has ${data.length} values but dims [${dims}] need ${count}`);
  }
  return tensor;
}

// options.out: a Float32Array the output is written into and returned as the result's data, so
// that repeated calls allocate nothing (a fresh 1 MiB array page-faults on every call: 3-4% of
// FAVOR+ at L = 4096). Its type is checked here, after every other argument; its length (the
// output's size) by the core once it knows the output's dims, before anything is computed or a
// causal state changes (outLength); it is written only when the call succeeds. It may be an
// input's array: inputs are copied into the wasm heap before the call.
export function checkOut(out, name = 'out') {
  if (out !== undefined && !(out instanceof Float32Array)) {
    throw new TypeError(`${name}: expected a Float32Array to write the output into, got ${describe(out)}`);
  }
  return out;
}

const outLength = (out) => (out ? out.length : NaN);  // NaN: no out

// The output (data with its dims, of out's length) written into out, as the result.
export function writeOut(data, dims, out) {
  out.set(data);
  return { data: out, dims };
}

// A key mask { data: Uint8Array, dims: [..., S] }: 1 = attend, 0 = ignore (values checked in wasm).
export function checkMask(mask, name = 'keyMask') {
  if (mask === null || typeof mask !== 'object' || ArrayBuffer.isView(mask) || Array.isArray(mask)) {
    throw new TypeError(`${name}: expected a mask { data: Uint8Array, dims: number[] } (1 = attend, 0 = ignore), got ${describe(mask)}`);
  }
  const { data, dims } = mask;
  if (!(data instanceof Uint8Array)) throw new TypeError(`${name}.data: expected a Uint8Array (1 = attend, 0 = ignore), got ${describe(data)}`);
  if (!Array.isArray(dims)) throw new TypeError(`${name}.dims: expected an array of integers, got ${describe(dims)}`);
  if (dims.length < 1) throw new RangeError(`${name}.dims: expected at least 1 dim ([..., S]), got []`);
  let count = 1;
  for (const d of dims) {
    if (typeof d !== 'number') throw new TypeError(`${name}.dims: expected integers, got ${describe(d)}`);
    if (!Number.isInteger(d) || d < 1) throw new RangeError(`${name}.dims: expected integers >= 1, got [${dims}]`);
    count *= d;
  }
  if (data.length !== count) throw new RangeError(`${name}: data has ${data.length} values but dims [${dims}] need ${count}`);
  return mask;
}

export function createApi(Module, { simd, threads = 1, threadsReason, terminate, tileRows: tileOption }) {
  const relaxedSimd = Module.relaxedSimd();
  const tileRows = Module.setTileRows(chooseTileRows(tileOption, { simd, relaxed: relaxedSimd }));
  // A view of the whole wasm memory, made at each use: growth replaces the buffer, and in the
  // pthreads build Module.HEAPF32 stays short when a worker thread grew the memory.
  const heapF32 = () => {
    const buffer = Module.wasmMemory?.buffer;
    return buffer && buffer !== Module.HEAPF32.buffer ? new Float32Array(buffer) : Module.HEAPF32;
  };

  const heapU8 = () => new Uint8Array(heapF32().buffer);
  let f64 = null;
  const heapF64 = () => {
    const buffer = heapF32().buffer;
    if (f64?.buffer !== buffer) f64 = new Float64Array(buffer);
    return f64;
  };

  // A tensor in the wasm heap carries its dims just before its data, as doubles: the rank at
  // data - 8, the dims before it (bindings.cpp dims_before). A pointer is then the whole argument:
  // a dims array read through Embind cost a crossing per element (~2 µs of a small call).
  function writeDims(ptr, dims) {
    const heap = heapF64(), rankAt = (ptr >>> 3) - 1;
    heap[rankAt] = dims.length;
    for (let i = 0; i < dims.length; ++i) heap[rankAt - dims.length + i] = dims[i];
  }

  const coreError = (fnName, e) => new (ERROR_TYPES[e.error] ?? Error)(`${fnName}: ${e.message}`);

  // Copies each tensor (Float32Array data) or mask (Uint8Array) into the wasm heap with its dims,
  // calls fn(pointers), frees, and rethrows core errors: a result of 0 from a call that makes a
  // tensor (its error kept for Module.lastError()), or an { error, message } value. A null entry
  // gives the pointer 0. Each copy starts on a cache line: malloc only guarantees 8 bytes here,
  // and the kernels' 16-byte loads of a row that straddle two lines cost up to 2x in the products.
  function call(fnName, tensors, fn) {
    // One allocation for all of them: each tensor's dims, then its data on a cache line.
    const offsets = [];
    let total = 0;
    for (const t of tensors) {
      if (t === null) {
        offsets.push(-1);
        continue;
      }
      const header = 8 * (t.dims.length + 1);
      const at = Math.ceil((total + header) / CACHE_LINE) * CACHE_LINE;
      offsets.push(at);
      total = at + t.data.length * t.data.BYTES_PER_ELEMENT;
    }
    const raw = total ? Module._malloc(total + CACHE_LINE - 8) >>> 0 : 0;  // every tensor has values: 0 means none
    if (total && raw === 0) throw new RangeError(`${fnName}: out of memory: ${total} bytes of input do not fit in the WebAssembly heap`);
    try {
      const base = raw + ((CACHE_LINE - (raw % CACHE_LINE)) % CACHE_LINE);
      const pointers = offsets.map((at, i) => {
        if (at < 0) return 0;
        const ptr = base + at, t = tensors[i];
        writeDims(ptr, t.dims);
        if (t.data instanceof Uint8Array) heapU8().set(t.data, ptr);
        else heapF32().set(t.data, ptr >>> 2);
        return ptr;
      });
      const result = fn(...pointers);
      if (result === 0) throw coreError(fnName, Module.lastError());
      if (result?.error) throw coreError(fnName, result);
      return result;
    } finally {
      if (raw) Module._free(raw);
    }
  }

  // The whole cache lines before an output's data that hold its dims (bindings.cpp header_bytes).
  const outputHeaderBytes = (rank) => Math.ceil((8 * (rank + 1)) / CACHE_LINE) * CACHE_LINE;

  // Takes ownership of an output from the core (its data pointer, its dims before it): copy out
  // (into out when given), free the block it starts.
  function takeTensor(ptr, out) {
    const heap = heapF64(), rankAt = (ptr >>> 3) - 1, rank = heap[rankAt];
    const dims = new Array(rank);
    let count = 1;
    for (let i = 0; i < rank; ++i) count *= dims[i] = heap[rankAt - rank + i];
    try {
      const data = heapF32().subarray(ptr >>> 2, (ptr >>> 2) + count);
      return out ? writeOut(data, dims, out) : { data: data.slice(), dims };
    } finally {
      Module._free(ptr - outputHeaderBytes(rank));
    }
  }

  const live = new FinalizationRegistry((handle) => handle.delete());

  // An object owning a wasm handle: freed by dispose(), or by the FinalizationRegistry once
  // garbage-collected undisposed.
  class Owned {
    #handle;

    constructor(handle) {
      this.#handle = handle;
      live.register(this, handle, this);
    }

    /** @internal the wasm handle, or a TypeError naming `name` once disposed */
    ownHandle(name, what) {
      if (!this.#handle) throw new TypeError(`${name}: this ${what} has been disposed`);
      return this.#handle;
    }

    get disposed() { return !this.#handle; }

    dispose() {
      if (!this.#handle) return;
      live.unregister(this);
      this.#handle.delete();
      this.#handle = null;
    }

    [disposeSymbol]() { this.dispose(); }
  }

  class FeatureMap extends Owned {
    /** @internal the wasm handle, or a TypeError if disposed */
    handle(name = 'featureMap') { return this.ownHandle(name, 'feature map'); }

    get dim() { return this.handle().dim(); }
    get features() { return this.handle().features(); }
    get numFeatures() { return this.handle().numFeatures(); }
    get kernel() { return this.handle().kernel(); }
    get sampling() { return this.handle().sampling(); }
    get epsilon() { return this.handle().epsilon(); }
    get rho() { const r = this.handle().rho(); return Number.isNaN(r) ? undefined : r; }

    get projection() {
      const handle = this.handle();
      return { data: new Float32Array(handle.projection()), dims: [handle.features(), handle.dim()] };
    }

    redraw(seed) {
      const handle = this.handle();
      checkInteger(seed, 'seed', 0);
      const result = handle.redraw(seed);
      if (result?.error) throw new ERROR_TYPES[result.error](`redraw: ${result.message}`);
      return this;
    }
  }

  function createFeatureMap(options) {
    const o = checkOptions(options, 'options', ['dim', 'features', 'kernel', 'sampling', 'seed', 'projection', 'epsilon', 'rho']);
    if (options === undefined) throw new TypeError('createFeatureMap: expected an options object with dim and features (or projection)');
    const kernel = checkChoice(o.kernel, 'kernel', KERNELS, 'positive');
    const sampling = checkChoice(o.sampling, 'sampling', SAMPLINGS, 'orthogonal');
    const epsilon = o.epsilon === undefined ? 1e-3 : checkNumber(o.epsilon, 'epsilon');
    if (epsilon < 0) throw new RangeError(`epsilon: expected a number >= 0, got ${epsilon}`);
    const seed = o.seed === undefined ? 0 : checkInteger(o.seed, 'seed', 0);
    let rho = NaN;
    if (o.rho !== undefined) {
      rho = checkNumber(o.rho, 'rho');
      if (rho < 0) throw new RangeError(`rho: expected a number >= 0, got ${rho}`);
      if (kernel !== 'oprf') throw new RangeError(`rho: only the 'oprf' kernel takes a fixed rho, got kernel '${kernel}'`);
    }
    const handle = new Module.FeatureMap();
    try {
      let result;
      if (o.projection !== undefined) {
        const w = checkTensor(o.projection, 'projection');
        if (w.dims.length !== 2) throw new RangeError(`projection: expected dims [m, d], got [${w.dims}]`);
        if (o.features !== undefined && checkInteger(o.features, 'features', 1) !== w.dims[0]) {
          throw new RangeError(`features: ${o.features} does not match the projection's m = ${w.dims[0]}`);
        }
        if (o.dim !== undefined && checkInteger(o.dim, 'dim', 1) !== w.dims[1]) {
          throw new RangeError(`dim: ${o.dim} does not match the projection's d = ${w.dims[1]}`);
        }
        result = call('createFeatureMap', [w], (ptr) => handle.initProjection(ptr, w.dims[0], w.dims[1], kernel, sampling, epsilon, rho));
      } else {
        if (o.dim === undefined) throw new TypeError('dim: required (the head dimension d) unless a projection is given');
        if (o.features === undefined) throw new TypeError('features: required (the number of random features m) unless a projection is given');
        const dim = checkInteger(o.dim, 'dim', 1, 1 << 20);
        const features = checkInteger(o.features, 'features', 1, 1 << 24);
        result = handle.init(dim, features, kernel, sampling, seed, epsilon, rho);
      }
      if (result?.error) throw new ERROR_TYPES[result.error](`createFeatureMap: ${result.message}`);
    } catch (e) {
      handle.delete();
      throw e;
    }
    return new FeatureMap(handle);
  }

  function attentionArgs(name, q, k, v, options, extra = []) {
    const o = checkOptions(options, `${name} options`, ['causal', 'scale', 'keyMask', 'out', ...extra]);
    checkTensor(q, 'q');
    checkTensor(k, 'k');
    if (v !== null) checkTensor(v, 'v');
    const mask = o.keyMask === undefined ? null : checkMask(o.keyMask);
    return {
      o, causal: checkBoolean(o.causal, 'causal'), scale: checkScale(o.scale, 'scale'), mask,
      out: checkOut(o.out),
    };
  }

  class CausalState extends Owned {
    #method;

    constructor(handle, method) {
      super(handle);
      this.#method = method;
    }

    #live() { return this.ownHandle('state', 'causal state'); }

    get method() { this.#live(); return this.#method; }
    get length() { return this.#live().length(); }
    get stateBytes() { return this.#live().stateBytes(); }

    append(q, k, v, options) {
      const handle = this.#live();
      const o = checkOptions(options, 'append options', ['keyMask', 'out']);
      checkTensor(q, 'q');
      checkTensor(k, 'k');
      checkTensor(v, 'v');
      const mask = o.keyMask === undefined ? null : checkMask(o.keyMask);
      const out = checkOut(o.out);
      return takeTensor(call('append', [q, k, v, mask], (qp, kp, vp, mp) =>
        handle.append(qp, kp, vp, mp, outLength(out))), out);
    }

    reset() {
      this.#live().reset();
      return this;
    }
  }

  // b [k, m] (or [m, k] with transposeB) checked and packed once in wasm memory, for many
  // products: favor.matmul(a, packed) then skips checking, copying and packing b at each call.
  class PackedMatrix extends Owned {
    #dims;
    #transposeB;

    constructor(handle, dims, transposeB) {
      super(handle);
      this.#dims = dims;
      this.#transposeB = transposeB;
    }

    /** @internal the wasm handle, or a TypeError if disposed */
    handle(name = 'matrix') { return this.ownHandle(name, 'packed matrix'); }

    get dims() { this.handle(); return [...this.#dims]; }
    get transposeB() { this.handle(); return this.#transposeB; }
    get bytes() { return this.handle().bytes(); }
  }

  function packMatrix(b, options) {
    checkTensor(b, 'b');
    const o = checkOptions(options, 'packMatrix options', ['transposeB']);
    const transposeB = checkBoolean(o.transposeB, 'transposeB');
    const handle = new Module.PackedMatrix();
    try {
      call('packMatrix', [b], (bp) => handle.init(bp, transposeB));
    } catch (e) {
      handle.delete();
      throw e;
    }
    return new PackedMatrix(handle, [...b.dims], transposeB);
  }

  function createCausalState(options) {
    if (options === undefined) throw new TypeError("createCausalState: expected an options object with method ('exact', 'favor' or 'codebook')");
    const o = checkOptions(options, 'createCausalState options', ['method', 'scale', 'featureMap', 'codebook', 'assignment', 'temperature', 'chunk']);
    if (o.method === undefined) throw new TypeError("method: required ('exact', 'favor' or 'codebook')");
    const method = checkChoice(o.method, 'method', STATE_METHODS, 'exact');
    const scale = checkScale(o.scale, 'scale');
    const chunk = o.chunk === undefined ? NaN : checkInteger(o.chunk, 'chunk', 1, 1 << 20);
    const allowed = { exact: ['method', 'scale'], favor: ['method', 'scale', 'featureMap', 'chunk'],
      codebook: ['method', 'scale', 'codebook', 'assignment', 'temperature', 'chunk'] }[method];
    for (const key of Object.keys(o)) {
      if (!allowed.includes(key)) throw new TypeError(`createCausalState options.${key}: not an option of method '${method}' (its options: ${allowed.join(', ')})`);
    }
    const handle = new Module.CausalState();
    try {
      let result;
      if (method === 'exact') {
        result = handle.initExact(scale);
      } else if (method === 'favor') {
        result = handle.initFavor(featureMapOf(o), scale, chunk);
      } else {
        const { codebook, assignment, temperature } = codebookArgs(o);
        result = call('createCausalState', [codebook], (cp) => handle.initCodebook(cp, assignment, temperature, scale, chunk));
      }
      if (result?.error) throw new ERROR_TYPES[result.error](`createCausalState: ${result.message}`);
    } catch (e) {
      handle.delete();
      throw e;
    }
    return new CausalState(handle, method);
  }

  function codebookArgs(o) {
    if (o.codebook === undefined) throw new TypeError('codebook: required (a [c, d] tensor, e.g. from favor.kmeans)');
    const codebook = checkTensor(o.codebook, 'codebook');
    const assignment = checkChoice(o.assignment, 'assignment', ASSIGNMENTS, 'hard');
    const temperature = o.temperature === undefined ? 1 : checkNumber(o.temperature, 'temperature');
    if (temperature <= 0) throw new RangeError(`temperature: expected a number > 0, got ${temperature}`);
    return { codebook, assignment, temperature };
  }

  function featureMapOf(o) {
    if (o.featureMap === undefined) throw new TypeError('featureMap: required (create one with favor.createFeatureMap)');
    if (!(o.featureMap instanceof FeatureMap)) {
      throw new TypeError(`featureMap: expected a FeatureMap from this instance's createFeatureMap, got ${describe(o.featureMap)}`);
    }
    return o.featureMap.handle('featureMap');
  }

  return {
    info: Object.freeze({ version, simd, relaxedSimd, threads, tileRows, ...(threadsReason && { threadsReason }) }),

    // Ends the worker threads now (they never keep Node alive, but hold memory). The instance
    // keeps working on one thread.
    dispose() {
      if (!terminate) return;
      Module.setMaxThreads(1);
      terminate();
      terminate = undefined;
    },

    // Diagnostics: the size of the wasm memory (it grows, never shrinks) and the bytes malloc has
    // in use inside it (inputs are freed after each call; feature maps hold their W until freed).
    memory() {
      return { heapBytes: heapF32().buffer.byteLength, usedBytes: Module.heapUsed() };
    },

    exactAttention(q, k, v, options) {
      const { causal, scale, mask, out } = attentionArgs('exactAttention', q, k, v, options);
      return takeTensor(call('exactAttention', [q, k, v, mask], (qp, kp, vp, mp) =>
        Module.exactAttention(qp, kp, vp, causal, scale, mp, outLength(out))), out);
    },

    attentionMatrix(q, k, options) {
      const { causal, scale, mask, out } = attentionArgs('attentionMatrix', q, k, null, options);
      return takeTensor(call('attentionMatrix', [q, k, mask], (qp, kp, mp) =>
        Module.attentionMatrix(qp, kp, causal, scale, mp, outLength(out))), out);
    },

    createFeatureMap,

    favorAttention(q, k, v, options) {
      const { o, causal, scale, mask, out } = attentionArgs('favorAttention', q, k, v, options, ['featureMap', 'chunk']);
      const handle = featureMapOf(o);
      const chunk = o.chunk === undefined ? NaN : checkInteger(o.chunk, 'chunk', 1, 1 << 20);
      return takeTensor(call('favorAttention', [q, k, v, mask], (qp, kp, vp, mp) =>
        Module.favorAttention(handle, qp, kp, vp, causal, scale, chunk, mp, outLength(out))), out);
    },

    favorAttentionMatrix(q, k, options) {
      const { o, causal, scale, mask, out } = attentionArgs('favorAttentionMatrix', q, k, null, options, ['featureMap']);
      const handle = featureMapOf(o);
      return takeTensor(call('favorAttentionMatrix', [q, k, mask], (qp, kp, mp) =>
        Module.favorAttentionMatrix(handle, qp, kp, causal, scale, mp, outLength(out))), out);
    },

    codebookAttention(q, k, v, options) {
      const { o, causal, scale, mask, out } = attentionArgs('codebookAttention', q, k, v, options, ['codebook', 'assignment', 'temperature', 'chunk']);
      const { codebook, assignment, temperature } = codebookArgs(o);
      const chunk = o.chunk === undefined ? NaN : checkInteger(o.chunk, 'chunk', 1, 1 << 20);
      return takeTensor(call('codebookAttention', [codebook, q, k, v, mask], (cp, qp, kp, vp, mp) =>
        Module.codebookAttention(cp, qp, kp, vp, assignment, temperature, causal, scale, chunk, mp, outLength(out))), out);
    },

    codebookAttentionMatrix(q, k, options) {
      const { o, causal, scale, mask, out } = attentionArgs('codebookAttentionMatrix', q, k, null, options, ['codebook', 'assignment', 'temperature']);
      const { codebook, assignment, temperature } = codebookArgs(o);
      return takeTensor(call('codebookAttentionMatrix', [codebook, q, k, mask], (cp, qp, kp, mp) =>
        Module.codebookAttentionMatrix(cp, qp, kp, assignment, temperature, causal, scale, mp, outLength(out))), out);
    },

    createCausalState,

    packMatrix,

    matmul(a, b, options) {
      checkTensor(a, 'a');
      const packed = b instanceof PackedMatrix;
      // Another instance's (or, through the worker API, another worker's) packed matrix, by name.
      if (!packed && b?.constructor?.name === 'PackedMatrix') throw new TypeError("b: a packed matrix of another favor instance; pack b with this instance's packMatrix");
      if (!packed) checkTensor(b, 'b');
      const o = checkOptions(options, 'matmul options', ['transposeB', 'bias', 'out']);
      const transposeB = checkBoolean(o.transposeB, 'transposeB');
      if (packed && o.transposeB !== undefined) {
        throw new TypeError('transposeB: a packed b keeps the layout it was packed with (packMatrix\'s transposeB); omit it here');
      }
      let bias = null;
      if (o.bias !== undefined) {
        const t = o.bias;
        if (t === null || typeof t !== 'object' || !(t.data instanceof Float32Array) || !Array.isArray(t.dims)) {
          throw new TypeError(`bias: expected a tensor { data: Float32Array, dims: [m] }, got ${describe(t)}`);
        }
        if (t.dims.length !== 1 || t.data.length !== t.dims[0]) throw new RangeError(`bias: expected dims [m] matching its data, got [${t.dims}] with ${t.data.length} values`);
        bias = t;
      }
      const out = checkOut(o.out);  // last, as in every call
      if (packed) {
        const handle = b.handle('b');
        return takeTensor(call('matmul', [a, bias], (ap, cp) => handle.matmul(ap, cp, outLength(out))), out);
      }
      return takeTensor(call('matmul', [a, b, bias], (ap, bp, cp) =>
        Module.matmul(ap, bp, cp, transposeB, outLength(out))), out);
    },

    kmeans(k, options) {
      checkTensor(k, 'k');
      const o = checkOptions(options, 'kmeans options', ['clusters', 'iterations', 'seed']);
      if (o.clusters === undefined) throw new TypeError('clusters: required (the codebook size)');
      const clusters = checkInteger(o.clusters, 'clusters', 1, 1 << 24);
      const iterations = o.iterations === undefined ? 25 : checkInteger(o.iterations, 'iterations', 0, 1 << 20);
      const seed = o.seed === undefined ? 0 : checkInteger(o.seed, 'seed', 0);
      return takeTensor(call('kmeans', [k], (kp) => Module.kmeans(kp, clusters, iterations, seed)));
    },

    randomCodebook(options) {
      const o = checkOptions(options, 'randomCodebook options', ['clusters', 'dim', 'seed', 'sigma']);
      if (o.clusters === undefined || o.dim === undefined) throw new TypeError('randomCodebook: clusters and dim are required');
      const clusters = checkInteger(o.clusters, 'clusters', 1, 1 << 24);
      const dim = checkInteger(o.dim, 'dim', 1, 1 << 20);
      const seed = o.seed === undefined ? 0 : checkInteger(o.seed, 'seed', 0);
      const sigma = o.sigma === undefined ? 1 : checkNumber(o.sigma, 'sigma');
      if (sigma <= 0) throw new RangeError(`sigma: expected a number > 0, got ${sigma}`);
      return takeTensor(call('randomCodebook', [], () => Module.randomCodebook(clusters, dim, seed, sigma)));
    },

    codebookFromFeatureMap(featureMap, options) {
      if (!(featureMap instanceof FeatureMap)) {
        throw new TypeError(`featureMap: expected a FeatureMap from this instance's createFeatureMap, got ${describe(featureMap)}`);
      }
      const o = checkOptions(options, 'codebookFromFeatureMap options', ['scale']);
      const w = featureMap.projection;
      const scale = o.scale === undefined ? 1 / Math.sqrt(w.dims[1]) : checkScale(o.scale, 'scale');
      const root = Math.sqrt(scale);
      return { data: w.data.map((x) => x / root), dims: w.dims };
    },

    compare(exactMatrix, approxMatrix) {
      checkTensor(exactMatrix, 'exactMatrix');
      checkTensor(approxMatrix, 'approxMatrix');
      const { mse, relFrobenius, maxAbs, meanRowKL } = call('compare', [exactMatrix, approxMatrix], (ep, ap) =>
        Module.compare(ep, ap));
      return { mse, relFrobenius, maxAbs, meanRowKL };
    },

    outputRelativeError(exact, approx) {
      checkTensor(exact, 'exact');
      checkTensor(approx, 'approx');
      return call('outputRelativeError', [exact, approx], (ep, ap) =>
        Module.outputRelativeError(ep, ap)).value;
    },
  };
}

// A 1-function module using one SIMD instruction: validates only where wasm SIMD exists.
const SIMD_PROBE = new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0, 1, 5, 1, 96, 0, 1, 123, 3, 2, 1, 0, 10, 10, 1, 8, 0, 65, 0, 253, 15, 253, 98, 11]);
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
    if (typeof option === 'string') throw new RangeError(`simd: expected ${SIMD_CHOICES}, got '${option}'`);
    throw new TypeError(`simd: expected ${SIMD_CHOICES}, got ${describe(option)}`);
  }
  if (option === false) return 'scalar';
  const simd = WebAssembly.validate(SIMD_PROBE);
  const relaxed = simd && WebAssembly.validate(RELAXED_PROBE);
  if (option === 'relaxed' && !relaxed) {
    throw new RangeError("simd: 'relaxed' was requested but this engine does not validate relaxed SIMD (f32x4.relaxed_madd: Chromium >= 114, Firefox >= 146, Node >= 22)");
  }
  if ((option === true || option === 'fixed') && !simd) {
    throw new RangeError(`simd: ${option === true ? 'true' : "'fixed'"} was requested but this engine does not support WebAssembly SIMD`);
  }
  if (option === 'fixed') return 'simd';
  return relaxed ? 'relaxed' : simd ? 'simd' : 'scalar';
}

const TILE_ROWS = [2, 4, 6];  // loadFavor's tileRows besides 'auto' (chooseTileRows)

export function checkLoadOptions(options) {
  const o = checkOptions(options, 'loadFavor options', ['wasmUrl', 'wasmBinary', 'simd', 'locateFile', 'threads', 'loadTimeout', 'worker', 'transfer', 'tileRows']);
  checkBoolean(o.worker, 'worker');
  checkBoolean(o.transfer, 'transfer');
  if (o.transfer && !o.worker) throw new RangeError('transfer: only with worker: true (inputs move to the worker)');
  if (o.worker && o.locateFile !== undefined) throw new TypeError('locateFile: a function cannot be sent to the worker; pass wasmUrl or wasmBinary');
  if (o.threads !== undefined && o.threads !== 'auto') {
    if (typeof o.threads !== 'number') throw new TypeError(`threads: expected 'auto' or an integer >= 1, got ${describe(o.threads)}`);
    checkInteger(o.threads, 'threads', 1, MAX_THREADS);
  }
  if (o.loadTimeout !== undefined) checkInteger(o.loadTimeout, 'loadTimeout', 1, MAX_TIMEOUT_MS);
  if (o.tileRows !== undefined && o.tileRows !== 'auto' && !TILE_ROWS.includes(o.tileRows)) {
    const Type = typeof o.tileRows === 'number' || typeof o.tileRows === 'string' ? RangeError : TypeError;
    throw new Type(`tileRows: expected 'auto', 2, 4 or 6, got ${typeof o.tileRows === 'string' ? `'${o.tileRows}'` : describe(o.tileRows)}`);
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
const CACHE_LINE = 64;  // bytes

// How many threads to use: { threads, threadsReason? }, the reason saying why only one.
// blocker: why this environment cannot run the threaded build, if it cannot; autoMax: the most
// threads 'auto' starts.
export function chooseThreads(o, { simd, cores, blocker, autoMax }) {
  const requested = o.threads ?? 'auto';
  const one = (threadsReason) => ({ threads: 1, threadsReason });
  if (requested === 1) return one('requested');
  if (blocker) return one(blocker);
  if (!simd) return one('the threaded build needs WebAssembly SIMD');
  if (requested !== 'auto') return { threads: requested };
  // A given .wasm is one of the builds, most likely a single-threaded one: keep to it.
  if (o.wasmBinary !== undefined) return one('wasmBinary given (pass threads: n if it is a -threads.wasm)');
  if (o.wasmUrl !== undefined) return one('wasmUrl given (pass threads: n if it is a -threads.wasm)');
  const threads = Math.min(Math.max(1, cores | 0), autoMax);
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
    throw new TypeError(`wasmBinary: expected an ArrayBuffer or Uint8Array, got ${describe(binary)}`);
  }
  // The module's magic bytes '\0asm': anything else would only fail inside the Emscripten glue.
  const bytes = binary instanceof ArrayBuffer ? new Uint8Array(binary, 0, Math.min(4, binary.byteLength))
    : new Uint8Array(binary.buffer, binary.byteOffset, Math.min(4, binary.byteLength));
  if (bytes.length < 4 || bytes[0] !== 0 || bytes[1] !== 0x61 || bytes[2] !== 0x73 || bytes[3] !== 0x6d) {
    throw new TypeError(`wasmBinary: expected the bytes of a WebAssembly module (starting with \\0asm), got [${Array.from(bytes).join(', ')}${binary.byteLength > 4 ? ', ...' : ''}]`);
  }
  return binary;
}
