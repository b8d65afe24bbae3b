// The public API over an instantiated Emscripten module: each call's arguments checked
// (validate.js), its tensors copied into the wasm heap and its output copied out (heap.js), and
// the objects that live in wasm (feature maps, causal states, packed matrices) as classes freed
// by dispose() or once garbage-collected. Outputs are fresh arrays that stay valid after later
// calls, or the caller's options.out (out.js). The calls are those of operations.js.
import { coreError, namedCall, rangeError, typeError } from './errors.js';
import { createHeap } from './heap.js';
import { chooseTileRows } from './load.js';
import { FIT_OPTIONS, OBJECTS, OPERATIONS } from './operations.js';
import { checkOut, outLength } from './out.js';
import {
  checkBoolean, checkChoice, checkInteger, checkMask, checkNumber, checkOptions, checkScale, checkTensor, describe, isTypedArray, lengthOf,
} from './validate.js';

export const version = '0.1.0';

const KERNELS = ['positive', 'hyperbolic', 'trigonometric', 'relu', 'oprf', 'sderf', 'aderf'];
// Kernels whose parameters come from the inputs unless fixed (rho, fit).
const FITTED_KERNELS = ['oprf', 'sderf', 'aderf'];
const SAMPLINGS = ['iid', 'orthogonal', 'orthogonal-fixed', 'simplex', 'structured'];
const ASSIGNMENTS = ['hard', 'soft', 'gaussian'];
const STATE_METHODS = ['exact', 'favor', 'codebook'];
const disposeSymbol = Symbol.dispose ?? Symbol.for('Symbol.dispose');
const NO_VALUES = Symbol('no v');  // attentionArgs for the calls with no v
// Floats of q, k and v together from which an attention call copies them in while it runs.
const ARRIVING_FLOATS = 2 ** 18;

export function createApi(Module, { threads = 1, cores = 0, threadsReason, terminate, tileRows: tileOption }) {
  // What the module is, not what was asked for (wasmUrl or wasmBinary may give another build).
  const simd = Module.simd(), relaxedSimd = Module.relaxedSimd();
  const tileRows = Module.setTileRows(chooseTileRows(tileOption, { simd, relaxed: relaxedSimd }));
  const { heapF32, call, takeTensor } = createHeap(Module);
  // Before an attention call copies its q, k and v (its first three tensors in heap.js call) in,
  // with helper threads: whether they are copied in while it runs (inputs large enough to be worth
  // the pieces); if not, the helpers it will take are woken first, so that they wake while the
  // inputs are copied rather than when the call starts, and where they have cores of their own,
  // those still spinning after the last call spin on (src/favor/threads/rouse.hpp).
  const prepareCall = ({ q, k, v }) => {
    if (threads < 2) return false;
    if (q.data.length + k.data.length + v.data.length >= ARRIVING_FLOATS) return true;
    Module.rouseThreads(cores);
    return false;
  };

  const live = new FinalizationRegistry((handle) => handle.delete());

  // handleOf(object, name, kind): an object's wasm handle, or a TypeError naming `name` once this
  // object of `kind` is disposed. Set in Owned's static block: the handle is no member a caller
  // can reach (and free behind the object's back).
  let handleOf;

  // An object owning a wasm handle: freed by dispose(), or by the FinalizationRegistry once
  // garbage-collected undisposed.
  class Owned {
    #handle;

    static {
      handleOf = (object, name, kind) => {
        if (!object.#handle) throw typeError(`${name}: this ${OBJECTS[kind].what} has been disposed`);
        return object.#handle;
      };
    }

    constructor(handle) {
      this.#handle = handle;
      live.register(this, handle, this);
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

  const mapHandle = (map, name = 'featureMap') => handleOf(map, name, 'featureMap');
  const matrixHandle = (matrix, name = 'matrix') => handleOf(matrix, name, 'matrix');

  class FeatureMap extends Owned {
    get dim() { return mapHandle(this).dim(); }
    get features() { return mapHandle(this).features(); }
    get numFeatures() { return mapHandle(this).numFeatures(); }
    get kernel() { return mapHandle(this).kernel(); }
    get sampling() { return mapHandle(this).sampling(); }
    get epsilon() { return mapHandle(this).epsilon(); }
    get rho() { const r = mapHandle(this).rho(); return Number.isNaN(r) ? undefined : r; }
    get dataDependent() { return mapHandle(this).dataDependent(); }

    get projection() {
      const handle = mapHandle(this);
      return { data: new Float32Array(handle.projection()), dims: [handle.features(), handle.dim()] };
    }

    redraw(seed) {
      const handle = mapHandle(this);
      checkInteger(seed, 'seed', 0);
      const result = handle.redraw(seed);
      if (result?.error) throw coreError('redraw', result);
      return this;
    }
  }

  function createFeatureMap(options) {
    const o = checkOptions(options, 'options', OPERATIONS.createFeatureMap.options);
    if (options === undefined) throw typeError('expected an options object with dim and features (or projection)');
    const kernel = checkChoice(o.kernel, 'kernel', KERNELS, 'positive');
    const sampling = checkChoice(o.sampling, 'sampling', SAMPLINGS, 'orthogonal');
    const epsilon = o.epsilon === undefined ? 1e-3 : checkNumber(o.epsilon, 'epsilon');
    if (epsilon < 0) throw rangeError(`epsilon: expected a number >= 0, got ${epsilon}`);
    const seed = o.seed === undefined ? 0 : checkInteger(o.seed, 'seed', 0);
    let rho = NaN;
    if (o.rho !== undefined) {
      rho = checkNumber(o.rho, 'rho');
      if (rho < 0) throw rangeError(`rho: expected a number >= 0, got ${rho}`);
      if (kernel !== 'oprf') throw rangeError(`rho: only the 'oprf' kernel takes a fixed rho, got kernel '${kernel}'`);
    }
    let fit = null;
    if (o.fit !== undefined) {
      const f = checkOptions(o.fit, 'fit', FIT_OPTIONS);
      if (!FITTED_KERNELS.includes(kernel)) {
        throw rangeError(`fit: only the ${FITTED_KERNELS.map((k) => `'${k}'`).join(', ')} kernels have parameters to fit, got kernel '${kernel}'`);
      }
      if (o.rho !== undefined) throw rangeError('fit: give either rho or fit, not both');
      fit = { q: checkTensor(f.q, 'fit.q'), k: checkTensor(f.k, 'fit.k'), scale: checkScale(f.scale, 'fit.scale') };
    }
    const handle = new Module.FeatureMap();
    try {
      let result;
      if (o.projection !== undefined) {
        const w = checkTensor(o.projection, 'projection');
        if (w.dims.length !== 2) throw rangeError(`projection: expected dims [m, d], got [${w.dims}]`);
        if (o.features !== undefined && checkInteger(o.features, 'features', 1) !== w.dims[0]) {
          throw rangeError(`features: ${o.features} does not match the projection's m = ${w.dims[0]}`);
        }
        if (o.dim !== undefined && checkInteger(o.dim, 'dim', 1) !== w.dims[1]) {
          throw rangeError(`dim: ${o.dim} does not match the projection's d = ${w.dims[1]}`);
        }
        result = call('createFeatureMap', [w], (ptr) => handle.initProjection(ptr, kernel, sampling, epsilon, rho));
      } else {
        if (o.dim === undefined) throw typeError('dim: required (the head dimension d) unless a projection is given');
        if (o.features === undefined) throw typeError('features: required (the number of random features m) unless a projection is given');
        const dim = checkInteger(o.dim, 'dim', 1, 1 << 20);
        const features = checkInteger(o.features, 'features', 1, 1 << 24);
        result = handle.init(dim, features, kernel, sampling, seed, epsilon, rho);
      }
      if (result?.error) throw coreError('createFeatureMap', result);
      if (fit) {
        for (const side of ['q', 'k']) {
          const dims = fit[side].dims;
          if (dims.at(-1) !== handle.dim()) {
            throw rangeError(`fit.${side}: expected dims [..., rows, ${handle.dim()}] (the map's d), got [${dims}]`);
          }
        }
        result = call('createFeatureMap', [fit.q, fit.k], (qp, kp) => handle.fit(qp, kp, fit.scale));
        if (result?.error) throw coreError('createFeatureMap', result);
      }
    } catch (e) {
      handle.delete();
      throw e;
    }
    return new FeatureMap(handle);
  }

  // v: the caller's (checked like q and k, so a null v is refused), or NO_VALUES for the calls
  // that return the matrix.
  function attentionArgs(name, q, k, v, options) {
    const o = checkOptions(options, 'options', OPERATIONS[name].options);
    const tensors = { q: checkTensor(q, 'q'), k: checkTensor(k, 'k'), v: v === NO_VALUES ? null : checkTensor(v, 'v') };
    const keyMask = o.keyMask;
    const mask = keyMask === undefined ? null : checkMask(keyMask);
    return {
      ...tensors, o, causal: checkBoolean(o.causal, 'causal'), scale: checkScale(o.scale, 'scale'), mask,
      out: checkOut(o.out),
    };
  }

  class CausalState extends Owned {
    #method;

    constructor(handle, method) {
      super(handle);
      this.#method = method;
    }

    #live() { return handleOf(this, 'state', 'state'); }

    get method() { this.#live(); return this.#method; }
    get length() { return this.#live().length(); }
    get stateBytes() { return this.#live().stateBytes(); }

    append(q, k, v, options) {
      this.#live();
      const o = checkOptions(options, 'options', OBJECTS.state.methods.append.options);
      const tq = checkTensor(q, 'q'), tk = checkTensor(k, 'k'), tv = checkTensor(v, 'v');
      const keyMask = o.keyMask;
      const mask = keyMask === undefined ? null : checkMask(keyMask);
      const out = checkOut(o.out);
      // The handle is taken once no more of the caller's code (getters) can run: one of them may
      // have disposed this state.
      return takeTensor(call('append', [tq, tk, tv, mask], (qp, kp, vp, mp) =>
        this.#live().append(qp, kp, vp, mp, outLength(out))), out);
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

    get dims() { matrixHandle(this); return [...this.#dims]; }
    get transposeB() { matrixHandle(this); return this.#transposeB; }
    get bytes() { return matrixHandle(this).bytes(); }
  }

  function packMatrix(b, options) {
    const tb = checkTensor(b, 'b');
    const o = checkOptions(options, 'options', OPERATIONS.packMatrix.options);
    const transposeB = checkBoolean(o.transposeB, 'transposeB');
    const handle = new Module.PackedMatrix();
    try {
      call('packMatrix', [tb], (bp) => handle.init(bp, transposeB));
    } catch (e) {
      handle.delete();
      throw e;
    }
    return new PackedMatrix(handle, [...tb.dims], transposeB);
  }

  function createCausalState(options) {
    if (options === undefined) throw typeError("expected an options object with method ('exact', 'favor' or 'codebook')");
    const o = checkOptions(options, 'options', OPERATIONS.createCausalState.options);
    if (o.method === undefined) throw typeError("method: required ('exact', 'favor' or 'codebook')");
    const method = checkChoice(o.method, 'method', STATE_METHODS, 'exact');
    const scale = checkScale(o.scale, 'scale');
    const chunk = o.chunk === undefined ? NaN : checkInteger(o.chunk, 'chunk', 1, 1 << 20);
    const windowLength = o.window === undefined ? NaN : checkInteger(o.window, 'window', 1);
    const allowed = { exact: ['method', 'scale', 'window'], favor: ['method', 'scale', 'featureMap', 'chunk', 'window'],
      codebook: ['method', 'scale', 'codebook', 'assignment', 'temperature', 'chunk'] }[method];
    for (const key of Object.keys(o)) {
      if (!allowed.includes(key)) throw typeError(`options.${key}: not an option of method '${method}' (its options: ${allowed.join(', ')})`);
    }
    const handle = new Module.CausalState();
    try {
      let result;
      if (method === 'exact') {
        result = handle.initExact(scale, windowLength);
      } else if (method === 'favor') {
        result = handle.initFavor(mapHandle(featureMapOf(o)), scale, chunk, windowLength);
      } else {
        const { codebook, assignment, temperature } = codebookArgs(o);
        result = call('createCausalState', [codebook], (cp) => handle.initCodebook(cp, assignment, temperature, scale, chunk));
      }
      if (result?.error) throw coreError('createCausalState', result);
    } catch (e) {
      handle.delete();
      throw e;
    }
    return new CausalState(handle, method);
  }

  function codebookArgs(o) {
    const codebookOption = o.codebook;
    if (codebookOption === undefined) throw typeError('codebook: required (a [c, d] tensor, e.g. from favor.kmeans)');
    const codebook = checkTensor(codebookOption, 'codebook');
    const assignment = checkChoice(o.assignment, 'assignment', ASSIGNMENTS, 'hard');
    const temperature = o.temperature === undefined ? 1 : checkNumber(o.temperature, 'temperature');
    if (temperature <= 0) throw rangeError(`temperature: expected a number > 0, got ${temperature}`);
    return { codebook, assignment, temperature };
  }

  // options.featureMap (read once), checked to be a live map of this instance. Its handle is
  // taken again when the call reaches wasm: a getter read in between may have disposed it.
  function featureMapOf(o) {
    const map = o.featureMap;
    if (map === undefined) throw typeError('featureMap: required (create one with favor.createFeatureMap)');
    if (!(map instanceof FeatureMap)) {
      throw typeError(`featureMap: expected a FeatureMap from this instance's createFeatureMap, got ${describe(map)}`);
    }
    mapHandle(map);
    return map;
  }

  // Each object's methods, as each call below: an error of the checks names the method first.
  for (const [Class, kind] of [[FeatureMap, 'featureMap'], [CausalState, 'state'], [PackedMatrix, 'matrix']]) {
    for (const method of Object.keys(OBJECTS[kind].methods)) Class.prototype[method] = namedCall(method, Class.prototype[method]);
  }

  const api = {
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

    // Diagnostics: the most threads a call has been given since the previous threadsUsed().
    threadsUsed() {
      return Module.threadsUsed();
    },

    exactAttention(q, k, v, options) {
      const a = attentionArgs('exactAttention', q, k, v, options), { causal, scale, mask, out } = a;
      const arriving = prepareCall(a);
      return takeTensor(call('exactAttention', [a.q, a.k, a.v, mask], (qp, kp, vp, mp) =>
        Module.exactAttention(qp, kp, vp, causal, scale, mp, outLength(out), arriving), arriving ? 3 : 0), out);
    },

    attentionMatrix(q, k, options) {
      const a = attentionArgs('attentionMatrix', q, k, NO_VALUES, options), { causal, scale, mask, out } = a;
      return takeTensor(call('attentionMatrix', [a.q, a.k, mask], (qp, kp, mp) =>
        Module.attentionMatrix(qp, kp, causal, scale, mp, outLength(out))), out);
    },

    createFeatureMap,

    favorAttention(q, k, v, options) {
      const a = attentionArgs('favorAttention', q, k, v, options), { o, causal, scale, mask, out } = a;
      const map = featureMapOf(o);
      const chunkOption = o.chunk;
      const chunk = chunkOption === undefined ? NaN : checkInteger(chunkOption, 'chunk', 1, 1 << 20);
      const arriving = prepareCall(a);
      return takeTensor(call('favorAttention', [a.q, a.k, a.v, mask], (qp, kp, vp, mp) =>
        Module.favorAttention(mapHandle(map), qp, kp, vp, causal, scale, chunk, mp, outLength(out), arriving),
      arriving ? 3 : 0), out);
    },

    favorAttentionMatrix(q, k, options) {
      const a = attentionArgs('favorAttentionMatrix', q, k, NO_VALUES, options), { o, causal, scale, mask, out } = a;
      const map = featureMapOf(o);
      return takeTensor(call('favorAttentionMatrix', [a.q, a.k, mask], (qp, kp, mp) =>
        Module.favorAttentionMatrix(mapHandle(map), qp, kp, causal, scale, mp, outLength(out))), out);
    },

    codebookAttention(q, k, v, options) {
      const a = attentionArgs('codebookAttention', q, k, v, options), { o, causal, scale, mask, out } = a;
      const { codebook, assignment, temperature } = codebookArgs(o);
      const chunkOption = o.chunk;
      const chunk = chunkOption === undefined ? NaN : checkInteger(chunkOption, 'chunk', 1, 1 << 20);
      const arriving = prepareCall(a);
      return takeTensor(call('codebookAttention', [a.q, a.k, a.v, codebook, mask], (qp, kp, vp, cp, mp) =>
        Module.codebookAttention(cp, qp, kp, vp, assignment, temperature, causal, scale, chunk, mp, outLength(out), arriving),
      arriving ? 3 : 0), out);
    },

    codebookAttentionMatrix(q, k, options) {
      const a = attentionArgs('codebookAttentionMatrix', q, k, NO_VALUES, options), { o, causal, scale, mask, out } = a;
      const { codebook, assignment, temperature } = codebookArgs(o);
      return takeTensor(call('codebookAttentionMatrix', [codebook, a.q, a.k, mask], (cp, qp, kp, mp) =>
        Module.codebookAttentionMatrix(cp, qp, kp, assignment, temperature, causal, scale, mp, outLength(out))), out);
    },

    createCausalState,

    packMatrix,

    matmul(a, b, options) {
      const ta = checkTensor(a, 'a');
      const packed = b instanceof PackedMatrix;
      // Another instance's (or, through the worker API, another worker's) packed matrix, by name.
      if (!packed && b?.constructor?.name === 'PackedMatrix') throw typeError("b: a packed matrix of another favor instance; pack b with this instance's packMatrix");
      const tb = packed ? null : checkTensor(b, 'b');
      const o = checkOptions(options, 'options', OPERATIONS.matmul.options);
      const transposeB = checkBoolean(o.transposeB, 'transposeB');
      if (packed && o.transposeB !== undefined) {
        throw typeError('transposeB: a packed b keeps the layout it was packed with (packMatrix\'s transposeB); omit it here');
      }
      let bias = null;
      const biasOption = o.bias;
      if (biasOption !== undefined) {
        // Read once, as checkTensor reads a tensor: { data, dims } then each dim.
        const t = biasOption === null || typeof biasOption !== 'object' ? null : { data: biasOption.data, dims: biasOption.dims, name: 'bias' };
        if (t === null || !isTypedArray(t.data, Float32Array) || !Array.isArray(t.dims)) {
          throw typeError(`bias: expected a tensor { data: Float32Array, dims: [m] }, got ${describe(biasOption)}`);
        }
        const rank = t.dims.length;
        t.dims = Array.from({ length: rank }, (_, i) => t.dims[i]);
        if (rank !== 1 || lengthOf(t.data) !== t.dims[0]) throw rangeError(`bias: expected dims [m] matching its data, got [${t.dims}] with ${lengthOf(t.data)} values`);
        bias = t;
      }
      const out = checkOut(o.out);  // last, as in every call
      if (packed) {
        matrixHandle(b, 'b');
        // Its handle again once no getter of the caller's can run (one may have disposed it).
        return takeTensor(call('matmul', [ta, bias], (ap, cp) => matrixHandle(b, 'b').matmul(ap, cp, outLength(out))), out);
      }
      return takeTensor(call('matmul', [ta, tb, bias], (ap, bp, cp) =>
        Module.matmul(ap, bp, cp, transposeB, outLength(out))), out);
    },

    kmeans(k, options) {
      const tk = checkTensor(k, 'k');
      const o = checkOptions(options, 'options', OPERATIONS.kmeans.options);
      if (o.clusters === undefined) throw typeError('clusters: required (the codebook size)');
      const clusters = checkInteger(o.clusters, 'clusters', 1, 1 << 24);
      const iterations = o.iterations === undefined ? 25 : checkInteger(o.iterations, 'iterations', 0, 1 << 20);
      const seed = o.seed === undefined ? 0 : checkInteger(o.seed, 'seed', 0);
      return takeTensor(call('kmeans', [tk], (kp) => Module.kmeans(kp, clusters, iterations, seed)));
    },

    randomCodebook(options) {
      const o = checkOptions(options, 'options', OPERATIONS.randomCodebook.options);
      if (o.clusters === undefined || o.dim === undefined) throw typeError('clusters and dim are required');
      const clusters = checkInteger(o.clusters, 'clusters', 1, 1 << 24);
      const dim = checkInteger(o.dim, 'dim', 1, 1 << 20);
      const seed = o.seed === undefined ? 0 : checkInteger(o.seed, 'seed', 0);
      const sigma = o.sigma === undefined ? 1 : checkNumber(o.sigma, 'sigma');
      if (sigma <= 0) throw rangeError(`sigma: expected a number > 0, got ${sigma}`);
      return takeTensor(call('randomCodebook', [], () => Module.randomCodebook(clusters, dim, seed, sigma)));
    },

    codebookFromFeatureMap(featureMap, options) {
      if (!(featureMap instanceof FeatureMap)) {
        throw typeError(`featureMap: expected a FeatureMap from this instance's createFeatureMap, got ${describe(featureMap)}`);
      }
      const o = checkOptions(options, 'options', OPERATIONS.codebookFromFeatureMap.options);
      const w = featureMap.projection;
      const scale = o.scale === undefined ? 1 / Math.sqrt(w.dims[1]) : checkScale(o.scale, 'scale');
      const root = Math.sqrt(scale);
      return { data: w.data.map((x) => x / root), dims: w.dims };
    },

    compare(exact, approx) {
      const e = checkTensor(exact, 'exact'), a = checkTensor(approx, 'approx');
      const { mse, relFrobenius, maxAbs, meanRowKL } = call('compare', [e, a], (ep, ap) =>
        Module.compare(ep, ap));
      return { mse, relFrobenius, maxAbs, meanRowKL };
    },

    outputRelativeError(exact, approx) {
      const e = checkTensor(exact, 'exact'), a = checkTensor(approx, 'approx');
      return call('outputRelativeError', [e, a], (ep, ap) =>
        Module.outputRelativeError(ep, ap)).value;
    },
  };
  for (const op of Object.keys(OPERATIONS)) api[op] = namedCall(op, api[op]);
  return api;
}

